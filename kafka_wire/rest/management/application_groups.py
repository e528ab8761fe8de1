"""Application groups: clients by SAS policy (or application id), with
throttling policies and a switch (:mod:`kafka_wire.eventhubs.app_groups`)."""
from __future__ import annotations

import logging

from kafka_wire.eventhubs.app_groups import ApplicationGroup, ThrottlingPolicy
from kafka_wire.eventhubs.names import application_group_name_error
from kafka_wire.rest import arm
from kafka_wire.rest.http import Response
from kafka_wire.rest.management import common
from kafka_wire.rest.management.common import (BadRequest, Scope, absent, deleted, flag, no_route,
                                               not_allowed, objects, props, text, whole)

log = logging.getLogger(__name__)


def application_groups(scope: Scope, tail: list[str]) -> Response:
    ns = scope.runtime.model
    groups = ns.application_groups
    method = scope.method
    if not tail:
        if method != "GET":
            return not_allowed(scope.request)
        return arm.listing([arm.application_group(scope.base, g) for g in groups.values()])
    if len(tail) != 1:
        return no_route(scope.request)
    name = tail[0]
    found = next((g for n, g in groups.items() if n.lower() == name.lower()), None)
    if method == "GET":
        return arm.ok(arm.application_group(scope.base, found)) if found else \
            scope.missing("application group", name)
    if method == "DELETE":
        if found is None:
            return absent()
        del groups[found.name]
    elif method == "PUT":
        found = _put(scope, name, found)
        groups[found.name] = found
    else:
        return not_allowed(scope.request)
    scope.runtime.policy.groups.forget(found.name)
    scope.saved("application_group_changed", ns, found.name)
    if scope.api.hubs_changed is not None:  # a disabled group's AMQP links are detached at once
        scope.api.hubs_changed()
    log.info("management API: application group %s of %s %s", found.name, ns.name,
             "deleted" if method == "DELETE" else "set")
    return deleted() if method == "DELETE" else arm.ok(arm.application_group(scope.base, found))


def _put(scope: Scope, name: str, found: ApplicationGroup | None) -> ApplicationGroup:
    if found is None:
        common.named(application_group_name_error(name))
        most = scope.runtime.policy.bounds.application_groups_per_namespace
        if len(scope.runtime.model.application_groups) >= most:
            raise BadRequest(f"namespace {scope.runtime.name!r} has {most} application groups, as many "
                             "as this broker allows")
    p = props(common.body(scope.request))
    policies = []
    for i, d in enumerate(objects(p, "policies", "properties.policies", 32)):
        where = f"properties.policies[{i}]"
        policies.append((text(d, "name", f"{where}.name", 256) or "",
                         text(d, "metricId", f"{where}.metricId", 64) or "",
                         whole(d, "rateLimitThreshold", f"{where}.rateLimitThreshold")))
    enabled = flag(p, "isEnabled", "properties.isEnabled")
    try:
        return ApplicationGroup(found.name if found else name,
                                text(p, "clientAppGroupIdentifier", "properties.clientAppGroupIdentifier",
                                     512) or "",
                                True if enabled is None else enabled,
                                [ThrottlingPolicy(*policy) for policy in policies])
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
