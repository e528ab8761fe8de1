"""AddOffsetsToTxn (key 25), v0–v4: a group's offsets join the transaction."""
from __future__ import annotations

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import group_error, transactional_error

_Response = codec.response_class(codec.ApiKey.AddOffsetsToTxn)


@handles(codec.ApiKey.AddOffsetsToTxn, 0, 4)
def add_offsets_to_txn(request, ctx):
    error = transactional_error(ctx, transactional_id=request.transactional_id) or group_error(ctx, request.group_id) or ctx.txns.add_offsets(
        request.transactional_id, request.producer_id, request.producer_epoch, request.group_id)
    return _Response(version=ctx.version, throttle_time_ms=0, error_code=error)
