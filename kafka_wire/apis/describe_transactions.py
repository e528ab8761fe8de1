"""DescribeTransactions (key 65), v0."""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.authorization import transaction_visible
from kafka_wire.apis.registry import handles

_Response = codec.response_class(codec.ApiKey.DescribeTransactions)
_State = _Response.TransactionState
_Topic = _State.TopicData


@handles(codec.ApiKey.DescribeTransactions, 0, 0)
def describe_transactions(request, ctx):
    out = []
    for tid in request.transactional_ids:
        st = ctx.txns.describe(tid)
        if st is None or not transaction_visible(ctx, tid):  # (another hub's: not this key's)
            error = Errors.TransactionalIdNotFoundError if st is None else \
                Errors.TransactionalIdAuthorizationFailedError
            out.append(_State(error_code=error.errno, transactional_id=tid,
                              transaction_state="", transaction_timeout_ms=0, transaction_start_time_ms=-1,
                              producer_id=-1, producer_epoch=-1, topics=[]))
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, part in sorted(st.partitions):
            by_topic.setdefault(topic, []).append(part)
        out.append(_State(error_code=0, transactional_id=tid, transaction_state=st.state,
                          transaction_timeout_ms=st.timeout_ms, transaction_start_time_ms=st.start_ms,
                          producer_id=st.producer_id, producer_epoch=st.producer_epoch,
                          topics=[_Topic(topic=t, partitions=ps) for t, ps in by_topic.items()]))
    return _Response(version=ctx.version, throttle_time_ms=0, transaction_states=out)
