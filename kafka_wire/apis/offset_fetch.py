"""OffsetFetch (key 9), v1–v9.

Reads committed offsets (Event Hubs checkpoints) for one group (v1–v7) or
several (v8+); null topics (v2+) mean every committed partition. KIP-848
members may name themselves (v9 member id and epoch): a stale epoch gets
STALE_MEMBER_EPOCH. ``require_stable`` (v7+, KIP-447; librdkafka and Java set
it for read_committed consumers): a partition an open transaction holds an
offset commit for (TxnOffsetCommit, not yet ended) is answered
UNSTABLE_OFFSET_COMMIT with no offset, as Kafka does, and the client asks
again until the transaction ends, so it starts where the transaction's
commit puts it. Not emulated: v0 (ZooKeeper storage) and v10 (topic ids).
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire.coordinator.results import OffsetFetchPartition
from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import LISTEN, group_error, topic_error

_Response = codec.response_class(codec.ApiKey.OffsetFetch)
# v1–v7 and v8+ use different nested structs.
_Topic = _Response.OffsetFetchResponseTopic
_Partition = _Topic.OffsetFetchResponsePartition
_Group = _Response.OffsetFetchResponseGroup
_GroupTopic = _Group.OffsetFetchResponseTopics
_GroupPartition = _GroupTopic.OffsetFetchResponsePartitions

NONE = Errors.NoError.errno
UNSTABLE = Errors.UnstableOffsetCommitError.errno


def _fetch(ctx, group_id, topics, require_stable, member_id=None, member_epoch=None):
    denied = group_error(ctx, group_id)
    if denied:
        return denied, []
    partitions, refused = None, []
    if topics is not None:
        partitions = []
        for t in topics:
            error = topic_error(ctx, LISTEN, t.name)
            if error:  # Event Hubs: a hub this connection may not Listen on
                refused += [OffsetFetchPartition(t.name, p, -1, -1, "", error)
                            for p in t.partition_indexes]
            else:
                partitions += [(t.name, p) for p in t.partition_indexes]
    error, fetched = ctx.groups.fetch_offsets(group_id, partitions, require_stable,
                                              member_id=member_id, member_epoch=member_epoch)
    if error != NONE:
        return error, fetched
    if require_stable:
        pending = _pending_offsets(ctx, group_id)
        if pending:
            fetched = [p._replace(offset=-1, leader_epoch=-1, metadata="", error_code=UNSTABLE)
                       if p.error_code == NONE and (p.topic, p.partition) in pending else p
                       for p in fetched]
    if topics is None:  # every committed partition: only hubs this connection may Listen on
        allowed: dict[str, bool] = {}
        fetched = [p for p in fetched if allowed.setdefault(
            p.topic, not topic_error(ctx, LISTEN, p.topic))]
    return error, refused + fetched


def _pending_offsets(ctx, group_id):
    """The group's partitions an open transaction holds an offset commit for. A namespace
    serving groups without a transaction coordinator (the group handlers' unit tests
    run one so) has none."""
    txns = getattr(ctx.namespace, "txns", None)
    return txns.pending_offsets(group_id) if txns is not None else ()


def _grouped(partitions, topic_cls, partition_cls):
    by_topic: dict[str, list] = {}
    for p in partitions:
        by_topic.setdefault(p.topic, []).append(partition_cls(
            partition_index=p.partition, committed_offset=p.offset,
            committed_leader_epoch=p.leader_epoch, metadata=p.metadata, error_code=p.error_code))
    return [topic_cls(name=name, partitions=parts) for name, parts in by_topic.items()]


@handles(codec.ApiKey.OffsetFetch, 1, 9)
def offset_fetch(request, ctx):
    version = ctx.version
    require_stable = request.require_stable if version >= 7 else False
    if version >= 8:
        groups = []
        for g in request.groups:
            error, partitions = _fetch(ctx, g.group_id, g.topics, require_stable,
                                       g.member_id if version >= 9 else None,
                                       g.member_epoch if version >= 9 else None)
            groups.append(_Group(group_id=g.group_id, error_code=error,
                                 topics=_grouped(partitions, _GroupTopic, _GroupPartition)))
        return _Response(version=version, throttle_time_ms=0, groups=groups)
    topics = request.topics  # null (v2+): every committed partition
    error, partitions = _fetch(ctx, request.group_id, topics, require_stable)
    if error != NONE and version < 2:
        # v1 has no group-level error: every partition carries it.
        partitions = [OffsetFetchPartition(t.name, p, -1, -1, "", error) for t in topics
                      for p in t.partition_indexes]
    return _Response(version=version, throttle_time_ms=0, error_code=error,
                     topics=_grouped(partitions, _Topic, _Partition))
