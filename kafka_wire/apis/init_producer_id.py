"""InitProducerId (key 22), v0–v5.

Idempotent producers (no transactional id) get a fresh producer id with epoch
0; v3+ producers that send their current id and epoch get the epoch bumped
(KIP-360), or a new id when the epoch would overflow. Transactional ids are
passed to the transaction coordinator when one is attached; without one they
are refused with COORDINATOR_NOT_AVAILABLE. v6 (two-phase commit) is not served.
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles

_Response = codec.response_class(codec.ApiKey.InitProducerId)
_MAX_EPOCH = 32767


def _response(ctx, error, pid=-1, epoch=-1):
    return _Response(version=ctx.version, throttle_time_ms=0, error_code=error,
                     producer_id=pid, producer_epoch=epoch)


@handles(codec.ApiKey.InitProducerId, 0, 5)
def init_producer_id(request, ctx):
    txns = ctx.services.txns
    if request.transactional_id is not None:
        if txns is None:
            return _response(ctx, Errors.CoordinatorNotAvailableError.errno)
        return txns.init_producer_id(ctx, request)
    ids = ctx.services.extra["producer_ids"]
    pid = request.producer_id if ctx.version >= 3 else -1
    epoch = request.producer_epoch if ctx.version >= 3 else -1
    if pid is not None and pid >= 0 and epoch is not None and 0 <= epoch < _MAX_EPOCH - 1:
        return _response(ctx, 0, pid, epoch + 1)
    return _response(ctx, 0, ids.next_id(), 0)
