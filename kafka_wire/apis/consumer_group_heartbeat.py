"""ConsumerGroupHeartbeat (key 68), v0–v1: the KIP-848 consumer group protocol.

The coordinator computes the assignment; each heartbeat joins (epoch 0),
keeps the member alive, reports the partitions it owns and receives its new
assignment (as topic ids) when it changed. A member leaves with epoch -1
(-2: a static member that will come back). v0 members get an id from the
coordinator; v1 members bring their own (KIP-1082) — an empty id is given
one in either version. Rules and timers are in
:mod:`coordinator.consumer_group_manager`.

``SubscribedTopicRegex`` (v1) is resolved by the coordinator against the
namespace's event hubs (Java's ``subscribe(SubscriptionPattern)``, librdkafka's
``^regex`` subscriptions with ``group.protocol=consumer``); a connection that
may see only some hubs (an EntityPath-scoped connection string) gets only
those. It is compiled with RE2 (Kafka uses RE2J); an invalid regex gets
INVALID_REGULAR_EXPRESSION.

Not emulated: client-side assignors, rack-aware assignment and the online
migration of a classic group that still has members (that gets
GROUP_ID_NOT_FOUND, as a broker without the migration path would).
"""
from __future__ import annotations


from kafka_wire import codec
from kafka_wire.apis.join_group import client_host
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import group_error

_Response = codec.response_class(68)
_Assignment = _Response.Assignment
_TopicPartitions = _Assignment.TopicPartitions

def _error(version: int, code: int, message: str | None):
    return _Response(version=version, throttle_time_ms=0, error_code=code, error_message=message,
                     member_id=None, member_epoch=-1, heartbeat_interval_ms=0, assignment=None)


@handles(68, 0, 1)
def consumer_group_heartbeat(request, ctx):
    version = ctx.version
    denied = group_error(ctx, request.group_id, joining=(request.member_epoch == 0))
    if denied:
        return _error(version, denied, None)
    regex = request.subscribed_topic_regex if version >= 1 else None
    policy = ctx.policy  # Event Hubs authorization: the hubs this principal may see
    principal = ctx.connection.principal
    visible = lambda name: policy.sees(principal, name)  # noqa: E731
    owned = None
    if request.topic_partitions is not None:
        owned = [(tp.topic_id, list(tp.partitions)) for tp in request.topic_partitions]
    result = ctx.groups.consumer_group_heartbeat(
        request.group_id, request.member_id, request.member_epoch,
        instance_id=request.instance_id, rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        # Hubs the principal may not see are left out, as if they did not exist (as
        # Metadata hides them): named explicitly, they were assigned.
        subscribed_topic_names=(None if request.subscribed_topic_names is None
                                else [n for n in request.subscribed_topic_names if visible(n)]),
        server_assignor=request.server_assignor, topic_partitions_owned=owned,
        client_id=ctx.client_id or "", client_host=client_host(ctx.connection.peer),
        subscribed_topic_regex=regex, topic_visible=visible)
    assignment = None
    if result.assignment is not None:
        assignment = _Assignment(topic_partitions=[
            _TopicPartitions(topic_id=topic_id, partitions=list(partitions))
            for topic_id, partitions in result.assignment if topic_id is not None])
    return _Response(version=version, throttle_time_ms=0, error_code=result.error_code,
                     error_message=result.error_message, member_id=result.member_id,
                     member_epoch=result.member_epoch,
                     heartbeat_interval_ms=result.heartbeat_interval_ms, assignment=assignment)
