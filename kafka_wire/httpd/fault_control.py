"""The fault control API at ``/$faults`` on the broker's HTTP listener: tests in
any language set faults in a broker they did not start (see docs/faults.md).

    GET    /$faults        the faults set, those fired, the kinds and scopes
    POST   /$faults        set one (JSON: kind, scope, params, count, probability,
                           seed, after_ms, for_ms): 201 with it and its id
    DELETE /$faults        clear them all (and the record of those fired)
    DELETE /$faults/ID     clear one

It needs the subscription's credential (``Authorization: Bearer <key>``, the
key ``kafka-wire token --management`` prints) under the subscription's rules:
while no namespace requires authentication (``make run``) the management plane,
this API included, is open. ``$`` cannot begin an event hub's name, so the path
meets no hub; errors are ARM-style JSON (``{"error": {"code", "message"}}``).
"""
from __future__ import annotations

import json
import logging

from kafka_wire.eventhubs.door import AuthorizationHeader, Refused
from kafka_wire.fault_plan import FaultError
from kafka_wire.rest import arm
from kafka_wire.rest.api import authenticate_request
from kafka_wire.rest.http import Later, Request, Response, error
from kafka_wire.whole_numbers import whole_number

log = logging.getLogger(__name__)

PATH = "$faults"
MAX_BODY = 64 * 1024


def handles(path: str) -> bool:
    return path.lstrip("/").split("/", 1)[0].lower() == PATH


def handle(services, request: Request) -> Response:
    subscription = services.subscription
    try:
        if subscription is not None:
            subscription.sign_in(request.headers.get("authorization", ""), request.peer,
                                 f"fault control {request.method} {request.path}")
    except Refused as exc:
        return arm.fail(401, "AuthenticationFailed", exc.message)
    faults = services.faults
    if faults is None:
        return arm.fail(404, "NotFound", "this broker has no fault hooks")
    plan = faults.plan
    segs = [s for s in request.path.strip("/").split("/")[1:] if s]
    method = request.method
    if len(segs) > 1:
        return arm.fail(404, "NotFound", "no fault API there: use /$faults or /$faults/ID")
    if method in ("GET", "HEAD"):
        if segs:
            found = [f for f in plan.faults if str(f.id) == segs[0]]
            if not found:
                return arm.fail(404, "NotFound", f"no fault {segs[0][:40]!r} is set")
            return arm.ok(found[0].to_json())
        return arm.ok(plan.to_json())
    if method == "DELETE":
        if not segs:
            faults.clear()
            return Response(204, b"", "application/json")
        number = whole_number(segs[0])
        if number is None or not faults.remove(number):
            return arm.fail(404, "NotFound", f"no fault {segs[0][:40]!r} is set: list them with "
                                             "GET /$faults")
        return Response(204, b"", "application/json")
    if method == "POST":
        if segs:
            return arm.fail(405, "MethodNotAllowed", "POST a new fault to /$faults")
        if len(request.body) > MAX_BODY:
            return arm.fail(413, "RequestTooLarge", f"a fault's JSON is at most {MAX_BODY} bytes")
        try:
            spec = json.loads(request.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return arm.fail(400, "BadRequest", "the body is not JSON: send a fault such as "
                                               '{"kind": "server-busy", "scope": {"hub": "orders"}}')
        try:
            fault = plan.add(spec)
        except FaultError as exc:
            return arm.fail(400, "BadRequest", str(exc))
        log.info("fault %d set from %s: %s %s", fault.id, request.peer, fault.kind, fault.scope)
        return arm.ok(fault.to_json(), 201)
    return arm.fail(405, "MethodNotAllowed", f"{method} is not served at /$faults: use GET, POST "
                                             "or DELETE")


def throttled(services, request: Request) -> Response | Later | None:
    """An injected 429/503 for a REST send or management request; for an injected slow
    answer, ``Later(ms, None)`` (the listener answers ``ms`` late); else None. Only a
    request the namespace's door (or the subscription) lets in is throttled: one without
    a valid credential gets its 401 as without the fault, and a namespace is named in
    the record only if it is served here (a URL may name any)."""
    segs = request.segments
    low = [s.lower() for s in segs]
    management = bool(low) and low[0] == "subscriptions"
    if management:
        named = segs[low.index("namespaces") + 1] if "namespaces" in low[:-1] else None
        runtime = next((rt for n, rt in services.namespaces.items()
                        if named is not None and n.lower() == named.lower()), None)
        hub = segs[low.index("eventhubs") + 1] if "eventhubs" in low[:-1] else None
    else:
        host = request.host
        model = services.eventhubs
        name = model.namespace_for_host(host) if host else model.default_namespace
        runtime = services.namespaces.get(name) if name else None
        hub = segs[0] if segs else None
    plan = services.faults.plan
    kinds = ("http-throttle", "http-slow")
    target = {"namespace": runtime.name if runtime is not None else None, "hub": hub,
              "client": request.peer.rsplit(":", 1)[0] or None,
              "protocol": "http-management" if management else "http-send"}
    if not any(f.kind in kinds and f.matches(target) for f in plan.faults) \
            or not _identified(services, request, runtime, management):
        return None
    fault = plan.fire(kinds, target)
    if fault is None:
        return None
    if fault.kind == "http-slow":
        return Later(fault.params["ms"], None)
    status, wait = fault.params["status"], fault.params["retry_after_s"]
    why = f"the service is busy (fault injected): retry after {wait} s"
    if management:
        answer = arm.fail(status, "ServerBusy" if status == 503 else "TooManyRequests", why)
    else:
        answer = error(status, why)
    return answer._replace(headers={**(answer.headers or {}), "Retry-After": str(wait)})


def _identified(services, request: Request, runtime, management: bool) -> bool:
    """Does the door let ``request`` in (its credential is valid, or none is needed)?
    Its rights are the handler's to check; a refusal is the handler's to give."""
    header = request.headers.get("authorization", "")
    subscription = services.subscription
    if management:  # as the management API lets a request in (rest.management._manager)
        if subscription is None or not subscription.required or subscription.holds(header):
            return True
        if runtime is None:
            return False
        if not runtime.door.requires_auth:  # an open namespace takes any token
            return True
        try:
            runtime.door.sign_in(AuthorizationHeader(header) if header.strip() else None,
                                 request.peer, f"management {request.method} {request.path[:200]}",
                                 data_plane=False)
        except Refused:
            return False
        return True
    if runtime is None:
        return False
    _principal, status, _why = authenticate_request(runtime, request.headers, request.peer,
                                                    f"HTTP {request.method} {request.path}",
                                                    request.signed_in)
    return status == 200
