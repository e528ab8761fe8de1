"""The broker's one HTTP listener: a small HTTP/1.1 server on the broker's own
event loop (stdlib asyncio only) that hands each request to one of two siblings
and answers ``/health`` itself.

- the Event Hubs REST API (:mod:`kafka_wire.rest`: management, REST send, the
  Schema Registry) takes the requests it :meth:`handles`;
- the console (:mod:`kafka_wire.console`: pages, ``/metrics``, its JSON API) the
  rest;
- an upgrade to ``/$servicebus/websocket`` goes to the AMQP endpoint;
- ``/$faults``, the fault control API (:mod:`kafka_wire.httpd.fault_control`);
- ``/$replicas``, the replica control API (:mod:`kafka_wire.httpd.replica_control`).

Neither sibling reaches into the other. Bodies need a ``Content-Length`` (at
most :data:`MAX_BODY`); keep-alive; a head larger than 16 KiB or of more than
:data:`MAX_FIELDS` header lines is answered 431 (in its route's error shape) and
its connection closed; requests slower than :data:`READ_TIMEOUT_S` and answers not
read within it are dropped, and past ``max_connections`` open connections a new
one gets 503 at once. A header line another parser could read otherwise (a folded
line, whitespace before the colon, a name that is not a token, a CR, LF or NUL in a
value) is answered 400, in its route's shape, and its connection closed: read leniently,
it let a Content-Length a proxy never saw carry the next request in as a body. Header
names are looked up without case; a repeated header
is one, its values joined with ", " (RFC 9110 5.3); the fields as sent (names in
their case) are kept too, for REST send's user properties. A query value may be
blank (``?timeout=`` is a blank timeout, which its route judges, not no timeout).
Every answer is built synchronously from in-memory state, so a scrape costs the
Kafka path one short turn of the loop (a throttled REST send is answered later,
on the clock).
"""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import socket
import struct
from typing import Callable
from urllib.parse import parse_qs, quote, unquote, urlsplit

from kafka_wire.httpd import fault_control, replica_control
from kafka_wire.httpd.fields import MalformedHead, header_fields, header_map
from kafka_wire.log_lines import RepeatedWarnings, client_address
from kafka_wire.rest import arm
from kafka_wire.rest.http import Later, Request, Response, error
from kafka_wire.whole_numbers import whole_number

log = logging.getLogger(__name__)
_repeats = RepeatedWarnings(log)  # a refused head costs a client one line a minute here

READ_TIMEOUT_S = 15.0
_MAX_HEAD = 16 * 1024
# Header lines in a head: a client sends a dozen. Past this, 431 (a head of 16 KiB holds
# up to 4,000 of "a:", each a dict entry and a list entry to make).
MAX_FIELDS = 256
HEALTHY = {"status": "healthy", "message": "Service is healthy."}
UNHEALTHY = {"status": "unhealthy", "message": "Service not available. Please try after some time."}
# A body larger than this is read only once its head passed the checks it can pass
# alone (credential, the route's limit): see RestApi.refuse_unread.
CHECK_HEAD_ABOVE = 64 * 1024
MAX_BODY = 64 * 1024 * 1024  # above any namespace's largest publication, JSON batch included
_REASONS = {200: "OK", 201: "Created", 204: "No Content", 304: "Not Modified", 400: "Bad Request",
            401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
            409: "Conflict", 411: "Length Required", 413: "Payload Too Large", 429: "Too Many Requests",
            431: "Request Header Fields Too Large", 500: "Internal Server Error", 503: "Service Unavailable"}
_JSON = "application/json; charset=utf-8"
_PRINTABLE_ASCII = "".join(map(chr, range(0x20, 0x7F)))


class HttpListener:
    """``console``: the console's pages (:class:`kafka_wire.console.pages.ConsolePages`)."""

    def __init__(self, console, ready: Callable[[], bool], max_connections: int = 512) -> None:
        self.console = console
        self.ready = ready
        self.max_connections = max_connections
        self._servers: list[asyncio.base_events.Server] = []  # HTTP, and HTTPS with TLS
        self._clients: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task] = set()
        # AMQP over WebSockets (kafka_wire.amqp.websocket), set when AMQP is on: called
        # with (reader, writer, target, headers) for an upgrade request to its path.
        self.websocket: Callable | None = None
        self.rest = None  # kafka_wire.rest.api.RestApi: the Event Hubs REST endpoints
        self.clock = None  # the broker's clock, on which a throttled REST answer waits

    async def start(self, host: str, port: int, ssl=None) -> tuple[str, int]:
        """Listen on one more address (``ssl``: an SSLContext, for HTTPS)."""
        server = await asyncio.start_server(self._serve, host, port, reuse_address=True, ssl=ssl)
        self._servers.append(server)
        bound = server.sockets[0].getsockname()
        return bound[0], bound[1]

    async def stop(self) -> None:
        servers, self._servers = self._servers, []
        for server in servers:
            server.close()
        for w in list(self._clients):
            w.transport.abort()  # no TLS close_notify exchange with an idle keep-alive client
        for server in servers:
            await server.wait_closed()
        # Let each connection's task see its close and end: one the loop cancels at
        # shutdown makes asyncio log a CancelledError (Python 3.11's start_server).
        tasks = [t for t in self._tasks if not t.done()]
        if tasks:
            await asyncio.wait(tasks, timeout=5)

    # -- connection -----------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        most = self.max_connections
        if len(self._clients) >= most:  # refused before any buffer is spent on it
            log.warning("HTTP connection from %s refused: %d connections are open, the most "
                        "[limits] http_connections allows", writer.get_extra_info("peername"), most)
            self._send(writer, 503, b"too many connections: try again later\n", "text/plain", False,
                       False, extra={"Retry-After": "1"})
            writer.close()
            return
        self._clients.add(writer)
        task = asyncio.current_task()
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        try:
            while True:
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
                except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError):
                    return
                except asyncio.LimitOverrunError:  # (past the reader's 64 KiB: still buffered)
                    head = None
                if head is None or len(head) > _MAX_HEAD:
                    first = head.split(b"\r\n", 1)[0] if head is not None else await _first_line(reader)
                    self._head_too_large(writer, first, f"the request head is larger than "
                                                        f"{_MAX_HEAD} bytes, the most taken here")
                    return
                lines = head.decode("latin-1").split("\r\n")
                parts = lines[0].split(" ")
                if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
                    self._send(writer, 400, b"bad request line\n", "text/plain", False, False)
                    return
                method, target, version = parts
                try:
                    fields = header_fields(lines[1:-2])  # (the head ends with two empty lines)
                except MalformedHead as exc:
                    self._refuse_head(writer, head.split(b"\r\n", 1)[0], 400, "BadRequest", str(exc))
                    return
                if len(fields) > MAX_FIELDS:
                    self._head_too_large(writer, head.split(b"\r\n", 1)[0], f"the request has "
                                         f"{len(fields)} header fields: at most {MAX_FIELDS} are taken")
                    return
                headers, repeated = header_map(fields)
                if (self.websocket is not None and method == "GET" and not repeated  # (refused below)
                        and target.split("?", 1)[0] == "/$servicebus/websocket"
                        and headers.get("upgrade", "").lower() == "websocket"):
                    await self.websocket(reader, writer, target, headers)
                    return
                conn = {t.strip(" \t") for t in headers.get("connection", "").lower().split(",")}
                keep = "close" not in conn and (version == "HTTP/1.1" or "keep-alive" in conn)
                url = urlsplit(target)
                path = unquote(url.path)
                rest = self.rest is not None and self.rest.handles(method, path)
                control = self.rest is not None and (fault_control.handles(path)
                                                     or replica_control.handles(path))
                posted = rest or control or (method == "POST" and self.console.handles_post(path))
                # refused before the body is read, in the shape of the route it was meant for
                if repeated:
                    self._refuse(writer, path, rest, control, 400, "BadRequest",
                                 f"the {repeated} header is sent more than once: send it once")
                    return
                if "transfer-encoding" in headers:
                    self._refuse(writer, path, rest, control, 411, "LengthRequired",
                                 "send a Content-Length (chunked bodies are not taken)")
                    return
                length = headers.get("content-length", "0") or "0"
                size = whole_number(length)  # (not int(): "²" passes isdigit, int() refuses it)
                if size is None and not (length.isascii() and length.isdigit()):
                    self._refuse(writer, path, rest, control, 400, "BadRequest",
                                 f"Content-Length {length[:40]!r} is not a number of bytes")
                    return
                if size is None or size > MAX_BODY:  # (None: more digits than whole_number reads)
                    self._refuse(writer, path, rest, control, 413, "RequestTooLarge",
                                 f"the request body is larger than {MAX_BODY} bytes, the most taken here")
                    return
                if control and size > fault_control.MAX_BODY:
                    self._refuse(writer, path, rest, control, 413, "RequestTooLarge",
                                 f"a fault's JSON is at most {fault_control.MAX_BODY} bytes")
                    return
                if not posted and (size or method not in ("GET", "HEAD")):  # decided before a Request is made
                    if size:  # its body is never read
                        self._send(writer, 405, b"only GET and HEAD are served here\n", "text/plain",
                                   False, False)
                        return
                    self._send(writer, 405, b"only GET and HEAD are served\n", "text/plain",
                               False, keep, extra={"Allow": "GET, HEAD"})
                    if not await _drained(writer) or not keep:
                        return
                    continue
                request = _request(writer, method, path, url, headers, fields)
                if size > CHECK_HEAD_ABOVE and posted and not control:
                    # refused on its head alone, the body is never read (nor held)
                    refused = self._refuse_unread(request, rest, size)
                    if refused is not None:
                        self._send(writer, refused.status, refused.body, refused.content_type,
                                   False, False, extra=refused.headers)
                        return
                if size:
                    try:
                        body = await asyncio.wait_for(reader.readexactly(size), READ_TIMEOUT_S)
                    except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError):
                        return
                    request = dataclasses.replace(request, body=body)  # (signed_in goes with it)
                answer = await self._answer(request, rest, control)
                self._send(writer, answer.status, answer.body, answer.content_type,
                           method == "HEAD", keep, extra=answer.headers)
                if not await _drained(writer) or not keep:
                    return
        except ConnectionError:
            return
        finally:
            self._clients.discard(writer)
            writer.close()

    def _refuse_unread(self, request: Request, rest: bool, size: int) -> Response | None:
        try:
            if rest:
                return self.rest.refuse_unread(request, size)
            return self.console.refuse_unread(request, size)
        except Exception:  # a bug: answered as one, the body not read (it was not checked)
            log.exception("checking the head of %s %s", request.method, request.path[:200])
            return self._failed(request, rest)

    async def _answer(self, request: Request, rest: bool, control: bool = False) -> Response:
        """The REST API's answer, or the console's; a throttled send's after its wait."""
        try:
            services = self.rest.services if self.rest is not None else None
            faults = services.faults if services is not None else None
            if control and replica_control.handles(request.path):
                answer = replica_control.handle(services, request)
                if asyncio.iscoroutine(answer):  # a promotion: answered once it is done
                    answer = await answer
            elif control:
                answer = fault_control.handle(services, request)
            elif rest and faults is not None and faults.plan.active and \
                    (throttled := fault_control.throttled(services, request)) is not None:
                answer = throttled
                if isinstance(answer, Later) and answer.response is None:  # injected slowness
                    answer = answer._replace(response=self.rest.handle(request))
            elif rest:
                answer = self.rest.handle(request)
            elif request.method == "POST":
                answer = self.console.post(request)
            else:
                answer = self.route(request)
            while True:
                if asyncio.iscoroutine(answer):  # (the REST API's, where a Schema Registry is read)
                    answer = await answer
                if not isinstance(answer, Later):
                    break
                done = asyncio.get_running_loop().create_future()  # (a slow answer may hold a throttled one)
                self.clock.call_later(answer.wait_ms, lambda: done.done() or done.set_result(None))
                await done
                answer = answer.response
        except Exception:
            side = ("replica control" if control and replica_control.handles(request.path)
                    else "fault control" if control else "REST" if rest else "console")
            log.exception("%s request %s %s failed", side, request.method, request.path)
            answer = self._failed(request, rest, control)
        return answer

    def _failed(self, request: Request, rest: bool, control: bool = False) -> Response:
        """The 500 for a bug met answering ``request``, in its front end's shape."""
        if not rest and not control:
            return self.console.failed()
        return _refusal(request.path, rest, control, 500, "InternalServerError",
                        "internal error: see the broker log")

    def _head_too_large(self, writer, request_line: bytes | None, why: str) -> None:
        """The 431 for a head past the listener's bounds."""
        self._refuse_head(writer, request_line, 431, "RequestHeaderFieldsTooLarge", why)

    def _refuse_head(self, writer, request_line: bytes | None, status: int, code: str,
                     why: str) -> None:
        """Refuse a head not read as fields, in the error shape of the route its request
        line names (plain text where it names none), logged once a minute for a client and
        status (each costs it only a connection: a flood of them must not flood the log)."""
        parts = (request_line or b"").decode("latin-1").split(" ")
        path, rest, control = "", False, False
        if len(parts) == 3 and parts[2].startswith("HTTP/1."):
            path = unquote(urlsplit(parts[1]).path)
            rest = self.rest is not None and self.rest.handles(parts[0], path)
            control = self.rest is not None and (fault_control.handles(path)
                                                 or replica_control.handles(path))
        peer = writer.get_extra_info("peername")
        address = client_address(f"{peer[0]}:{peer[1]}") if peer else ""
        _repeats.warn(f"http-refused-head-{status}", address, f"HTTP request from {peer} refused "
                      f"({status}): {why} ({(request_line or b'')[:200]!r})")
        self._refuse(writer, path, rest, control, status, code, why)

    def _refuse(self, writer, path: str, rest: bool, control: bool, status: int, code: str,
                message: str) -> None:
        """Refuse a request the listener will not read, and close its connection."""
        refused = _refusal(path, rest, control, status, code, message)
        self._send(writer, refused.status, refused.body, refused.content_type, False, False)

    @staticmethod
    def _send(writer, status: int, body: bytes, ctype: str, head_only: bool, keep: bool,
              extra: dict | None = None) -> None:
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, '')}",
                 f"Content-Type: {_header_text(ctype)}", f"Content-Length: {len(body)}",
                 "Cache-Control: no-store", "X-Content-Type-Options: nosniff",
                 f"Connection: {'keep-alive' if keep else 'close'}"]
        for k, v in (extra or {}).items():
            lines.append(f"{_header_text(k)}: {_header_text(v)}")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("ascii"))
        if not head_only:
            writer.write(body)

    # -- routing ----------------------------------------------------------------------
    def route(self, request: Request) -> Response:
        """A GET: the official emulator's health API, else the console's."""
        if (request.path.rstrip("/") or "/") == "/health":
            ok = self.ready()
            return Response(200 if ok else 503, _json(HEALTHY if ok else UNHEALTHY), _JSON)
        return self.console.get(request)


def _refusal(path: str, rest: bool, control: bool, status: int, code: str, message: str) -> Response:
    """A refusal in the error shape of the route family ``path`` belongs to: ARM's JSON for
    management, the Schema Registry and the control APIs; the data plane's XML for REST
    send; plain text for the console's own posts (its pages and API answer their own)."""
    family = path.strip("/").split("/", 1)[0].lower()
    if control or (rest and family in ("subscriptions", "$schemagroups")):
        return arm.fail(status, code, message)
    if rest:
        return error(status, message)
    return Response(status, f"{message}\n".encode(), "text/plain")


async def _drained(writer: asyncio.StreamWriter) -> bool:
    """Whether the client took its answers within READ_TIMEOUT_S (it gets as long to read
    them as to send a request). One that pipelines requests and never reads would hold its
    connection slot, and every answer queued for it, for good: it is cut off (abort: a
    close would wait for the unsent answers to drain)."""
    try:
        await asyncio.wait_for(writer.drain(), READ_TIMEOUT_S)
    except asyncio.TimeoutError:
        log.warning("HTTP client %s read no answer in %.0f s: connection dropped",
                    writer.get_extra_info("peername"), READ_TIMEOUT_S)
        sock = writer.get_extra_info("socket")
        if sock is not None:  # reset at once: else the kernel goes on sending what it holds
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
        return False
    return True


def _header_text(value) -> str:
    """``value`` as a header may carry it: printable ASCII as it stands, anything else
    percent-encoded (UTF-8). A route echoes what a client sent (a name, a path, the Host):
    a CR LF written raw would split the answer, a character past Latin-1 could not be
    written at all. Routes check their names first; this is the last guard."""
    text = str(value)
    if text.isascii() and text.isprintable():
        return text
    log.warning("an HTTP answer's header %r was percent-encoded: a route let it through unchecked",
                text[:200])
    return quote(text, safe=_PRINTABLE_ASCII)


def _json(value) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


async def _first_line(reader: asyncio.StreamReader) -> bytes | None:
    """The request line of a head past the reader's limit (the head is still buffered);
    None where it is itself past the limit, or does not come."""
    try:
        return (await asyncio.wait_for(reader.readuntil(b"\r\n"), 1.0))[:-2]
    except (asyncio.LimitOverrunError, asyncio.IncompleteReadError, asyncio.TimeoutError,
            ConnectionError):
        return None


def _request(writer, method: str, path: str, url, headers: dict, fields: list) -> Request:
    """The request's head (its body comes later, when it has one). A blank query value is
    kept (``?timeout=`` is not an absent timeout); a repeated parameter is its first."""
    peer = writer.get_extra_info("peername")
    query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
    return Request(method, path, query, headers, b"", f"{peer[0]}:{peer[1]}" if peer else "",
                   path.strip("/").split("/"), "https" if writer.get_extra_info("sslcontext") else "http",
                   fields=tuple(fields))
