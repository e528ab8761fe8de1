"""The management API (Azure Resource Manager shape) that ``azure-mgmt-eventhub``
drives, one module per resource: namespaces, event hubs, consumer groups, SAS
authorization rules, IP filter rules, schema groups and application groups,
changed live.

Routes are under ``/subscriptions/{id}/resourceGroups/{group}/providers/
Microsoft.EventHub/namespaces``; any subscription and resource group name is
taken (kafka-wire has neither). Every request needs ``api-version`` and a
bearer token: the subscription's credential for what lies above a namespace
(making, deleting and listing namespaces) once any namespace requires auth
(:mod:`kafka_wire.eventhubs.subscription`), and inside a namespace either that
credential or a token with the Manage right on what it changes, checked by the
namespace's door (a SAS token of a Manage policy, or a JWT where the namespace
has OAuth; an open namespace takes any). As on Azure, the IP filter guards the data
plane, not management. A change takes effect at once for
Kafka, AMQP and HTTPS clients and is kept under the data directory
(:mod:`kafka_wire.eventhubs.managed`), never in the config file. Malformed
input gets ARM's JSON 400, never a 500.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Callable

from kafka_wire.eventhubs.door import AuthorizationHeader, Refused
from kafka_wire.eventhubs.rights import MANAGE
from kafka_wire.rest import arm, refusals
from kafka_wire.rest.http import Request, Response
from kafka_wire.rest.management import (application_groups, authorization_rules, consumer_groups,
                                        disaster_recovery, event_hubs, geo_replication, namespaces,
                                        network_rules, schema_groups)
from kafka_wire.rest.management import common
from kafka_wire.rest.management.common import BadRequest, Scope, TooLarge, no_route, not_allowed
from kafka_wire.rest.schemas import NeedsRegistry

if TYPE_CHECKING:
    from kafka_wire.rest.api import RestApi

__all__ = ["handle"]


def handle(api: RestApi, request: Request) -> Response | NeedsRegistry:
    """The answer, or for a schema group what makes it once the namespace's Schema
    Registry is read (:class:`NeedsRegistry`, which the REST router resolves)."""
    version = request.query.get("api-version")
    if not version:  # (ARM's message names a blank one, ?api-version=, as missing too)
        return arm.fail(400, "MissingApiVersionParameter",
                        "The api-version query parameter (?api-version=) is required for all requests.")
    if version not in arm.API_VERSIONS:
        return arm.fail(400, "InvalidApiVersionParameter",
                        f"The api-version '{version[:40]}' is invalid. The supported versions are "
                        f"'{', '.join(sorted(arm.API_VERSIONS))}'.")
    segs = request.segments
    low = [s.lower() for s in segs]
    # /subscriptions/{id}[/resourceGroups/{group}]/providers/Microsoft.EventHub/namespaces[/...]
    if len(segs) < 2:
        return no_route(request)
    sub, group, at = segs[1], "default", 2
    if len(low) > 3 and low[2] == "resourcegroups":
        group, at = segs[3], 4
    if low[at:at + 3] != ["providers", "microsoft.eventhub", "namespaces"]:
        return no_route(request)
    tail = segs[at + 3:]
    answer = _mapped(lambda: _route(api, request, sub, group, tail))
    if isinstance(answer, NeedsRegistry):  # its errors are mapped when it is answered
        return answer.around(_mapped)
    return answer


def _mapped(answer: Callable[[], Response | NeedsRegistry]) -> Response | NeedsRegistry:
    """``answer()``, its malformed input or refusal as ARM answers it."""
    try:
        return answer()
    except TooLarge as exc:
        return arm.fail(413, "RequestTooLarge", str(exc))
    except BadRequest as exc:
        return arm.fail(400, "BadRequest", str(exc))
    except Refused as exc:
        return _refused(exc)


def _refused(exc: Refused) -> Response:
    return arm.fail(*refusals.arm_error(exc.reason), exc.message)


def _subscription(api: RestApi, request: Request, what: str) -> None:
    subscription = api.services.subscription
    if subscription is not None:
        subscription.sign_in(request.headers.get("authorization", ""), request.peer, what)


def _route(api: RestApi, request: Request, sub: str, group: str,
           tail: list[str]) -> Response | NeedsRegistry:
    method = request.method
    if not tail:
        if method != "GET":
            return not_allowed(request)
        _subscription(api, request, "listing namespaces")
        return namespaces.listing(api, sub, group, request.query.get("api-version"))
    name, tail = tail[0], tail[1:]
    runtime = next((rt for n, rt in api.services.namespaces.items() if n.lower() == name.lower()), None)
    base = arm.namespace_id(sub, group, runtime.name if runtime else name)
    if runtime is None or runtime.model is None:
        if not tail and method == "PUT":
            _subscription(api, request, "creating a namespace")
            return _create(api, request, base, name)
        # Who may not sign in learns nothing, as on Azure: not even which names are served.
        _subscription(api, request, "reading a namespace")
        return arm.fail(404, "ResourceNotFound", f"namespace {name[:64]!r} is not served here")
    if not tail and method == "DELETE":
        _subscription(api, request, "deleting a namespace")
        deleted = namespaces.delete(api, runtime.name)
        if deleted.status < 300:
            disaster_recovery.namespace_deleted(api, runtime.name)
        return deleted
    low = [t.lower() for t in tail]
    hub = tail[1] if len(tail) >= 2 and low[0] == "eventhubs" else None
    scope = Scope(api, request, runtime, base, _manager(api, request, runtime, hub))
    if method == "GET":
        return _inside(api, request, scope, tail, low)
    if low and low[0] in ("eventhubs", "authorizationrules"):
        refused = disaster_recovery.secondary_refusal(scope)
        if refused is not None:
            return refused
    answer = _inside(api, request, scope, tail, low)
    if isinstance(answer, NeedsRegistry):  # (a schema group's change: once it is made)
        return answer.around(lambda made: _changed(scope, low, made()))
    return _changed(scope, low, answer)


def _changed(scope: Scope, low: list[str], answer: Response) -> Response:
    if answer.status < 300 and (not low or low[0] != "disasterrecoveryconfigs"):
        disaster_recovery.after_change(scope)  # a Geo-DR primary's change reaches its secondary
    return answer


def _inside(api: RestApi, request: Request, scope: Scope, tail: list[str],
            low: list[str]) -> Response | NeedsRegistry:
    """A request inside an existing namespace, by the resource it names."""
    if not tail:
        return _namespace(scope)
    if low[0] == "failover" and len(tail) == 1:
        return geo_replication.failover(scope)
    if low[0] in ("operationstatuses", "operationresults"):
        return geo_replication.operation(scope, low[0], tail[1:])
    if low[0] == "authorizationrules":
        return authorization_rules.rules(scope, tail[1:], None)
    if low[0] == "eventhubs":
        if len(tail) == 1:
            return event_hubs.hubs(scope)
        if len(tail) == 2:
            return event_hubs.hub(scope, tail[1])
        if low[2] == "consumergroups":
            return consumer_groups.groups(scope, tail[1], tail[3:])
        if low[2] == "authorizationrules":
            return authorization_rules.rules(scope, tail[3:], tail[1])
    if low[0] == "networkrulesets":
        return network_rules.network_rules(scope, tail[1:])
    if low[0] == "schemagroups":
        return schema_groups.schema_groups(scope, tail[1:])
    if low[0] == "applicationgroups":
        return application_groups.application_groups(scope, tail[1:])
    if low[0] == "disasterrecoveryconfigs":
        return disaster_recovery.configs(scope, tail[1:],
                                         lambda partner: _manager(api, request, partner, None))
    return no_route(request)


def _create(api: RestApi, request: Request, base: str, name: str) -> Response:
    """A new namespace, geo-replicated at once where the body lists replicas."""
    doc = common.body(request)
    want = geo_replication.wanted(doc, request.query.get("api-version"))
    if want is not None:
        sku = common.obj(doc, "sku", "sku")
        tier = common.text(sku, "tier", "sku.tier", 32) or common.text(sku, "name", "sku.name", 32) or "Standard"
        refused = geo_replication.tier_refusal(tier.capitalize(), name)
        if refused is not None:
            return refused
    made = namespaces.create(api, request, base, name)
    if made.status >= 300 or want is None:
        return made
    runtime = next(rt for n, rt in api.services.namespaces.items() if n.lower() == name.lower())
    scope = Scope(api, request, runtime, base, None)
    refused = geo_replication.apply(scope, want)
    return refused or _rendered(scope, made)


def _namespace(scope: Scope) -> Response:
    """GET, PUT or PATCH of a namespace, its geoDataReplication included."""
    version = scope.request.query.get("api-version")
    want = geo_replication.wanted(common.body(scope.request), version) if scope.method in ("PUT", "PATCH") else None
    answer = namespaces.namespace(scope)
    if answer.status >= 300:
        return answer
    if want is not None:
        refused = geo_replication.apply(scope, want)
        if refused is not None:
            return refused
    return _rendered(scope, answer)


def _rendered(scope: Scope, answer: Response) -> Response:
    doc = geo_replication.decorate(json.loads(answer.body), scope.runtime, scope.request.query.get("api-version"))
    return arm.ok(doc, answer.status)


def _manager(api: RestApi, request: Request, runtime, hub: str | None):
    """Who may manage ``hub`` (None: the namespace) in ``runtime``: the subscription's
    owner, or a principal the namespace's door lets in with the Manage right
    (None where the namespace is open). Refused otherwise."""
    header = request.headers.get("authorization", "")
    subscription = api.services.subscription
    if subscription is not None and subscription.holds(header):
        return None
    door = runtime.door
    what = f"management {request.method} {request.path[:200]}"
    if not door.requires_auth:  # an open namespace takes any token, as it takes any key
        return None
    principal = door.sign_in(AuthorizationHeader(header) if header.strip() else None, request.peer, what,
                             data_plane=False)
    door.authorize(principal, MANAGE, hub, "managing it")
    return principal
