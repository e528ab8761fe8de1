"""DeleteGroups (key 42), v0–v2.

Only groups without members may go (NON_EMPTY_GROUP otherwise); their
committed offsets, and so their Event Hubs checkpoints, go with them.
Unknown groups get GROUP_ID_NOT_FOUND.
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles

_Response = codec.response_class(codec.ApiKey.DeleteGroups)
_Result = _Response.DeletableGroupResult


@handles(codec.ApiKey.DeleteGroups, 0, 2)
def delete_groups(request, ctx):
    if ctx.groups is None:
        results = [(g, Errors.CoordinatorNotAvailableError.errno) for g in request.groups_names]
    else:
        results = ctx.groups.delete_groups(request.groups_names)
    return _Response(version=ctx.version, throttle_time_ms=0, results=[
        _Result(group_id=g, error_code=e) for g, e in results])
