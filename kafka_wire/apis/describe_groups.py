"""DescribeGroups (key 15), v0–v6.

Classic groups: state, protocol, and, for Stable groups, each member's
metadata and assignment (as Kafka, other states show members without
them). A group that does not exist (or is a KIP-848 consumer group) is
reported as state Dead before v6 and as GROUP_ID_NOT_FOUND from v6. There is
no authorizer: asked for authorized operations (v3+), the answer is every
group operation. A hub-scoped key gets GROUP_AUTHORIZATION_FAILED for a group
naming a hub it cannot see (as Kafka for a group the principal may not
Describe): its members' subscriptions and assignments would name that hub.
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import GROUP_DENIED, group_error, group_visible

_Response = codec.response_class(codec.ApiKey.DescribeGroups)
_Group = _Response.DescribedGroup
_Member = _Group.DescribedGroupMember

# READ, DELETE, DESCRIBE: the operations Kafka defines on a GROUP resource.
_GROUP_OPS = frozenset({3, 6, 8})
_NOT_REQUESTED = None  # encodes as INT32_MIN


@handles(codec.ApiKey.DescribeGroups, 0, 6)
def describe_groups(request, ctx):
    version = ctx.version
    ops = set(_GROUP_OPS) if version >= 3 and request.include_authorized_operations \
        else _NOT_REQUESTED
    denied = {g: group_error(ctx, g) or (0 if group_visible(ctx, g) else GROUP_DENIED)
              for g in request.groups}
    described = iter(ctx.groups.describe_groups([g for g in request.groups if not denied[g]]))
    out = []
    for group_id in request.groups:
        if denied[group_id]:
            out.append(_Group(error_code=denied[group_id], error_message=None, group_id=group_id,
                              group_state="", protocol_type="", protocol_data="", members=[],
                              authorized_operations=_NOT_REQUESTED))
            continue
        d = next(described)
        error, message = d.error_code, None
        if error == Errors.GroupIdNotFoundError.errno:
            if version >= 6:
                message = f"Group {d.group_id} not found."
            else:
                error = Errors.NoError.errno  # older clients expect state Dead, no error
        out.append(_Group(
            error_code=error, error_message=message, group_id=d.group_id, group_state=d.state,
            protocol_type=d.protocol_type, protocol_data=d.protocol_name,
            members=[_Member(member_id=m.member_id, group_instance_id=m.group_instance_id,
                             client_id=m.client_id, client_host=m.client_host,
                             member_metadata=m.metadata, member_assignment=m.assignment)
                     for m in d.members],
            authorized_operations=ops))
    return _Response(version=version, throttle_time_ms=0, groups=out)
