"""Routing of the REST endpoints, and what they share: the namespace a request's
Host selects, and its ``Authorization`` (a SAS token, or a bearer JWT where the
namespace has OAuth) checked by the namespace's policy."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Coroutine

from kafka_wire.eventhubs.rights import LISTEN, MANAGE, SEND
from kafka_wire.eventhubs.door import AuthorizationHeader, Refused
from kafka_wire.rest import refusals
from kafka_wire.eventhubs.schema_registry import Registries, RegistryLoading, SchemaRegistry
from kafka_wire.rest import arm, management, schemas, send
from kafka_wire.rest.http import Later, Request, Response, error
from kafka_wire.rest.management.common import MAX_BODY as MANAGEMENT_MAX_BODY
from kafka_wire.rest.schemas import NeedsRegistry

if TYPE_CHECKING:
    from pathlib import Path

    from kafka_wire.context import NamespaceRuntime, Services
    from kafka_wire.eventhubs.managed import ManagedState

log = logging.getLogger(__name__)


def authenticate_request(runtime: NamespaceRuntime, headers: dict, peer: str, what: str,
                         signed_in: dict | None = None) -> tuple[object, int, str | None]:
    """(principal, 200, None) for an HTTP request to ``runtime``'s namespace, from its
    ``Authorization`` header (None where the namespace lets anyone in), else
    (None, status, why): 403 an IP filter refuses the client, 401 no valid token.
    The namespace's door decides, once per request: ``signed_in`` is the request's
    (:attr:`Request.signed_in`), where a success is kept for the rest of it."""
    if signed_in is not None and runtime.name in signed_in:
        return signed_in[runtime.name]
    header = headers.get("authorization", "")
    try:
        principal = runtime.door.sign_in(AuthorizationHeader(header) if header.strip() else None,
                                         peer, what)
    except Refused as exc:
        return None, refusals.status(exc.reason), exc.message
    if signed_in is not None:
        signed_in[runtime.name] = (principal, 200, None)
    return principal, 200, None


class RestApi:
    """``state``: where management changes are kept (None: not kept)."""

    def __init__(self, services: Services, state: ManagedState | None = None,
                 data_dir: Path | None = None) -> None:
        self.services = services
        self.state = state
        self.data_dir = data_dir
        self.registries = Registries(data_dir, self._schema_bounds)
        self.add_namespace = None  # the broker's: serve a namespace made at runtime
        self.remove_namespace = None  # the broker's: stop serving one and delete its data
        self.hubs_changed = None  # the broker's: hubs changed (capture jobs follow them)
        self.enable_geo = None  # the broker's: geo-replicate a running namespace

    async def registry(self, namespace: str) -> SchemaRegistry | None:
        """The namespace's Schema Registry (kept under the data directory) for a caller
        outside the REST routes (the console, for Avro bodies); None where its file could
        not be read. Its first read is in a thread: awaited, the loop serving everyone
        else meanwhile. (A REST route gets it from :meth:`handle`: :class:`NeedsRegistry`.)"""
        return await self.registries.read(namespace)

    def _schema_bounds(self, namespace: str):
        runtime = self.services.namespaces.get(namespace)
        return runtime.policy.bounds if runtime is not None else None  # (the [limits] quotas)

    def forget(self, namespace: str) -> None:
        """Namespace ``namespace`` was deleted: its Schema Registry goes with it (the
        broker deletes its file), so a namespace made later under the name starts empty."""
        self.registries.forget(namespace)

    def handles(self, method: str, path: str) -> bool:
        """Is this request for the REST API (not a console page)?"""
        segs = path.strip("/").split("/")
        if segs[0].lower() in ("subscriptions", "$schemagroups"):
            return True
        return method == "POST" and segs[-1].lower() == "messages"

    def handle(self, request: Request) -> Response | Later | Coroutine:
        """The answer; a coroutine giving it where the route needs a namespace's Schema
        Registry that is still being read (:class:`NeedsRegistry`: it is answered once,
        after the read, the broker's loop serving everyone else meanwhile)."""
        answer = self._route(request)
        if not isinstance(answer, NeedsRegistry):
            return answer
        try:
            registry = self.registries.get(answer.runtime.name)
        except RegistryLoading as loading:
            return self._when_read(answer, loading)
        return answer.answer(registry)

    async def _when_read(self, needs: NeedsRegistry, loading: RegistryLoading) -> Response:
        name = needs.runtime.name
        for _ in range(3):  # (read again only where the namespace was deleted meanwhile)
            await loading.wait()
            if self.services.namespaces.get(name) is not needs.runtime:
                return arm.fail(404, "NotFound", f"namespace {name!r} was deleted while its Schema "
                                                 "Registry was read")
            try:
                registry = self.registries.get(name)
            except RegistryLoading as again:
                loading = again
                continue
            return needs.answer(registry)
        return arm.fail(503, "ServiceUnavailable", f"the Schema Registry of namespace {name!r} is "
                                                   "being read: try again")

    def _route(self, request: Request) -> Response | Later | NeedsRegistry:
        segs = request.segments
        low = [s.lower() for s in segs]
        if low[0] == "subscriptions":
            return management.handle(self, request)
        if low[0] == "$schemagroups":
            return schemas.handle(self, request)
        if request.method != "POST":
            return error(405, f"{request.method} is not served at {request.path}: send with POST")
        if len(segs) == 2 and low[1] == "messages":
            return send.send(self, request, segs[0], None, None)
        if len(segs) == 4 and low[3] == "messages" and low[1] in ("partitions", "publishers"):
            partition, publisher = (segs[2], None) if low[1] == "partitions" else (None, segs[2])
            return send.send(self, request, segs[0], partition, publisher)
        return error(404, f"no Event Hubs API at {request.path}")

    def refuse_unread(self, request: Request, size: int) -> Response | None:
        """The answer to a request whose body of ``size`` bytes is not read yet, where
        its head alone refuses it: the listener asks before reading a large body, so a
        client without a credential cannot make the broker hold one (up to the
        listener's 64 MiB, on each of its connections). Management and the Schema
        Registry take at most 1 MiB; a send, what its namespace allows, from whom may send."""
        low = [s.lower() for s in request.segments]
        if low[0] == "subscriptions":
            if size > MANAGEMENT_MAX_BODY:
                return arm.fail(413, "RequestTooLarge", f"the request body is {size} bytes: at most "
                                                        f"{MANAGEMENT_MAX_BODY}")
            return None
        if low[0] == "$schemagroups":
            if size > schemas.MAX_SCHEMA_BYTES:
                return arm.fail(413, "RequestTooLarge", f"the schema is {size} bytes: at most "
                                                        f"{schemas.MAX_SCHEMA_BYTES}")
            return None
        runtime, _principal, refused = self.authorize(request, request.segments[0], SEND)
        if refused is not None:
            return refused
        limit = runtime.policy.max_publication_bytes()
        if size > limit:
            return error(413, f"the request body is {size} bytes; event hub "
                              f"{request.segments[0]!r} accepts at most {limit} bytes per send")
        return None

    def authorize(self, request: Request, hub: str | None, right: str | tuple[str, ...], *,
                  any_right: bool = False,
                  namespace_wide: bool = False) -> tuple[NamespaceRuntime | None, object, Response | None]:
        """(namespace, principal, None) when the request may exercise ``right`` (a tuple: any
        of them) on ``hub`` (``any_right``: any of Listen, Send and Manage; ``namespace_wide``: a
        namespace-level resource, which a hub-scoped token does not reach); else (…, …, the refusal).
        The token is a SAS token, bare or as a bearer token (the Azure SDKs' token
        credentials send it so), or a bearer JWT where the namespace has OAuth."""
        services = self.services
        model = services.eventhubs
        host = request.host
        name = model.namespace_for_host(host) if host else model.default_namespace
        runtime = services.namespaces.get(name) if name else None
        if runtime is None:
            return None, None, error(404, f"host {host!r} names no namespace this server serves")
        principal, status, why = authenticate_request(runtime, request.headers, request.peer,
                                                      f"HTTP {request.method} {request.path}",
                                                      request.signed_in)
        if why is not None:
            return runtime, None, error(status, why)
        rights = (LISTEN, SEND, MANAGE) if any_right else right if isinstance(right, tuple) else (right,)
        scoped = namespace_wide and principal is not None and principal.hub is not None
        if scoped or not any(runtime.policy.allows(principal, r, hub) for r in rights):
            what = f"event hub {hub!r}" if hub else f"namespace {runtime.name!r}"
            wanted = right if isinstance(right, str) else " or ".join(right)
            return runtime, principal, error(401, f"the token ({principal}) does not grant {wanted} "
                                                  f"on {what}")
        return runtime, principal, None
