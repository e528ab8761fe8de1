"""InitProducerId (key 22), v0–v5.

Idempotent producers (no transactional id) get a fresh producer id with epoch
0; v3+ producers that send their current id and epoch get the epoch bumped
(KIP-360), or a new id when the epoch would overflow. Transactional ids are
handled by the namespace's transaction coordinator (an open transaction of
the same id is aborted and the old producer fenced). v6 (two-phase commit) is not served.
Event Hubs: the Send right is needed (else CLUSTER_AUTHORIZATION_FAILED, or
TRANSACTIONAL_ID_AUTHORIZATION_FAILED for a transactional id, also the answer
of a strict namespace whose tier has no transactions).
"""
from __future__ import annotations


from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import SEND, cluster_error, transactional_error

_Response = codec.response_class(codec.ApiKey.InitProducerId)
_MAX_EPOCH = 32767


def _response(ctx, error, pid=-1, epoch=-1):
    return _Response(version=ctx.version, throttle_time_ms=0, error_code=error,
                     producer_id=pid, producer_epoch=epoch)


@handles(codec.ApiKey.InitProducerId, 0, 5)
def init_producer_id(request, ctx):
    txns = ctx.txns
    if request.transactional_id is not None:
        denied = transactional_error(ctx, request.transaction_timeout_ms, request.transactional_id)
        if denied:
            return _response(ctx, denied)
        pid = request.producer_id if ctx.version >= 3 else -1
        epoch = request.producer_epoch if ctx.version >= 3 else -1
        error, pid, epoch = txns.init_producer_id(request.transactional_id, request.transaction_timeout_ms,
                                                  pid if pid is not None else -1,
                                                  epoch if epoch is not None else -1)
        return _response(ctx, error, pid, epoch)
    denied = cluster_error(ctx, SEND)
    if denied:
        return _response(ctx, denied)
    ids = ctx.services.producer_ids
    pid = request.producer_id if ctx.version >= 3 else -1
    epoch = request.producer_epoch if ctx.version >= 3 else -1
    # An id never issued gets a new one, not its epoch bumped: a client would otherwise own
    # the id InitProducerId hands out next (Produce refuses its batches).
    if pid is not None and 0 <= pid < ids.first_unissued and epoch is not None and 0 <= epoch < _MAX_EPOCH - 1:
        return _response(ctx, 0, pid, epoch + 1)
    return _response(ctx, 0, ids.next_id(), 0)
