"""TxnOffsetCommit (key 28), v0–v5.

The offsets wait in the transaction and become the group's committed offsets
only when it commits (aborted: dropped). v3+ carries the member's generation,
which is checked like an OffsetCommit's. Not emulated: OffsetFetch with
require_stable waiting for pending transactional offsets.
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import LISTEN, group_error, topic_error, transactional_error

_Response = codec.response_class(codec.ApiKey.TxnOffsetCommit)
_Topic = _Response.TxnOffsetCommitResponseTopic
_Part = _Topic.TxnOffsetCommitResponsePartition


def _generation_error(ctx, request) -> int:
    if ctx.version < 3 or request.generation_id is None or request.generation_id < 0:
        return 0
    group = ctx.groups.classic.get_group(request.group_id) if ctx.groups is not None else None
    if group is None:
        return 0
    if request.member_id and not group.has(request.member_id):
        return Errors.UnknownMemberIdError.errno
    if request.generation_id != group.generation_id:
        return Errors.IllegalGenerationError.errno
    return 0


@handles(codec.ApiKey.TxnOffsetCommit, 0, 5)
def txn_offset_commit(request, ctx):
    error = (transactional_error(ctx) or group_error(ctx, request.group_id)
             or _generation_error(ctx, request))
    offsets = [(t.name, p.partition_index, p.committed_offset,
                p.committed_leader_epoch if ctx.version >= 2 else -1, p.committed_metadata)
               for t in request.topics for p in t.partitions]
    if not error:
        denied = next((topic_error(ctx, LISTEN, t) for t, *_ in offsets if topic_error(ctx, LISTEN, t)), 0)
        error = denied or ctx.txns.txn_offset_commit(request.transactional_id, request.group_id,
                                                     request.producer_id, request.producer_epoch, offsets)
    topics = [_Topic(name=t.name, partitions=[_Part(partition_index=p.partition_index, error_code=error)
                                              for p in t.partitions]) for t in request.topics]
    return _Response(version=ctx.version, throttle_time_ms=0, topics=topics)
