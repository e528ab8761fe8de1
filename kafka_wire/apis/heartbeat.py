"""Heartbeat (key 12), v0–v4.

Keeps a classic group member's session alive; REBALANCE_IN_PROGRESS tells
it to rejoin. Static membership (FENCED_INSTANCE_ID) from v3.
"""
from __future__ import annotations


from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import group_error

_Response = codec.response_class(codec.ApiKey.Heartbeat)


@handles(codec.ApiKey.Heartbeat, 0, 4)
def heartbeat(request, ctx):
    error = group_error(ctx, request.group_id)
    if not error:
        error = ctx.groups.heartbeat(request.group_id, request.generation_id, request.member_id,
                                     request.group_instance_id if ctx.version >= 3 else None)
    return _Response(version=ctx.version, throttle_time_ms=0, error_code=error)
