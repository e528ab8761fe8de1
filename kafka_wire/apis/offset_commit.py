"""OffsetCommit (key 8), v2–v9.

Committed offsets become Event Hubs checkpoints (sequence number = offset)
in the coordinator's checkpoint store. Generation and member checks are
Kafka's; ``generation_id_or_member_epoch`` is a member epoch for KIP-848
groups. Not emulated: v0–v1 (ZooKeeper-era storage, commit timestamps),
v10 (topic ids), and ``retention_time_ms`` (v2–v4): offsets always follow
the broker's retention, counted from when the group emptied.
"""
from __future__ import annotations


from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import LISTEN, commit_metadata_error, group_error, topic_error

_Response = codec.response_class(codec.ApiKey.OffsetCommit)
_Topic = _Response.OffsetCommitResponseTopic
_Partition = _Topic.OffsetCommitResponsePartition


def _creates_group(ctx, group_id: str | None, generation: int) -> bool:
    """Whether a commit to ``group_id`` would create it (a generation >= 0 for a group
    that is gone is refused instead: GROUP_ID_NOT_FOUND from v9, ILLEGAL_GENERATION before)."""
    groups = ctx.groups
    return (group_id is not None and generation < 0 and groups.classic.get_group(group_id) is None
            and not groups.consumer.has_group(group_id))


@handles(codec.ApiKey.OffsetCommit, 2, 9)
def offset_commit(request, ctx):
    version = ctx.version
    # A commit outside group management makes the group (it holds the offsets), so the
    # namespace's bound on groups applies to it as to a JoinGroup.
    group_denied = group_error(ctx, request.group_id, joining=_creates_group(
        ctx, request.group_id, request.generation_id_or_member_epoch))
    offsets, denied = [], []  # Event Hubs: refused partitions are answered, the rest committed
    for t in request.topics:
        topic_denied = group_denied or topic_error(ctx, LISTEN, t.name)
        for p in t.partitions:
            error = topic_denied or commit_metadata_error(ctx, p.committed_metadata)
            if error:
                denied.append((t.name, p.partition_index, error))
            else:
                offsets.append((t.name, p.partition_index, p.committed_offset,
                                p.committed_leader_epoch if version >= 6 else -1,
                                p.committed_metadata))
    if offsets or not denied:
        results = ctx.groups.commit_offsets(
            request.group_id, request.generation_id_or_member_epoch, request.member_id,
            request.group_instance_id if version >= 7 else None, offsets, api_version=version)
    else:
        results = []
    by_topic: dict[str, list] = {t.name: [] for t in request.topics}
    for topic, partition, error in [*denied, *results]:
        by_topic.setdefault(topic, []).append(
            _Partition(partition_index=partition, error_code=error))
    return _Response(version=version, throttle_time_ms=0, topics=[
        _Topic(name=topic, partitions=parts) for topic, parts in by_topic.items() if parts])
