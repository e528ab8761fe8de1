"""OffsetDelete (key 47), v0.

Removes committed offsets (checkpoints) of a group. Allowed for an Empty
group; for a live consumer-protocol group only for topics no member
subscribes to (GROUP_SUBSCRIBED_TO_TOPIC otherwise); a live group of another
protocol type gets NON_EMPTY_GROUP, an unknown group GROUP_ID_NOT_FOUND.
"""
from __future__ import annotations


from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import group_error

_Response = codec.response_class(codec.ApiKey.OffsetDelete)
_Topic = _Response.OffsetDeleteResponseTopic
_Partition = _Topic.OffsetDeleteResponsePartition


@handles(codec.ApiKey.OffsetDelete, 0, 0)
def offset_delete(request, ctx):
    partitions = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    denied = group_error(ctx, request.group_id, admin=True)  # Event Hubs: Manage
    if denied:
        error, results = denied, []
    else:
        error, results = ctx.groups.delete_offsets(request.group_id, partitions)
    by_topic: dict[str, list] = {}
    for r in results:
        by_topic.setdefault(r.topic, []).append(
            _Partition(partition_index=r.partition, error_code=r.error_code))
    return _Response(version=0, error_code=error, throttle_time_ms=0, topics=[
        _Topic(name=t, partitions=ps) for t, ps in by_topic.items()])
