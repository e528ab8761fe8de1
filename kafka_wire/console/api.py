"""The console's JSON API (``/api/...``), authorized like the REST API: a request
about a namespace that requires auth carries a SAS token (or, with OAuth, a
bearer JWT) for it in ``Authorization``; without one the namespace is listed as
locked and its hubs, groups and events are refused with 401. The routes and
their JSON are documented in docs/console-api.md.

The namespace a request's token is for is the one in its path, or its
``?namespace=`` (the snapshot, the lists). Reading events needs the Listen
right, sending the Send right, the rest any right on the hub.

Events are read as a Kafka fetch or an AMQP receiver reads them, at the same door:
a Disabled hub, or a disabled application group, serves none (403); what a read
answers is charged to the namespace's egress throughput units, and a read that
arrives while they are in debt is answered once the debt is waited out. A send
through a publisher's token goes through the publisher policy, as REST's does.
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING, Coroutine

from kafka_wire.console import decoding, explorer, geo
from kafka_wire.eventhubs.rights import LISTEN, MANAGE, SEND
from kafka_wire.eventhubs import connection_string, sas
from kafka_wire.eventhubs.door import AuthorizationHeader, ConnectionString, Refused
from kafka_wire.eventhubs.events import Incoming, encode_value
from kafka_wire.eventhubs.publication import choose_partition, publish
from kafka_wire.eventhubs.refusals import Denial, Refusal
from kafka_wire.rest import refusals
from kafka_wire.rest.api import authenticate_request
from kafka_wire.rest.http import Later, Response
from kafka_wire.whole_numbers import whole_number

if TYPE_CHECKING:
    from kafka_wire.console.views import ConsoleViews

log = logging.getLogger(__name__)

JSON = "application/json; charset=utf-8"
TOKEN_TTL_S = 24 * 3600
SEND_TIMEOUT_MS = 10_000
# A sign-in's body is its credential, read before anything is checked: a connection
# string or a JWT, a few KiB at most; not the listener's 64 MiB.
TOKEN_MAX_BODY = 64 * 1024
_ANY = (LISTEN, SEND, MANAGE)


def answer(value, status: int = 200, headers: dict | None = None) -> Response:
    return Response(status, json.dumps(value, separators=(",", ":")).encode(), JSON, headers)


def refuse(status: int, message: str, **extra) -> Response:
    return answer({"error": message, **extra}, status)


class ConsoleApi:
    def __init__(self, views: ConsoleViews) -> None:
        self.views = views

    @property
    def services(self):
        return self.views.services

    def handles_post(self, path: str) -> bool:
        segs = path.strip("/").split("/")
        return (len(segs) == 4 and segs[:2] == ["api", "namespaces"] and segs[3] == "token") or \
            (len(segs) == 6 and segs[:2] == ["api", "namespaces"] and segs[3] == "hubs"
             and segs[5] == "events")

    def refuse_unread(self, segs: list[str], headers: dict, peer: str, size: int,
                      signed_in: dict | None = None) -> Response | None:
        """The answer to a POST whose body of ``size`` bytes is not read yet, where its
        head alone refuses it (the listener asks before reading a large body): a
        sign-in past :data:`TOKEN_MAX_BODY`, or a send its credential does not allow.
        ``signed_in``: the request's, so its :meth:`post` does not sign in again."""
        if segs[-1] == "token":
            return _sign_in_too_large(size)
        return self._hub(segs[1], segs[3], headers, peer, f"console send to {segs[1]}/{segs[3]}",
                         (SEND,), signed_in)[3]

    # -- who may see what --------------------------------------------------------------------
    def _principal(self, ns: str, headers: dict, peer: str, what: str, signed_in: dict | None = None):
        """(runtime, principal, None) or (runtime or None, None, the refusal)."""
        runtime = self.services.namespaces.get(ns)
        if runtime is None:
            return None, None, refuse(404, f"namespace {ns!r} is not served here: see /api/namespaces")
        principal, status, why = authenticate_request(runtime, headers, peer, what, signed_in)
        if why is not None:
            # token_refused: the token itself is missing, wrong or expired (the console
            # forgets it), as against a good token without the right (it keeps that one).
            return runtime, None, refuse(status, why, namespace=ns, auth_required=status == 401,
                                         token_refused=status == 401)
        return runtime, principal, None

    def _hub(self, ns: str, hub: str, headers: dict, peer: str, what: str, rights=_ANY,
             signed_in: dict | None = None):
        runtime, principal, refused = self._principal(ns, headers, peer, what, signed_in)
        if refused is not None:
            return None, None, None, refused
        view = runtime.topics.hub(hub)  # (in any case, as the AMQP and HTTPS front ends)
        if view is not None:
            hub = view.name
        if view is None or view.internal or not runtime.policy.sees(principal, hub):
            return None, None, None, refuse(404, f"event hub {hub!r} does not exist in namespace {ns!r}")
        if not any(runtime.policy.allows(principal, r, hub) for r in rights):
            return None, None, None, refuse(
                401, f"the token ({principal}) does not grant {' or '.join(rights)} on event hub "
                     f"{hub!r}", namespace=ns, auth_required=True)
        return runtime, principal, view, None

    def visible(self, query: dict, headers: dict, peer: str) -> dict[str, object]:
        """namespace -> principal (None: anyone) for the namespaces this request may see;
        a namespace that requires auth is seen only with the token the request sends
        for it (``?namespace=``)."""
        out = {}
        token_for = query.get("namespace")
        for name, runtime in self.services.namespaces.items():
            header = headers.get("authorization", "") if name == token_for else ""
            if not header and runtime.door.requires_auth:
                continue  # listed as locked, without a refusal in the log at every poll
            principal, _status, why = authenticate_request(runtime, {"authorization": header}, peer,
                                                           "console")
            if why is None:
                out[name] = principal
        return out

    def _namespaces(self, visible: dict) -> list[dict]:
        out = []
        for ns in self.views.namespaces():
            name = ns["name"]
            runtime = self.services.namespaces[name]
            if name not in visible:
                out.append({"name": name, "default": ns["default"], "tier": ns["tier"], "locked": True,
                            "requires_auth": bool(runtime.model and runtime.model.requires_auth),
                            "hubs": []})
                continue
            principal = visible[name]
            ns["hubs"] = [h for h in ns["hubs"] if runtime.policy.sees(principal, h["name"])]
            ns["locked"] = False
            ns["requires_auth"] = bool(runtime.model and runtime.model.requires_auth)
            ns["signed_in_as"] = str(principal) if principal is not None else None
            out.append(ns)
        return out

    def _filtered(self, entries: list[dict], visible: dict) -> list[dict]:
        everything = len(visible) == len(self.services.namespaces)
        return [e for e in entries if e.get("namespace") in visible or (everything and not e.get("namespace"))]

    # -- GET ---------------------------------------------------------------------------------
    def get(self, segs: list[str], query: dict, headers: dict, peer: str) -> Response | Coroutine:
        """The answer; a coroutine giving it for events, where the namespace's Schema
        Registry is awaited first (:meth:`_when_read`)."""
        views = self.views
        if segs == ["overview"]:
            return answer(views.overview())
        if segs in (["namespaces"], ["throttling"], ["capture-files"], ["snapshot"], ["faults"]):
            visible = self.visible(query, headers, peer)
            if segs == ["namespaces"]:
                return answer(self._namespaces(visible))
            if segs == ["throttling"]:
                return answer(self._filtered(views.throttling(), visible))
            if segs == ["faults"]:  # injected faults that fired, of the namespaces it may see
                return answer(self._filtered(views.faults_fired(), visible))
            if segs == ["capture-files"]:
                return answer(self._filtered(views.capture_files(), visible))
            return answer(self._snapshot(query, headers, peer, visible))
        if len(segs) == 3 and segs[0] == "namespaces" and segs[2] == "geo":
            runtime, _principal, refused = self._principal(segs[1], headers, peer,
                                                           f"console /api/namespaces/{segs[1]}/geo")
            return refused or answer(geo.namespace_json(self.services, runtime.name))
        if len(segs) >= 4 and segs[0] == "namespaces" and segs[2] == "hubs":
            return self._hub_get(segs[1], segs[3], segs[4:], query, headers, peer)
        return refuse(404, f"no API at /api/{'/'.join(segs)}: see docs/console-api.md")

    def _snapshot(self, query: dict, headers: dict, peer: str, visible: dict) -> dict:
        ns, hub = query.get("namespace"), query.get("hub")
        detail, hub_error = None, None
        if ns and hub:
            runtime, principal, view, refused = self._hub(ns, hub, headers, peer, "console snapshot")
            if refused is None:
                detail = self.views.hub(ns, view.name)
            else:
                hub_error = {"status": refused.status, **json.loads(refused.body)}
        return {
            "broker": self.views.overview(),
            "namespaces": self._namespaces(visible),
            "hub": detail,
            "hub_error": hub_error,
            "throttling": self._filtered(self.views.throttling(), visible)[:50],
            "faults_fired": self._filtered(self.views.faults_fired(), visible)[:50],
            "capture_files": self._filtered(self.views.capture_files(), visible)[:50],
            "capture_directories": [str(d) for d in self.views.capture.directories],
        }

    def _hub_get(self, ns: str, hub: str, rest: list[str], query: dict, headers: dict,
                 peer: str) -> Response | Coroutine:
        reading = len(rest) >= 3 and rest[0] == "partitions" and rest[2] == "events"
        runtime, principal, view, refused = self._hub(
            ns, hub, headers, peer, f"console /api/namespaces/{ns}/hubs/{hub}",
            (LISTEN,) if reading else _ANY)
        if refused is not None:
            return refused
        if not rest:
            return answer(self.views.hub(ns, view.name))
        if rest == ["consumer-groups"]:
            return answer(self.views.groups(ns, view.name, view.partitions))
        if rest == ["checkpoint-blobs"]:
            return answer(self.views.checkpoint_blobs(ns, view.name))
        if reading and len(rest) <= 5:
            refused = _no_partition(view, rest[1]) or _disabled(runtime, view.name, principal)
            if refused is not None:
                return refused
            decode = self.views.registry is not None and len(rest) < 5  # (a body is sent as stored)
            if not decode and runtime.policy.egress_delay() <= 0:
                return self._read_events(runtime, principal, view, rest, query, None)
            return self._when_read(runtime, principal, view, rest, query, decode)
        return refuse(404, f"no API at /api/namespaces/{ns}/hubs/{hub}/{'/'.join(rest)}")

    async def _when_read(self, runtime, principal, view, rest: list[str], query: dict,
                         decode: bool) -> Response:
        """Events, once the namespace's egress is out of debt (waited out on the broker's
        clock, as an AMQP receiver waits) and, to ``decode`` Avro bodies, its Schema
        Registry is read (its first read is in a thread, awaited, the broker's loop serving
        everyone else meanwhile). The hub is looked up and checked again: it may have gone,
        or changed, or been disabled meanwhile."""
        delay = runtime.policy.egress_delay()
        if delay > 0:
            done = asyncio.get_running_loop().create_future()
            self.services.clock.call_later(delay, lambda: done.done() or done.set_result(None))
            await done
        registry = await self.views.registry(runtime.name) if decode else None
        now, refused = self._still_readable(runtime, principal, view, rest)
        if refused is not None:
            return refused
        read = self._read_events(runtime, principal, now, rest, query,
                                 None if registry is None else registry.schemas.get)
        return await read if asyncio.iscoroutine(read) else read

    def _still_readable(self, runtime, principal, view, rest: list[str]):
        """(the hub's view now, None), or (None, the refusal): after a wait, the hub may
        have gone, or changed, or been disabled meanwhile."""
        served = self.services.namespaces.get(runtime.name) is runtime
        now = runtime.topics.get(view.name) if served else None
        if now is None:
            return None, refuse(404, f"event hub {view.name!r} does not exist in namespace {runtime.name!r}")
        return now, _no_partition(now, rest[1]) or _disabled(runtime, now.name, principal)

    def _read_events(self, runtime, principal, view, rest: list[str], query: dict,
                     schemas) -> Response | Coroutine:
        """``rest``: partitions/<p>/events[/<sequence number>[/body]], the partition checked;
        ``schemas``: schema id -> its Schema (None: Avro bodies are not decoded). What the
        answer carries is charged to the namespace's egress, as a Kafka fetch's records or
        an AMQP receiver's events are (by ``principal``: its application group's too).
        A coroutine where batches too large to decompress on the loop are met: they are
        decompressed in a thread first (:mod:`kafka_wire.console.decoding`)."""
        doing = decoding.Decoding()
        read, events = self._read(runtime, view, rest, query, schemas, doing)
        if doing.pending:
            return self._decompressed_then_read(runtime, principal, view, rest, query, schemas, doing)
        return _charged(runtime, principal, read, events)

    async def _decompressed_then_read(self, runtime, principal, view, rest: list[str], query: dict,
                                      schemas, doing: decoding.Decoding) -> Response:
        """Decompress the batches the read met (the nearest first) in a thread, the broker's
        loop serving everyone else meanwhile, and read again, until the read meets none
        or :data:`decoding.THREAD_BUDGET_S` is spent (at least one is decompressed): then
        a page ends early, before the first batch still to decompress."""
        loop = asyncio.get_running_loop()
        ends = time.monotonic() + decoding.THREAD_BUDGET_S
        while True:
            pending, doing.pending = doing.pending, []
            for batch in pending:
                outcome = await loop.run_in_executor(decoding.executor(), decoding.decompress_whole, batch)
                decoding.resolved(doing, batch, outcome)
                if time.monotonic() > ends:
                    break
            view, refused = self._still_readable(runtime, principal, view, rest)
            if refused is not None:
                return refused
            read, events = self._read(runtime, view, rest, query, schemas, doing)
            if read is not None and (not doing.pending or time.monotonic() > ends):
                return _charged(runtime, principal, read, events)

    def _read(self, runtime, view, rest: list[str], query: dict, schemas,
              doing: decoding.Decoding) -> tuple[Response | None, int]:
        """(the answer, how many events it carries); (None, 0) when the event asked for is
        in a batch to decompress in a thread first (``doing.pending``)."""
        partition = whole_number(rest[1])
        plog = runtime.topics.log(view.name, partition)
        doing.tries = decoding.LOOP_TRIES  # (per read: the loop serves others between two)
        try:
            if len(rest) == 3:
                read, events = self._events(runtime.name, view.name, partition, plog, query, schemas,
                                            doing)
            else:
                try:
                    event = explorer.find(plog, _number(rest[3], "sequence number"), doing)
                except explorer.Deferred:
                    return None, 0
                events = 1
                if len(rest) == 4:
                    read = answer(explorer.as_json(event, schemas, body_limit=None))
                elif rest[4] == "body":
                    name = f"{view.name}-{rest[1]}-{event.sequence_number}.bin"
                    read = Response(200, event.value or b"", "application/octet-stream",
                                    {"Content-Disposition": f'attachment; filename="{name}"'})
                else:
                    return refuse(404, f"no API at /api/namespaces/{runtime.name}/hubs/{view.name}/"
                                       f"{'/'.join(rest)}"), 0
        except explorer.ExplorerError as exc:
            return refuse(exc.status, str(exc)), 0
        return read, events

    def _events(self, ns: str, hub: str, partition: int, plog, query: dict,
                schemas, doing: decoding.Decoding) -> tuple[Response, int]:
        """The page's answer and how many events it carries."""
        count = _number(query.get("count", str(explorer.PAGE_DEFAULT)), "count")
        before = query.get("before")
        start = explorer.start_sequence(plog, query.get("from", "earliest"), query.get("value"))
        if query.get("from", "earliest") == "latest" and before is None:
            before = str(start)  # the newest events: the page that ends at the partition's end
        unreadable: list = []
        events, nxt, scanned = explorer.page(
            plog, start, count, before=None if before is None else _number(before, "before"),
            query=query.get("q") or None, unreadable=unreadable, decoding=doing)
        shown = explorer.page_json(events, schemas, newest=before is not None)
        if before is None and len(shown) < len(events):  # the page's budget ended it early
            scanned -= nxt - events[len(shown)].sequence_number
            nxt = events[len(shown)].sequence_number
            unreadable = [u for u in unreadable if u.first < nxt]
        elif before is not None and len(shown) < len(events):  # its oldest events left out
            since = events[len(events) - len(shown)].sequence_number
            unreadable = [u for u in unreadable if u.last >= since]
        head = answer({
            "namespace": ns, "hub": hub, "partition": partition,
            "first_sequence_number": plog.log_start_offset,
            "last_sequence_number": plog.log_end_offset - 1,
            "next_sequence_number": nxt,
            "scanned": scanned,
            # batches among the page's events that cannot be read (gone on past: not a 500)
            "unreadable_batches": [u.as_json() for u in unreadable],
        })
        # The events are JSON already (page_json measured them against the page's size).
        return head._replace(body=b"".join((head.body[:-1], b',"events":[',
                                            ",".join(shown).encode(), b"]}"))), len(shown)

    # -- POST --------------------------------------------------------------------------------
    def post(self, segs: list[str], headers: dict, peer: str, body: bytes,
             signed_in: dict | None = None) -> Response | Later:
        if segs[-1] == "token":  # the body is the credential: it is read to be checked
            refused = _sign_in_too_large(len(body))  # (the listener asks before reading
            if refused is not None:                  # only for large bodies)
                return refused
            doc, refused = _body(body)
            return refused or self._token(segs[1], doc, peer)
        return self._send(segs[1], segs[3], body, headers, peer, signed_in)

    def _token(self, ns: str, doc: dict, peer: str) -> Response:
        """A token for the console to send: a SAS token made from a connection string,
        or the SAS token or JWT (a namespace with OAuth) given, once the namespace's
        door has checked it (and the client's address)."""
        runtime = self.services.namespaces.get(ns)
        if runtime is None:
            return refuse(404, f"namespace {ns!r} is not served here")
        text = doc.get("connection_string") or ""
        if not isinstance(text, str) or not text.strip():
            return refuse(400, "send {\"connection_string\": \"Endpoint=sb://...;SharedAccessKeyName=...;"
                               "SharedAccessKey=...\"} (or a SharedAccessSignature token, or a JWT)")
        text = text.strip()
        door = runtime.door
        what = "console sign-in"
        try:
            if text.lower().startswith("sharedaccesssignature "):
                token = text
            elif text.lower().startswith("bearer ") or text.count(".") == 2 and "=" not in text:
                token = text if text.lower().startswith("bearer ") else f"Bearer {text}"  # a JWT (OAuth)
            else:
                principal = door.sign_in(ConnectionString(text, kafka=False), peer, what)
                cs = connection_string.parse(text)
                token = cs.signature or sas.generate(
                    sas.resource_uri(f"{ns}.servicebus.windows.net", principal.hub),
                    cs.key_name, cs.key, int(self.services.clock.now_ms() / 1000) + TOKEN_TTL_S)
            principal = door.sign_in(AuthorizationHeader(token), peer, what)
        except Refused as exc:
            status = refusals.status(exc.reason)
            return refuse(status, exc.message, namespace=ns, auth_required=status == 401)
        if principal is None:  # an open namespace: a token is not needed, nor checked
            return refuse(400, f"namespace {ns!r} does not require a token", namespace=ns)
        return answer({"namespace": ns, "token": token, "principal": str(principal),
                       "rights": sorted(principal.rights), "hub": principal.hub,
                       "expires_s": principal.expires_s})

    def _send(self, ns: str, hub: str, body: bytes, headers: dict, peer: str,
              signed_in: dict | None = None) -> Response | Later:
        runtime, principal, view, refused = self._hub(ns, hub, headers, peer,
                                                      f"console send to {ns}/{hub}", (SEND,), signed_in)
        if refused is not None:  # the door first: a body is read only for whom may send
            return refused
        doc, refused = _body(body)
        if refused is not None:
            return refused
        try:
            event, partition = _event(doc, view.partitions, int(time.time() * 1000))
        except ValueError as exc:
            return refuse(400, str(exc))
        publisher = principal.publisher if principal is not None else None
        if publisher is not None:
            # As REST's and AMQP's publisher sends: keyed with the publisher's name and
            # stamped x-opt-publisher by the door; another key refuses the send (403, as
            # REST answers). The name is the partition key, so no partition is chosen.
            if partition is not None:
                return refuse(403, f"a token for publisher {publisher!r} sends with {publisher!r} as "
                                   "the partition key: leave out \"partition\"")
            stamped = runtime.policy.publisher_events(publisher, [event])
            if isinstance(stamped, Denial):
                return refuse(403, stamped.message)
            event = stamped[0]
        size = len(event.body or b"")
        p = choose_partition(partition, event.partition_key, view.partitions,
                             lambda: runtime.next_partition(view.name, view.partitions))
        done = publish(self.services, runtime, principal, view.name, p, [event], size,
                       SEND_TIMEOUT_MS, headers.get("user-agent"), "console")
        if done.denial is not None:
            return refuse(refusals.status(done.denial.reason), done.denial.message)
        sent = answer({"namespace": ns, "hub": view.name, "partition": p,
                       "sequence_number": done.sequence_number}, 201)
        return Later(done.throttle_ms, sent) if done.throttle_ms > 0 else sent



def _charged(runtime, principal, read: Response, events: int) -> Response:
    if events:  # (a page of no events carries none: nothing is charged, as for a fetch)
        runtime.policy.egress(len(read.body), events, principal)
    return read


def _number(text: str, what: str) -> int:
    number = whole_number(str(text), signed=True)
    if number is None:
        raise explorer.ExplorerError(400, f"{what} {str(text)[:40]!r} is not a whole number")
    return number


def _sign_in_too_large(size: int) -> Response | None:
    """The 413 for a sign-in's body past :data:`TOKEN_MAX_BODY`, else None."""
    return refuse(413, f"a sign-in's body is at most {TOKEN_MAX_BODY} bytes") if size > TOKEN_MAX_BODY else None


def _body(body: bytes) -> tuple[dict, Response | None]:
    """(the request's JSON object, None), or ({}, the 400 for a body that is not one)."""
    try:
        doc = json.loads(body or b"{}")
    except (ValueError, RecursionError) as exc:  # a nesting past Python's recursion limit too
        return {}, refuse(400, f"the request body is not JSON: {str(exc)[:120]}")
    if not isinstance(doc, dict):
        return {}, refuse(400, "the request body must be a JSON object")
    return doc, None


def _event(doc: dict, partitions: int, created_ms: int):
    """(the event as an AMQP sender's message of it, created at ``created_ms``, leaves it in
    the log; the partition asked for or None)."""
    body = doc.get("body", "")
    if not isinstance(body, str):
        raise ValueError("body must be a string (the event's text, or JSON as text)")
    props = doc.get("properties") or {}
    if not isinstance(props, dict):
        raise ValueError("properties must be an object of names to strings, numbers or booleans")
    for name, value in props.items():
        if value is not None and not isinstance(value, (str, bool, int, float)):
            raise ValueError(f"property {name!r} must be a string, number or boolean")
    partition = doc.get("partition")
    if partition not in (None, ""):
        number = whole_number(str(partition)) if isinstance(partition, (str, int)) else None
        if number is None or isinstance(partition, bool) or number >= partitions:
            raise ValueError(f"partition {str(partition)[:40]!r} is not one of 0..{partitions - 1}")
        partition = number
    else:
        partition = None
    key = doc.get("partition_key") or None
    if key is not None and not isinstance(key, str):
        raise ValueError("partition_key must be a string")
    if key is not None:
        key.encode("utf-8")  # a lone surrogate (\ud800) is a ValueError here, not in the key's hash
    if key is not None and partition is not None:
        raise ValueError("give a partition or a partition key, not both")
    content_type = doc.get("content_type") or None
    if content_type is not None and not isinstance(content_type, str):
        raise ValueError("content_type must be a string")
    # What the AMQP endpoint keeps of an SDK's send of the same event: one data
    # section, the properties AMQP-encoded, and the properties section (content
    # type, creation time) in the reserved header.
    data = body.encode("utf-8")
    try:
        properties = [(name.encode("utf-8"), encode_value(value)) for name, value in props.items()]
    except (OverflowError, ValueError) as exc:
        raise ValueError(f"a property's value cannot be encoded: {exc}") from None
    return Incoming(key, properties, data, [data],
                    _properties_section(content_type, created_ms)), partition


def _properties_section(content_type: str | None, creation_ms: int) -> bytes:
    """An AMQP properties section (described list 0x73) of a message with only a
    content type and a creation time, encoded as an AMQP client encodes it."""
    fields = b"\x40" * 6  # message-id, user-id, to, subject, reply-to, correlation-id
    if content_type is None:
        fields += b"\x40"
    else:
        symbol = content_type.encode("utf-8")
        fields += (b"\xa3" + bytes([len(symbol)]) if len(symbol) < 256
                   else b"\xb3" + len(symbol).to_bytes(4, "big")) + symbol
    fields += b"\x40\x40"  # content-encoding, absolute-expiry-time
    fields += b"\x83" + creation_ms.to_bytes(8, "big", signed=True)
    count = 10
    if len(fields) + 1 < 256:
        return b"\x00\x53\x73\xc0" + bytes([len(fields) + 1, count]) + fields
    return b"\x00\x53\x73\xd0" + (len(fields) + 4).to_bytes(4, "big") + count.to_bytes(4, "big") + fields


def _disabled(runtime, hub: str, principal) -> Response | None:
    """The 403 for a read of ``hub`` the namespace refuses ``principal`` (a Disabled hub, a
    disabled application group: what Kafka's fetch and AMQP's receivers are refused), else None."""
    why = runtime.policy.disabled(hub, principal)
    return None if why is None else refuse(refusals.status(Refusal.DISABLED), why,
                                           namespace=runtime.name)


def _no_partition(view, text: str) -> Response | None:
    """The 404 for a partition ``text`` that hub ``view`` does not have, else None."""
    partition = whole_number(text)
    if partition is None or partition >= view.partitions:
        return refuse(404, f"event hub {view.name!r} has no partition {text[:40]!r} "
                           f"(it has 0..{view.partitions - 1})")
    return None
