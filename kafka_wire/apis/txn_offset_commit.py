"""TxnOffsetCommit (key 28), v0–v5.

The offsets wait in the transaction and become the group's committed offsets
only when it commits (aborted: dropped). v3+ carries the member's generation,
which is checked like an OffsetCommit's. A commit to a group that does not
exist creates it, Empty, as Kafka's coordinator does (it counts towards the
namespace's bound on groups from then on; if the transaction aborts, it goes
with the next offset cleanup, as in Kafka). While they wait, an OffsetFetch with
require_stable gets UNSTABLE_OFFSET_COMMIT for their partitions (apis/offset_fetch).
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


def _creates_group(ctx, group_id: str | None) -> bool:
    groups = ctx.groups
    return (group_id is not None and groups is not None
            and groups.classic.get_group(group_id) is None
            and not groups.consumer.has_group(group_id))


@handles(codec.ApiKey.TxnOffsetCommit, 0, 5)
def txn_offset_commit(request, ctx):
    # A new group is made here, as Kafka's coordinator does, so the namespace's bound on
    # groups applies, and counts it at once: one transaction committing to many new groups
    # cannot pass the bound while the first ones are still pending.
    creates = _creates_group(ctx, request.group_id)
    error = (transactional_error(ctx)
             or group_error(ctx, request.group_id, joining=creates)
             or _generation_error(ctx, request))
    offsets = [(t.name, p.partition_index, p.committed_offset,
                p.committed_leader_epoch if ctx.version >= 2 else -1, p.committed_metadata)
               for t in request.topics for p in t.partitions]
    if not error:
        denied = next((topic_error(ctx, LISTEN, t) for t, *_ in offsets if topic_error(ctx, LISTEN, t)), 0)
        error = denied or ctx.txns.txn_offset_commit(request.transactional_id, request.group_id,
                                                     request.producer_id, request.producer_epoch, offsets)
        if not error and creates:
            ctx.groups.classic.get_or_create_group(request.group_id)  # (Empty, offsets pending)
            # the offset cleanup keeps it while a transaction may still commit to it
            ctx.groups.groups_in_transactions = ctx.txns.groups_in_transactions
    topics = [_Topic(name=t.name, partitions=[_Part(partition_index=p.partition_index, error_code=error)
                                              for p in t.partitions]) for t in request.topics]
    return _Response(version=ctx.version, throttle_time_ms=0, topics=topics)
