"""SyncGroup (key 14), v0–v5.

Thin: followers wait (a long poll on the coordinator's future) until the
leader sends the assignment. Static membership from v3; the protocol type
and name the client believes in are checked from v5 (INCONSISTENT_GROUP_PROTOCOL
if they differ) and returned from v5.
"""
from __future__ import annotations


from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import group_error

_Response = codec.response_class(codec.ApiKey.SyncGroup)


@handles(codec.ApiKey.SyncGroup, 0, 5)
async def sync_group(request, ctx):
    version = ctx.version
    error = group_error(ctx, request.group_id)
    if error:
        return _Response(version=version, throttle_time_ms=0, error_code=error,
                         protocol_type=None, protocol_name=None, assignment=b"")
    result = await ctx.groups.sync_group(
        request.group_id, request.generation_id, request.member_id,
        request.group_instance_id if version >= 3 else None,
        request.protocol_type if version >= 5 else None,
        request.protocol_name if version >= 5 else None,
        [(a.member_id, a.assignment) for a in request.assignments])
    return _Response(version=version, throttle_time_ms=0, error_code=result.error_code,
                     protocol_type=result.protocol_type, protocol_name=result.protocol_name,
                     assignment=result.assignment)
