"""A hub's Event Hubs consumer groups (``$Default`` always exists and stays)."""
from __future__ import annotations

from kafka_wire.eventhubs.model import DEFAULT_CONSUMER_GROUP
from kafka_wire.eventhubs.names import consumer_group_name_error
from kafka_wire.rest import arm
from kafka_wire.rest.http import Response
from kafka_wire.rest.management.common import (BadRequest, Scope, absent, deleted, named, no_route,
                                               not_allowed)
from kafka_wire.rest.management.event_hubs import configured, saved


def groups(scope: Scope, hub_name: str, tail: list[str]) -> Response:
    view = scope.runtime.topics.hub(hub_name)
    if view is None:
        return scope.missing("event hub", hub_name)
    hub_id = f"{scope.base}/eventhubs/{view.name}"
    entry = scope.runtime.model.hub(view.name)
    names = entry.all_consumer_groups() if entry else [DEFAULT_CONSUMER_GROUP]
    method = scope.method
    if not tail:
        if method != "GET":
            return not_allowed(scope.request)
        return arm.listing([arm.consumer_group(hub_id, g) for g in names])
    if len(tail) != 1:
        return no_route(scope.request)
    name = tail[0]
    found = next((g for g in names if g.lower() == name.lower()), None)
    if method == "GET":
        return arm.ok(arm.consumer_group(hub_id, found)) if found else scope.missing("consumer group", name)
    if name.lower() == DEFAULT_CONSUMER_GROUP.lower():
        if method == "DELETE":
            raise BadRequest("the $Default consumer group cannot be deleted")
        if method == "PUT":
            return arm.ok(arm.consumer_group(hub_id, DEFAULT_CONSUMER_GROUP))
    if method == "PUT":
        if found is None:
            named(consumer_group_name_error(name))
            refusal = scope.runtime.policy.consumer_group_limit(view.name, len(names))
            if refusal is not None:
                return arm.fail(400, "QuotaExceeded", refusal)
            configured(scope, view.name).consumer_groups.append(name)
            found = name
            saved(scope, view.name)
        return arm.ok(arm.consumer_group(hub_id, found))
    if method == "DELETE":
        if found is None:
            return absent()
        entry = configured(scope, view.name)
        entry.consumer_groups = [g for g in entry.consumer_groups if g.lower() != name.lower()]
        saved(scope, view.name)
        return deleted()
    return not_allowed(scope.request)
