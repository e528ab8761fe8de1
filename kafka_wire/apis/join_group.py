"""JoinGroup (key 11), v0–v9.

Thin: the classic group protocol lives in ``coordinator.GroupCoordinator``;
this handler waits on its future (the long poll of a rebalance). v0 has no
rebalance timeout: the session timeout stands in, as in Kafka. v4+ members
without an id get MEMBER_ID_REQUIRED first (KIP-394); static membership from
v5; ``reason`` (v8) is logged; ``skip_assignment`` (v9) is set for a static
leader that rejoins a Stable group. The client host is reported as Kafka
does (``/`` + address).
"""
from __future__ import annotations


from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import group_error, session_timeout_error

_Response = codec.response_class(codec.ApiKey.JoinGroup)
_Member = _Response.JoinGroupResponseMember


def client_host(peer: str) -> str:
    """``/1.2.3.4`` from ``1.2.3.4:5678`` (Kafka prints InetAddress this way)."""
    host = peer.rsplit(":", 1)[0] if ":" in peer else peer
    return "/" + host.strip("[]")


@handles(codec.ApiKey.JoinGroup, 0, 9)
async def join_group(request, ctx):
    version = ctx.version
    denied = (group_error(ctx, request.group_id, joining=True)
              or session_timeout_error(ctx, request.session_timeout_ms))
    if denied:
        result, error = None, denied
    else:
        result = await ctx.groups.join_group(
            request.group_id, request.member_id,
            request.group_instance_id if version >= 5 else None,
            request.protocol_type, [(p.name, p.metadata) for p in request.protocols],
            request.session_timeout_ms,
            request.rebalance_timeout_ms if version >= 1 else request.session_timeout_ms,
            ctx.client_id or "", client_host(ctx.connection.peer), version,
            request.reason if version >= 8 else None)
        error = result.error_code
    if result is None:
        return _Response(version=version, throttle_time_ms=0, error_code=error, generation_id=-1,
                         protocol_type=None, protocol_name=None if version >= 7 else "",
                         leader="", skip_assignment=False, member_id=request.member_id,
                         members=[])
    protocol_name = result.protocol_name
    if protocol_name is None and version < 7:
        protocol_name = ""  # not nullable before v7
    return _Response(
        version=version, throttle_time_ms=0, error_code=error,
        generation_id=result.generation_id, protocol_type=result.protocol_type,
        protocol_name=protocol_name, leader=result.leader,
        skip_assignment=result.skip_assignment, member_id=result.member_id,
        members=[_Member(member_id=m.member_id, group_instance_id=m.group_instance_id,
                         metadata=m.metadata) for m in result.members])
