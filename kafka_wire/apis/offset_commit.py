"""OffsetCommit (key 8), v2–v9.

Committed offsets become Event Hubs checkpoints (sequence number = offset)
in the coordinator's checkpoint store. Generation and member checks are
Kafka's; ``generation_id_or_member_epoch`` is a member epoch for KIP-848
groups. Not emulated: v0–v1 (ZooKeeper-era storage, commit timestamps),
v10 (topic ids), and ``retention_time_ms`` (v2–v4): offsets always follow
the broker's retention, counted from when the group emptied.
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles

_Response = codec.response_class(codec.ApiKey.OffsetCommit)
_Topic = _Response.OffsetCommitResponseTopic
_Partition = _Topic.OffsetCommitResponsePartition


@handles(codec.ApiKey.OffsetCommit, 2, 9)
def offset_commit(request, ctx):
    version = ctx.version
    offsets = [(t.name, p.partition_index, p.committed_offset,
                p.committed_leader_epoch if version >= 6 else -1, p.committed_metadata)
               for t in request.topics for p in t.partitions]
    if ctx.groups is None:
        results = [(t, p, Errors.CoordinatorNotAvailableError.errno) for t, p, *_ in offsets]
    else:
        results = ctx.groups.commit_offsets(
            request.group_id, request.generation_id_or_member_epoch, request.member_id,
            request.group_instance_id if version >= 7 else None, offsets)
    by_topic: dict[str, list] = {}
    for topic, partition, error in results:
        by_topic.setdefault(topic, []).append(
            _Partition(partition_index=partition, error_code=error))
    return _Response(version=version, throttle_time_ms=0, topics=[
        _Topic(name=topic, partitions=parts) for topic, parts in by_topic.items()])
