"""Geo-replication in the management API, as ``azure-mgmt-eventhub`` 12 (api-version
2026-01-01, and 2024-05-01-preview and later) carries it: namespace
``properties.geoDataReplication`` {``maxReplicationLagDurationInSeconds``,
``locations``: [{``locationName``, ``roleType`` Primary/Secondary,
``replicaState``, ``clusterArmId``}]} and the long-running ``POST
.../namespaces/{ns}/failover`` {``properties``: {``primaryLocation``, ``force``}}.

A PUT or PATCH that lists locations makes the namespace's replicas those
locations (adding and removing secondaries) and sets the lag limit; the primary
is changed only by the failover action. The runtime side is ``runtime.geo``
(:mod:`kafka_wire.replication`); the rules (Premium and Dedicated only; region
names; 0 or 300..86400 s) are :mod:`kafka_wire.eventhubs.geo`'s.

The failover answers 202 with ``Azure-AsyncOperation`` and ``Location`` headers,
as ARM answers a long-running POST; the SDK's poller reads
``.../operationStatuses/{id}`` until ``Succeeded`` or ``Failed`` and then the
result at ``.../operationResults/{id}``.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import dataclass, field
from urllib.parse import quote

from kafka_wire.eventhubs.geo import (MAX_REPLICAS, GeoSettings, location_error, max_lag_error,
                                      normalize_location, tier_error)
from kafka_wire.eventhubs.refusals import Refused
from kafka_wire.rest import arm
from kafka_wire.rest.http import Response
from kafka_wire.rest.management import common
from kafka_wire.rest.management.common import BadRequest, Scope, flag, no_route, not_allowed, obj, props, text

log = logging.getLogger(__name__)

# The api-versions whose namespace carries geoDataReplication and whose namespaces have the
# failover action (Azure/bicep-types-az's generated types: first in 2024-05-01-preview; not in
# 2024-01-01). Older ones neither show nor take it, as ARM drops properties a version lacks.
GEO_VERSIONS = frozenset({"2024-05-01-preview", "2025-05-01-preview", "2026-01-01"})
MOST_OPERATIONS = 256  # finished failovers remembered for their pollers
RETRY_AFTER_S = 1
# What RFC 3986 lets stand unencoded in a host (with its port, or an IPv6 literal) and in a
# path segment; quote() keeps letters, digits and "-._~" too.
_HOST_SAFE = "!$&'()*+,;=:[]"
_SEGMENT_SAFE = "!$&'()*+,;=:@"


@dataclass(slots=True)
class Operation:
    id: str
    namespace: str
    location: str
    forced: bool
    status: str = "InProgress"  # InProgress | Succeeded | Failed
    error: dict | None = None
    result: dict = field(default_factory=dict)


_operations: dict[str, Operation] = {}


# -- the namespace's geoDataReplication -------------------------------------------------------
def view(runtime) -> dict | None:
    """``properties.geoDataReplication`` of a geo-replicated namespace (None otherwise)."""
    geo = getattr(runtime, "geo", None)
    if geo is None:
        return None
    return {"maxReplicationLagDurationInSeconds": geo.max_lag_seconds,
            "locations": [{"locationName": r.location, "roleType": r.role, "replicaState": r.state,
                           "clusterArmId": ""} for r in geo.replicas]}


def served(version: str | None) -> bool:
    return version in GEO_VERSIONS


def decorate(doc: dict, runtime, version: str | None) -> dict:
    """A namespace's ARM JSON with its replicas, and the primary's region as its location."""
    geo = view(runtime)
    if geo is not None and served(version):
        doc["properties"]["geoDataReplication"] = geo
        doc["location"] = runtime.geo.primary_location
    return doc


@dataclass(slots=True)
class Wanted:
    primary: str
    secondaries: list[str]
    max_lag: int | None


def wanted(doc: dict, version: str | None) -> Wanted | None:
    """The body's ``properties.geoDataReplication`` checked (None: not given, or an
    api-version without it)."""
    if not served(version):
        return None
    g = obj(props(doc), "geoDataReplication", "properties.geoDataReplication")
    if not g:
        return None
    lag = g.get("maxReplicationLagDurationInSeconds")
    if lag is not None:
        problem = max_lag_error(lag)
        if problem:
            raise BadRequest(problem)
    primary, secondaries = None, []
    for i, entry in enumerate(common.objects(g, "locations", "properties.geoDataReplication.locations",
                                             MAX_REPLICAS)):
        where = f"properties.geoDataReplication.locations[{i}]"
        name = normalize_location(text(entry, "locationName", f"{where}.locationName", 80))
        problem = location_error(name)
        if problem:
            raise BadRequest(f"{where}: {problem}")
        role = (text(entry, "roleType", f"{where}.roleType", 16) or "Secondary").lower()
        if role not in ("primary", "secondary"):
            raise BadRequest(f"{where}.roleType must be Primary or Secondary")
        text(entry, "clusterArmId", f"{where}.clusterArmId", 1024)  # one cluster here: checked, not used
        if name == primary or name in secondaries:
            raise BadRequest(f"{where}: location {name!r} is listed twice")
        if role == "primary":
            if primary is not None:
                raise BadRequest("properties.geoDataReplication.locations lists two Primary locations")
            primary = name
        else:
            secondaries.append(name)
    if primary is None:
        raise BadRequest("properties.geoDataReplication.locations must list one location with roleType "
                         "Primary")
    return Wanted(primary, secondaries, lag)


def tier_refusal(tier: str, namespace: str) -> Response | None:
    problem = tier_error(tier, namespace)
    return None if problem is None else arm.fail(400, "BadRequest", problem)


def apply(scope: Scope, want: Wanted) -> Response | None:
    """Make the namespace's replicas ``want``'s; an ARM error where the service refuses."""
    runtime = scope.runtime
    refused = tier_refusal(runtime.model.tier.value, runtime.name)
    if refused is not None:
        return refused
    geo = getattr(runtime, "geo", None)
    if geo is None:
        if not want.secondaries:
            return None  # one replica is a namespace without geo-replication
        _enable(scope, GeoSettings(want.primary, [want.primary, *want.secondaries], want.max_lag or 0))
        return None
    if want.primary != geo.primary_location:
        return arm.fail(400, "BadRequest", f"the primary of namespace {runtime.name!r} is "
                                           f"{geo.primary_location}, not {want.primary}: change it with "
                                           "the failover action")
    have = [r.location for r in geo.replicas if r.role != "Primary"]
    for loc in have:
        if loc not in want.secondaries:
            geo.remove_replica(loc)
    for loc in want.secondaries:
        if loc not in have:
            geo.add_replica(loc)
    if want.max_lag is not None and want.max_lag != geo.max_lag_seconds:
        geo.set_max_lag(want.max_lag)
    return None


def _enable(scope: Scope, settings: GeoSettings) -> None:
    """Geo-replication for a namespace that had none (the broker's ``enable_geo``)."""
    enable = scope.api.enable_geo
    if enable is None:
        raise BadRequest("this server cannot geo-replicate a namespace at runtime")
    enable(scope.runtime, settings)
    log.info("management API: namespace %s geo-replicated in %s (primary %s), max lag %d s",
             scope.runtime.name, ", ".join(settings.locations), settings.primary, settings.max_lag_seconds)


# -- the failover action ----------------------------------------------------------------------
def failover(scope: Scope) -> Response:
    version = scope.request.query.get("api-version")
    if not served(version):
        return arm.fail(400, "NoRegisteredProviderFound", f"api-version {version!r} has no namespace failover "
                                                          f"action: use {', '.join(sorted(GEO_VERSIONS))}")
    if scope.method != "POST":
        return not_allowed(scope.request)
    runtime = scope.runtime
    p = props(common.body(scope.request))
    location = normalize_location(text(p, "primaryLocation", "properties.primaryLocation", 80))
    force = bool(flag(p, "force", "properties.force"))
    if location is None:
        raise BadRequest("properties.primaryLocation (the replica to promote) is required")
    problem = location_error(location)
    if problem:
        raise BadRequest(problem)
    refused = tier_refusal(runtime.model.tier.value, runtime.name)
    if refused is not None:
        return refused
    geo = getattr(runtime, "geo", None)
    if geo is None:
        return arm.fail(400, "BadRequest", f"namespace {runtime.name!r} has no geo-replication: add a "
                                           "secondary location in properties.geoDataReplication first")
    locations = [r.location for r in geo.replicas]
    if location not in locations:
        return arm.fail(400, "BadRequest", f"{location} is not a replica location of namespace "
                                           f"{runtime.name!r} (its locations: {', '.join(locations)})")
    if location == geo.primary_location:
        return arm.fail(400, "BadRequest", f"{location} is already the primary of namespace {runtime.name!r}")
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return arm.fail(503, "ServiceUnavailable", "the failover cannot start outside the broker's loop")
    op = Operation(uuid.uuid4().hex, runtime.name, location, force)
    _remember(op)
    loop.create_task(_promote(geo, op))
    base = _url(scope)
    version = quote(scope.request.query.get("api-version") or "", safe="")
    headers = {"Azure-AsyncOperation": f"{base}/operationStatuses/{op.id}?api-version={version}",
               "Location": f"{base}/operationResults/{op.id}?api-version={version}",
               "Retry-After": str(RETRY_AFTER_S)}
    log.info("management API: %s failover of namespace %s to %s started (operation %s)",
             "forced" if force else "planned", runtime.name, location, op.id)
    return Response(202, b"", arm.JSON, headers)


def _url(scope: Scope) -> str:
    """The namespace's URL as the client reached it (its Host), each part percent-encoded:
    the path was decoded and the Host is the client's, and both go into headers."""
    host = quote(scope.request.headers.get("host") or "localhost", safe=_HOST_SAFE)
    path = "/".join(quote(segment, safe=_SEGMENT_SAFE) for segment in scope.base.split("/"))
    return f"{scope.request.scheme}://{host}{path}"


async def _promote(geo, op: Operation) -> None:
    try:
        result = await geo.promote(op.location, forced=op.forced)
    except Refused as exc:
        op.status, op.error = "Failed", {"code": arm_code(exc), "message": str(exc)}
    except Exception as exc:  # the poller must hear of any failure, not poll forever
        log.exception("failover of namespace %s to %s failed", op.namespace, op.location)
        op.status, op.error = "Failed", {"code": "InternalServerError", "message": str(exc)[:300]}
    else:
        op.status = "Succeeded"
        op.result = {"lostEvents": result.lost_events, "segment": result.segment,
                     "previousPrimaryLocation": result.previous, "waitedMs": result.waited_ms}


def arm_code(exc: Refused) -> str:
    from kafka_wire.rest import refusals

    return refusals.arm_error(exc.reason)[1]


def _remember(op: Operation) -> None:
    _operations[op.id] = op
    while len(_operations) > MOST_OPERATIONS:
        oldest = next(iter(_operations))
        if _operations[oldest].status == "InProgress":
            break
        del _operations[oldest]


def operation(scope: Scope, kind: str, tail: list[str]) -> Response:
    """GET ``operationStatuses/{id}`` (the poller's) or ``operationResults/{id}`` (the result)."""
    if len(tail) != 1:
        return no_route(scope.request)
    if scope.method != "GET":
        return not_allowed(scope.request)
    op = _operations.get(tail[0])
    if op is None or op.namespace.lower() != scope.runtime.name.lower():
        return arm.fail(404, "NotFound", f"operation {tail[0][:64]!r} is not known for namespace "
                                         f"{scope.runtime.name!r}")
    if kind == "operationstatuses":
        doc = {"id": f"{scope.base}/operationStatuses/{op.id}", "name": op.id, "status": op.status,
               "properties": {"primaryLocation": op.location, "force": op.forced, **op.result}}
        if op.error is not None:
            doc["error"] = op.error
        return arm.ok(doc)
    if op.status == "InProgress":
        return Response(202, b"", arm.JSON, {"Retry-After": str(RETRY_AFTER_S)})
    if op.status == "Failed":
        return arm.fail(400, op.error["code"], op.error["message"])
    return arm.ok({"properties": {"primaryLocation": op.location, "force": op.forced, **op.result}})
