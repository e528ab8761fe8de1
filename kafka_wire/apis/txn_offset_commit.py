"""TxnOffsetCommit (key 28), v0–v5.

The offsets wait in the transaction and become the group's committed offsets
only when it commits (aborted: dropped). v3+ carries the member's generation,
checked as Kafka's validateTransactionalOffsetCommit does, so a zombie producer
holding an old member's group metadata is fenced (KIP-447): for a KIP-848 group
by ConsumerGroup.validateOffsetCommit without the version floor, and a member
epoch not the member's is ILLEGAL_GENERATION (never STALE_MEMBER_EPOCH). No
member id, generation -1 and no instance id is a producer that gave no group
metadata: accepted. Not emulated: KIP-1251 (Kafka 4.3) accepting an older epoch
for the partitions the member still holds since that epoch; here the epoch must
be the member's, as in Kafka 4.0–4.2 and as OffsetCommit checks it. A commit with
generation -1 to a group that does not exist creates it, Empty, as Kafka's
coordinator does (it counts towards the namespace's bound on groups from then on;
if the transaction aborts, it goes with the next offset cleanup, as in Kafka); with
a generation >= 0 it is ILLEGAL_GENERATION and creates nothing
(validateTransactionalOffsetCommit). That includes a classic group's member after a
restart: classic members are not kept, so its group is gone (no offsets) or Empty
(UNKNOWN_MEMBER_ID) and the member must rejoin either way. While they wait, an
OffsetFetch with require_stable gets UNSTABLE_OFFSET_COMMIT for their partitions
(apis/offset_fetch).
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import LISTEN, group_error, topic_error, transactional_error

_Response = codec.response_class(codec.ApiKey.TxnOffsetCommit)
_Topic = _Response.TxnOffsetCommitResponseTopic
_Part = _Topic.TxnOffsetCommitResponsePartition


def _generation(ctx, request) -> int:
    """The request's generation (-1: none given; before v3 there is none)."""
    return -1 if ctx.version < 3 or request.generation_id is None else request.generation_id


def _generation_error(ctx, request) -> int:
    if ctx.version < 3 or ctx.groups is None:
        return 0
    generation = _generation(ctx, request)
    member_id = request.member_id or ""
    if generation == -1 and not member_id and request.group_instance_id is None:
        return 0  # no group metadata given (KIP-447 fields are optional): nothing to fence
    consumer = ctx.groups.consumer
    if consumer.has_group(request.group_id):
        error = consumer.validate_offset_commit(request.group_id, member_id, generation)
        # validateTransactionalOffsetCommit answers a producer ILLEGAL_GENERATION instead
        # of STALE_MEMBER_EPOCH, the error its TxnOffsetCommit handling knows.
        return (Errors.IllegalGenerationError.errno if error == Errors.StaleMemberEpochError.errno
                else error or 0)
    group = ctx.groups.classic.get_group(request.group_id)
    if group is None:
        if generation < 0:
            return 0  # a simple group, made for the commit (Empty, offsets pending)
        # A KIP-848 group that went with its last member: Kafka keeps it, Empty, and its
        # ConsumerGroup does not know the member (as apis/offset_commit answers).
        if consumer.was_dropped(request.group_id):
            return Errors.UnknownMemberIdError.errno
        return Errors.IllegalGenerationError.errno  # a generation of no group there is
    return ctx.groups.classic.validate_txn_offset_commit(group, generation, member_id,
                                                         request.group_instance_id) or 0


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
    creates = _creates_group(ctx, request.group_id) and _generation(ctx, request) < 0
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
