"""Schema Registry groups of a namespace (the registry's own data plane is
:mod:`kafka_wire.rest.schemas`)."""
from __future__ import annotations

from kafka_wire.eventhubs.names import schema_group_name_error
from kafka_wire.eventhubs.schema_registry import RegistryError, SchemaRegistry
from kafka_wire.rest import arm
from kafka_wire.rest.http import Response
from kafka_wire.rest.management import common
from kafka_wire.rest.management.common import Scope, no_route, not_allowed, obj, props, text
from kafka_wire.rest.schemas import NeedsRegistry


def schema_groups(scope: Scope, tail: list[str]) -> NeedsRegistry:
    """Answered once the namespace's registry is read (the management router's checks
    come first)."""
    return NeedsRegistry(scope.runtime, lambda registry: _schema_groups(scope, tail, registry))


def _schema_groups(scope: Scope, tail: list[str], registry: SchemaRegistry) -> Response:
    method = scope.method
    if not tail:
        if method != "GET":
            return not_allowed(scope.request)
        return arm.listing([arm.schema_group(scope.base, g) for g in registry.groups.values()])
    if len(tail) != 1:
        return no_route(scope.request)
    name = tail[0]
    if method == "GET":
        group = registry.group(name)
        return arm.ok(arm.schema_group(scope.base, group)) if group else scope.missing("schema group", name)
    if method == "DELETE":
        return common.deleted() if registry.delete_group(name) else common.absent()
    if method != "PUT":
        return not_allowed(scope.request)
    p = props(common.body(scope.request))
    if registry.group(name) is None:
        common.named(schema_group_name_error(name))
        most = scope.runtime.policy.bounds.schema_groups_per_namespace
        if len(registry.groups) >= most:
            return arm.fail(400, "QuotaExceeded", f"namespace {scope.runtime.name!r} has {most} schema "
                                                  "groups, as many as this broker allows")
    group_props = obj(p, "groupProperties", "properties.groupProperties")
    if len(group_props) > 64 or any(not isinstance(k, str) or not isinstance(v, str) or len(k) + len(v) > 1024
                                    for k, v in group_props.items()):
        raise common.BadRequest("properties.groupProperties must map at most 64 names to strings")
    try:
        group = registry.put_group(name, text(p, "schemaType", "properties.schemaType", 32) or "Avro",
                                   text(p, "schemaCompatibility", "properties.schemaCompatibility", 32)
                                   or "None", group_props)
    except RegistryError as exc:
        return arm.fail(exc.status, exc.code, str(exc))
    return arm.ok(arm.schema_group(scope.base, group))
