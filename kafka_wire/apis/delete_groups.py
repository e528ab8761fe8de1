"""DeleteGroups (key 42), v0–v2.

Only groups without members may go (NON_EMPTY_GROUP otherwise); their
committed offsets, and so their Event Hubs checkpoints, go with them.
Unknown groups get GROUP_ID_NOT_FOUND.
"""
from __future__ import annotations


from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import group_error

_Response = codec.response_class(codec.ApiKey.DeleteGroups)
_Result = _Response.DeletableGroupResult


@handles(codec.ApiKey.DeleteGroups, 0, 2)
def delete_groups(request, ctx):
    denied = {g: group_error(ctx, g, admin=True) for g in request.groups_names}  # Manage
    deleted = iter(ctx.groups.delete_groups([g for g in request.groups_names if not denied[g]]))
    results = [(g, denied[g]) if denied[g] else next(deleted) for g in request.groups_names]
    return _Response(version=ctx.version, throttle_time_ms=0, results=[
        _Result(group_id=g, error_code=e) for g, e in results])
