"""LeaveGroup (key 13), v0–v5.

v0–v2 name one member and get one error code (the first member error, as
Kafka answers); v3+ leave in batches, and a member named by group instance
id alone (empty member id) is removed administratively (KIP-345). The
``reason`` (v5) is not kept.
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import group_error

_Response = codec.response_class(codec.ApiKey.LeaveGroup)
_Member = _Response.MemberResponse

NONE = Errors.NoError.errno


@handles(codec.ApiKey.LeaveGroup, 0, 5)
def leave_group(request, ctx):
    version = ctx.version
    if version >= 3:
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        leaving = [(request.member_id, None)]
    denied = group_error(ctx, request.group_id)
    if denied:
        error, members = denied, []
    else:
        error, members = ctx.groups.leave_group(request.group_id, leaving)
    if version < 3:
        if error == NONE:
            error = next((m.error_code for m in members if m.error_code != NONE), NONE)
        return _Response(version=version, throttle_time_ms=0, error_code=error, members=[])
    return _Response(version=version, throttle_time_ms=0, error_code=error, members=[
        _Member(member_id=m.member_id, group_instance_id=m.group_instance_id,
                error_code=m.error_code) for m in members])
