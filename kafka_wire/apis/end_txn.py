"""EndTxn (key 26), v0–v4: commit or abort; markers are written before the answer.

v5 (KIP-890 transactions v2, epoch bump per transaction) is not served, so
clients stay on transactions v1.
"""
from __future__ import annotations

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import transactional_error

_Response = codec.response_class(codec.ApiKey.EndTxn)


@handles(codec.ApiKey.EndTxn, 0, 4)
def end_txn(request, ctx):
    error = transactional_error(ctx, transactional_id=request.transactional_id) or ctx.txns.end_txn(
        request.transactional_id, request.producer_id, request.producer_epoch,
        bool(request.committed))
    return _Response(version=ctx.version, throttle_time_ms=0, error_code=error)
