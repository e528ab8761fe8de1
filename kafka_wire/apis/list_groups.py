"""ListGroups (key 16), v0–v5.

Every group this coordinator knows: classic groups and KIP-848 consumer
groups. States filter (v4+) and types filter (v5+, ``classic`` /
``consumer``) compare case-insensitively, as Kafka does. An Empty group
with no committed offsets is removed at once, so it drops out of listings
(Event Hubs shows the same). A hub-scoped key is shown only the groups it
may describe: those naming no hub it cannot see (as Kafka lists only groups
the principal may Describe).
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import group_allowed, group_visible

_Response = codec.response_class(codec.ApiKey.ListGroups)
_Group = _Response.ListedGroup


@handles(codec.ApiKey.ListGroups, 0, 5)
def list_groups(request, ctx):
    version = ctx.version
    if not group_allowed(ctx, None):  # Event Hubs: listing groups needs Listen
        return _Response(version=version, throttle_time_ms=0, error_code=Errors.NoError.errno,
                         groups=[])
    listed = ctx.groups.list_groups(request.states_filter if version >= 4 else None,
                                    request.types_filter if version >= 5 else None)
    return _Response(version=version, throttle_time_ms=0, error_code=Errors.NoError.errno,
                     groups=[_Group(group_id=g.group_id, protocol_type=g.protocol_type,
                                    group_state=g.state, group_type=g.group_type)
                             for g in listed if group_visible(ctx, g.group_id)])
