"""ListTransactions (key 66), v0–v2: state, producer id, duration (v1) and
transactional-id pattern (v2, a Java regular expression; Python's re is used)."""
from __future__ import annotations

import re

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import SEND, check

_Response = codec.response_class(codec.ApiKey.ListTransactions)
_State = _Response.TransactionState
_KNOWN = {"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
          "Dead", "PrepareEpochFence"}


@handles(codec.ApiKey.ListTransactions, 0, 2)
def list_transactions(request, ctx):
    states = list(request.state_filters or [])
    unknown = [s for s in states if s not in _KNOWN]
    duration = request.duration_filter if ctx.version >= 1 and request.duration_filter is not None else -1
    found = ctx.txns.list(states, request.producer_id_filters or [], duration)
    pattern = request.transactional_id_pattern if ctx.version >= 2 else None
    if pattern:
        try:
            rx = re.compile(pattern)
        except re.error:
            from kafka.errors import InvalidRequestError
            return _Response(version=ctx.version, throttle_time_ms=0, error_code=InvalidRequestError.errno,
                             unknown_state_filters=[], transaction_states=[])
        found = [st for st in found if rx.fullmatch(st.transactional_id)]
    visible = [st for st in found if check(ctx, SEND)]
    return _Response(version=ctx.version, throttle_time_ms=0, error_code=0, unknown_state_filters=unknown,
                     transaction_states=[_State(transactional_id=st.transactional_id,
                                                producer_id=st.producer_id, transaction_state=st.state)
                                         for st in visible])
