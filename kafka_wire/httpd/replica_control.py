"""The replica control API at ``/$replicas`` on the broker's HTTP listener: list a
geo-replicated namespace's replicas, stall one (a region that cannot be reached),
let it catch up, promote one (see docs/georeplication.md).

    GET  /$replicas                            every geo-replicated namespace
    GET  /$replicas/NAMESPACE                  its primary, max lag, segment, replicas
    POST /$replicas/NAMESPACE/LOCATION/pause   stall a secondary
    POST /$replicas/NAMESPACE/LOCATION/resume  let it catch up
    POST /$replicas/NAMESPACE/LOCATION/promote make it the primary; body {"forced": true}
                                               (or ?forced=true) switches without waiting

Like ``/$faults`` it needs the subscription's credential (``Authorization:
Bearer <key>``) under the subscription's rules; ``$`` cannot begin a hub's name,
so the path meets no hub; errors are ARM-style JSON (``{"error": {"code", "message"}}``).
"""
from __future__ import annotations

import json
import logging

from kafka_wire.eventhubs.door import Refused
from kafka_wire.eventhubs.refusals import Refusal
from kafka_wire.rest import arm
from kafka_wire.rest.http import Request, Response

log = logging.getLogger(__name__)

PATH = "$replicas"
MAX_BODY = 4 * 1024
ACTIONS = ("pause", "resume", "promote")
_STATUS = {Refusal.INVALID: (400, "BadRequest"), Refusal.NOT_FOUND: (404, "NotFound"),
           Refusal.LIMIT: (409, "Conflict")}


def handles(path: str) -> bool:
    return path.lstrip("/").split("/", 1)[0].lower() == PATH


def _shown(text: str) -> str:
    return repr(text[:40] + ("..." if len(text) > 40 else ""))


def handle(services, request: Request):
    """A Response, or (promote) a coroutine the listener awaits for one."""
    subscription = services.subscription
    try:
        if subscription is not None:
            subscription.sign_in(request.headers.get("authorization", ""), request.peer,
                                 f"replica control {request.method} {request.path}")
    except Refused as exc:
        return arm.fail(401, "AuthenticationFailed", exc.message)
    segs = [s for s in request.path.strip("/").split("/")[1:] if s]
    method = request.method
    if len(request.body) > MAX_BODY:
        return arm.fail(413, "RequestTooLarge", f"a replica request's JSON is at most {MAX_BODY} bytes")
    if len(segs) > 3:
        return arm.fail(404, "NotFound", "no replica API there: use /$replicas, /$replicas/NAMESPACE "
                                         "or /$replicas/NAMESPACE/LOCATION/pause|resume|promote")
    if not segs:
        if method not in ("GET", "HEAD"):
            return arm.fail(405, "MethodNotAllowed", "GET /$replicas lists the replicas")
        return arm.ok({"value": [ns.geo.to_json() for ns in services.namespaces.values()
                                 if ns.geo is not None]})
    runtime = services.namespaces.get(segs[0])
    if runtime is None:
        return arm.fail(404, "NotFound", f"no namespace {_shown(segs[0])} in this broker")
    geo = runtime.geo
    if geo is None:
        return arm.fail(404, "NotFound", f"namespace {runtime.name!r} is not geo-replicated: give it "
                                         "[namespaces.NAME.geo_replication] replicas (Premium or Dedicated)")
    if len(segs) == 1:
        if method not in ("GET", "HEAD"):
            return arm.fail(405, "MethodNotAllowed", f"GET /$replicas/{runtime.name} shows its replicas")
        return arm.ok(geo.to_json())
    if len(segs) == 2:
        if method not in ("GET", "HEAD"):
            return arm.fail(405, "MethodNotAllowed", "POST .../LOCATION/pause, resume or promote")
        return _call(lambda: arm.ok(geo.replica(segs[1]).to_json()))
    action = segs[2].lower()
    if action not in ACTIONS:
        return arm.fail(404, "NotFound", f"no replica action {_shown(segs[2])}: use pause, resume or promote")
    if method != "POST":
        return arm.fail(405, "MethodNotAllowed", f"POST /$replicas/NAMESPACE/LOCATION/{action}")
    location = segs[1]
    if action == "pause":
        return _call(lambda: (geo.pause(location), _done(request, geo, location, action))[1])
    if action == "resume":
        return _call(lambda: (geo.resume(location), _done(request, geo, location, action))[1])
    forced = _forced(request)
    if isinstance(forced, Response):
        return forced
    return _promote(geo, location, forced, request)


def _forced(request: Request) -> bool | Response:
    query = request.query.get("forced")
    if query is not None:
        if query.lower() not in ("true", "false"):
            return arm.fail(400, "BadRequest", "forced is true or false")
        return query.lower() == "true"
    if not request.body:
        return False
    try:
        body = json.loads(request.body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return arm.fail(400, "BadRequest", 'the body is not JSON: send {"forced": true} or nothing')
    if not isinstance(body, dict) or set(body) - {"forced"} or not isinstance(body.get("forced", False), bool):
        return arm.fail(400, "BadRequest", 'send {"forced": true} or {"forced": false}, nothing else')
    return body.get("forced", False)


def _done(request: Request, geo, location: str, action: str) -> Response:
    log.info("replica %s of %s %sd from %s", geo.replica(location).location, geo.namespace, action,
             request.peer)
    return arm.ok(geo.replica(location).to_json())


def _call(fn) -> Response:
    from kafka_wire.replication import GeoError
    try:
        return fn()
    except GeoError as exc:
        status, code = _STATUS.get(exc.reason, (400, "BadRequest"))
        return arm.fail(status, code, exc.message)


async def _promote(geo, location: str, forced: bool, request: Request) -> Response:
    from kafka_wire.replication import GeoError
    try:
        result = await geo.promote(location, forced=forced)
    except GeoError as exc:
        status, code = _STATUS.get(exc.reason, (400, "BadRequest"))
        return arm.fail(status, code, exc.message)
    log.info("replica %s of %s promoted (%s) from %s", result.location, geo.namespace,
             "forced" if forced else "planned", request.peer)
    return arm.ok(result.to_json())
