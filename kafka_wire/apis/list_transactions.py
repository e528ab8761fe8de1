"""ListTransactions (key 66), v0–v2: state, producer id, duration (v1) and
transactional-id pattern (v2, KIP-1152).

Kafka compiles the pattern with RE2J and matches whole ids; here it is RE2
(google-re2), as for KIP-848's topic regex: linear time, so no client pattern
such as ``(a+)+`` can stall the event loop by backtracking. A pattern RE2
refuses (bad syntax, over its memory cap, or longer than
PATTERN_MAX_CHARS) is answered INVALID_REGULAR_EXPRESSION, as Kafka does."""
from __future__ import annotations

from functools import lru_cache

import re2

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import SEND, check, transaction_visible
from kafka_wire.coordinator.consumer_group_manager import INVALID_REGULAR_EXPRESSION

_Response = codec.response_class(codec.ApiKey.ListTransactions)
_State = _Response.TransactionState
_KNOWN = {"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
          "Dead", "PrepareEpochFence"}
PATTERN_MAX_CHARS = 1024  # an operator's filter; longer is refused before RE2 compiles it
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a client's bad pattern is answered, not written to stderr
_RE2_OPTIONS.max_mem = 1 << 20   # compiled program and DFA cache per pattern (RE2's default: 8 MiB)


@lru_cache(maxsize=64)  # (admin tools repeat one pattern; a refused one is not cached)
def _compile(pattern: str):
    return re2.compile(pattern, _RE2_OPTIONS)


@handles(codec.ApiKey.ListTransactions, 0, 2)
def list_transactions(request, ctx):
    states = list(request.state_filters or [])
    unknown = [s for s in states if s not in _KNOWN]
    duration = request.duration_filter if ctx.version >= 1 and request.duration_filter is not None else -1
    found = ctx.txns.list(states, request.producer_id_filters or [], duration)
    pattern = request.transactional_id_pattern if ctx.version >= 2 else None
    if pattern:
        try:
            if len(pattern) > PATTERN_MAX_CHARS:
                raise re2.error("pattern too long")
            rx = _compile(pattern)
        except re2.error:
            return _Response(version=ctx.version, throttle_time_ms=0,
                             error_code=INVALID_REGULAR_EXPRESSION,
                             unknown_state_filters=[], transaction_states=[])
        found = [st for st in found if rx.fullmatch(st.transactional_id)]
    visible = [st for st in found if check(ctx, SEND) and transaction_visible(ctx, st.transactional_id)]
    return _Response(version=ctx.version, throttle_time_ms=0, error_code=0, unknown_state_filters=unknown,
                     transaction_states=[_State(transactional_id=st.transactional_id,
                                                producer_id=st.producer_id, transaction_state=st.state)
                                         for st in visible])
