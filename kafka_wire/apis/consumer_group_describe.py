"""ConsumerGroupDescribe (key 69), v0–v1: KIP-848 consumer groups.

Each group's state (Empty, Assigning, Reconciling, Stable), group and
assignment epochs, assignor, and per member its epoch, subscription, current
and target assignment (topic ids and names). v1 reports every member as
MemberType 1 (a consumer-protocol member). A classic group, or no group,
gets GROUP_ID_NOT_FOUND (as Kafka: "not a consumer group"); an empty id
gets INVALID_GROUP_ID.

Not emulated: an authorizer — asked for authorized operations, the answer
is every group operation (READ, DELETE, DESCRIBE); subscribed regular
expressions are always null; members that joined with the classic protocol
(MemberType 0) cannot exist, since live classic groups are not migrated.
A hub-scoped key gets GROUP_AUTHORIZATION_FAILED for a group naming a hub it
cannot see (see apis/authorization.group_visible).
"""
from __future__ import annotations

import uuid

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import GROUP_DENIED, group_error, group_visible

_Response = codec.response_class(69)
_Group = _Response.DescribedGroup
_Member = _Group.Member
_Assignment = _Member.Assignment
_TopicPartitions = _Assignment.TopicPartitions

# READ (3), DELETE (6), DESCRIBE (8): the operations Kafka defines on a GROUP.
GROUP_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)
NOT_REQUESTED = -2147483648
CONSUMER_MEMBER = 1
_ZERO_UUID = uuid.UUID(int=0)


def _assignment(parts) -> object:
    return _Assignment(topic_partitions=[
        _TopicPartitions(topic_id=topic_id or _ZERO_UUID, topic_name=name,
                         partitions=list(partitions))
        for topic_id, name, partitions in parts])


def _empty_group(group_id: str, error: int, message: str | None, ops: int):
    return _Group(error_code=error, error_message=message, group_id=group_id, group_state="",
                  group_epoch=-1, assignment_epoch=-1, assignor_name="", members=[],
                  authorized_operations=ops)


@handles(69, 0, 1)
def consumer_group_describe(request, ctx):
    version = ctx.version
    ops = GROUP_OPERATIONS if request.include_authorized_operations else NOT_REQUESTED
    groups = []
    for group_id in request.group_ids:
        if not group_id:
            groups.append(_empty_group(group_id, Errors.InvalidGroupIdError.errno,
                                       "The group id can't be empty.", ops))
            continue
        denied = group_error(ctx, group_id) or (0 if group_visible(ctx, group_id) else GROUP_DENIED)
        if denied:
            groups.append(_empty_group(group_id, denied, None, NOT_REQUESTED))
            continue
        d = ctx.groups.describe_consumer_groups([group_id])[0]
        if d.error_code != Errors.NoError.errno:
            message = d.error_message
            if ctx.groups.classic.get_group(group_id) is not None:
                message = f"Group {group_id} is not a consumer group."
            groups.append(_empty_group(group_id, d.error_code, message, ops))
            continue
        groups.append(_Group(
            error_code=0, error_message=None, group_id=d.group_id, group_state=d.state,
            group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch,
            assignor_name=d.assignor_name, authorized_operations=ops,
            members=[_Member(member_id=m.member_id, instance_id=m.instance_id,
                             rack_id=m.rack_id, member_epoch=m.member_epoch,
                             client_id=m.client_id, client_host=m.client_host,
                             subscribed_topic_names=list(m.subscribed_topic_names),
                             subscribed_topic_regex=m.subscribed_topic_regex,
                             assignment=_assignment(m.assignment),
                             target_assignment=_assignment(m.target_assignment),
                             member_type=CONSUMER_MEMBER)
                     for m in d.members]))
    return _Response(version=version, throttle_time_ms=0, groups=groups)
