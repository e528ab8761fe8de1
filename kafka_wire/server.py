"""The Kafka listener: framing, request ordering and back-pressure.

Each connection reads length-prefixed frames into a scratch buffer (large
frames get a buffer of their own, filled by the transport directly), and
handles them strictly one at a time, writing responses in request order,
as a Kafka broker does. A handler that returns an awaitable (a long poll)
makes the connection wait for it; requests that arrive meanwhile queue up to
``connection_buffer_bytes``, then the connection stops reading. While the
transport's write buffer is full (a slow consumer) no further request is
handled, so a client that does not read cannot grow our memory.

Quotas (KIP-219): a handler that sets ``ctx.throttle_ms`` gets that value
written into its response's ``throttle_time_ms``, and the connection is muted
for as long (no reading, no further request handled), timed by the injected
clock. SASL v0: after a SaslHandshake v0 the client's next frame is a bare
SASL token, answered with a bare (length-prefixed) token (``services.auth``).
After each answered request ``services.observer.on_request(header, seconds,
ctx)`` is called (metrics), when an observer is installed.

A failed authentication is answered, then nothing more is read or handled and
the connection closes ``failed_authentication_delay_ms`` later (Kafka's
connection.failed.authentication.delay.ms): every client reads the error
before the close, and guessing keys gets slower. Warnings about one client
address (unauthenticated requests, bad frames) are logged once, then counted.
"""
from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import struct
import time
from collections import deque
from typing import Any

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis import registry
from kafka_wire.apis.fetch_decoding import RepeatedFetch
from kafka_wire.context import ClusterInfo, ConnectionState, RequestContext, Services
from kafka_wire.faults import error_response
from kafka_wire.log_lines import RepeatedWarnings, client_address
from kafka_wire.raw_response import Raw

_FETCH = int(codec.ApiKey.Fetch)

log = logging.getLogger(__name__)

_SCRATCH = 256 * 1024
# A connection starts with a small scratch buffer and gets _SCRATCH once a read
# fills it: idle connections (most of a thousand) then cost KiBs, not 256 KiB.
_SCRATCH_IDLE = 16 * 1024
_LEN = struct.Struct(">i")
# Until SASL succeeds on a namespace that requires it, frames stop here (Apache Kafka's
# sasl.server.max.receive.size): a client without a credential cannot make the broker
# buffer max_request_bytes (100 MiB) on each of its connections.
PRE_AUTH_MAX_BYTES = 512 * 1024
_JOIN_PIECES_BELOW = 256  # answers held in pieces averaging under this many bytes leave joined
_conn_ids = itertools.count(1)
_clock = time.perf_counter
_monotonic = time.monotonic
_repeats = RepeatedWarnings(log)
# First bytes of what is not Kafka, seen as an impossible frame length.
_HTTP_STARTS = (b"GET ", b"POST", b"PUT ", b"HEAD", b"HTTP", b"DELE", b"OPTI", b"PATC", b"PRI ")


def _api_name(key: int) -> str:
    try:
        return f"{codec.ApiKey(key).name} (api key {key})"
    except ValueError:
        return f"api key {key}"


class KafkaConnection(asyncio.BufferedProtocol):
    def __init__(self, server: "KafkaServer") -> None:
        self.server = server
        self.services = server.services
        self.max_request = server.services.config.max_request_bytes
        self.queue_limit = server.services.config.connection_buffer_bytes
        self.transport: asyncio.Transport | None = None
        self.state: ConnectionState | None = None
        self._scratch = bytearray(_SCRATCH_IDLE)
        self._fill = 0             # bytes of _scratch holding data
        self._grow = False         # a read filled the small scratch: give it _SCRATCH
        self._big: bytearray | None = None   # a frame too large for scratch
        self._big_fill = 0
        self._pending: deque[bytes | bytearray] = deque()
        # Answers written while _drain handles a run of pipelined requests, sent in one
        # writelines at its end (one send for many small answers); None: write at once.
        self._out: list | None = None
        self._out_bytes = 0
        self._pending_bytes = 0
        # The last one-partition Fetch, to decode its repeats without parsing (a consumer's).
        self._repeated: RepeatedFetch | None = None
        self._busy = False         # a handler's awaitable is in flight
        self._write_paused = False
        self._read_paused = False
        self._throttled = False    # muted by a quota (KIP-219)
        self._throttle_timer = None
        self._reading = True
        self._closed = False
        self._task: asyncio.Task | None = None
        self._close_timer: asyncio.TimerHandle | None = None
        self.last_client_id: str | None = None
        self.last_active = _monotonic()  # for connections_max_idle_ms
        self._pre_auth = False  # frames held to PRE_AUTH_MAX_BYTES until a SASL login

    # -- asyncio protocol ------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        peer_text = f"{peer[0]}:{peer[1]}" if peer else "?"
        default = self.services.namespaces.get(self.services.default_namespace)
        limit = default.request_limit(self.max_request) if default is not None else self.max_request
        self._pre_auth = default is not None and default.door.requires_auth and limit > PRE_AUTH_MAX_BYTES
        if self._pre_auth:  # (a SASL login sets the namespace's limit)
            limit = PRE_AUTH_MAX_BYTES
        self.state = ConnectionState(peer=peer_text, connection_id=next(_conn_ids),
                                     max_request_bytes=limit)
        self.server.connections.add(self)

    def connection_lost(self, exc) -> None:
        self._closed = True
        self.server.connections.discard(self)
        if self.state is not None:  # its fetch sessions are no one else's: they go now
            self.services.fetch_sessions.drop_connection(self.state.connection_id)
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._pending.clear()
        self._scratch = bytearray()
        self._big = None
        if self._throttle_timer is not None:
            self._throttle_timer.cancel()
            self._throttle_timer = None
        if self._close_timer is not None:
            self._close_timer.cancel()
            self._close_timer = None

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._drain()

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._big is not None:
            return memoryview(self._big)[self._big_fill:]
        if self._grow and len(self._scratch) < _SCRATCH:
            self._scratch.extend(bytes(_SCRATCH - len(self._scratch)))
        elif self._fill == len(self._scratch):
            # Only a partial length prefix or header can be left here.
            self._scratch.extend(bytes(_SCRATCH))
        self._grow = False
        return memoryview(self._scratch)[self._fill:]

    def buffer_updated(self, nbytes: int) -> None:
        self.last_active = _monotonic()
        if self._big is not None:
            self._big_fill += nbytes
            if self._big_fill == len(self._big):
                frame, self._big = self._big, None
                self._enqueue(frame)
            self._drain()
            return
        fill = self._fill = self._fill + nbytes
        buf = self._scratch
        if fill == len(buf) < _SCRATCH:
            self._grow = True  # a busy connection; resized in get_buffer (no view alive then)
        elif (4 <= fill <= _SCRATCH and not self._pending and not self._busy and not self._write_paused
              and not self._throttled and not self._read_paused and not self._closed
              and 0 <= _LEN.unpack_from(buf)[0] == fill - 4 <= self.state.max_request_bytes):
            # Exactly one whole request and nothing queued before it (a consumer's Fetch:
            # librdkafka has one in flight per partition): handled here, its answer
            # written at once, without the queue and the run's held output.
            self._fill = 0
            self._handle(buf[4:fill])
            return
        self._split_scratch()
        self._drain()

    def eof_received(self) -> bool:
        return False

    # -- framing ---------------------------------------------------------
    def _split_scratch(self) -> None:
        buf, pos, fill = self._scratch, 0, self._fill
        limit = self.state.max_request_bytes
        while fill - pos >= 4:
            (size,) = _LEN.unpack_from(buf, pos)
            if size < 0 or size > limit:
                other = self._not_kafka(bytes(buf[pos:pos + 4]))
                if other is not None:
                    self._abort(other[1], repeat_kind=other[0])
                else:
                    self._abort(self._too_large(size) if size > 0 else f"invalid frame length {size}",
                                repeat_kind="frame")
                return
            if fill - pos - 4 >= size:
                # A bytearray: Produce patches record batches in place (no copy).
                self._enqueue(buf[pos + 4:pos + 4 + size])
                pos += 4 + size
                continue
            if size + 4 > len(buf):
                # Too big for scratch: a buffer of its own, filled in place.
                big = bytearray(size)
                have = fill - pos - 4
                big[:have] = buf[pos + 4:fill]
                self._big, self._big_fill = big, have
                pos = fill
            break
        if pos:
            rest = fill - pos
            if rest:
                buf[:rest] = buf[pos:fill]
            self._fill = rest
            if len(buf) > _SCRATCH and rest <= _SCRATCH:
                del buf[_SCRATCH:]

    def _not_kafka(self, start: bytes) -> tuple[str, str] | None:
        """(protocol, what to say) when the first bytes are another protocol's."""
        cfg = self.services.config
        if start in _HTTP_STARTS:
            console = (f"; the HTTP console and health API are at http://{cfg.http_listen_host}:"
                       f"{cfg.http_listen_port}/" if cfg.http_listen_host else "")
            return "http", f"this looks like HTTP, but this port speaks the Kafka protocol{console}"
        if start[:1] == b"\x16" and start[1:2] == b"\x03":
            tls = (f"; the SASL_SSL listener is {cfg.tls_listen_host}:{cfg.tls_listen_port}"
                   if cfg.tls_listen_host else "")
            return "tls", ("this looks like a TLS handshake, but this listener is plaintext: use "
                           f"security.protocol=SASL_PLAINTEXT (or PLAINTEXT) here{tls}")
        return None

    def _too_large(self, size: int) -> str:
        if self._pre_auth and not self.state.authenticated:
            return (f"a request frame of {size} bytes before SASL authentication: at most "
                    f"{PRE_AUTH_MAX_BYTES} until it succeeds (Kafka's sasl.server.max.receive.size)")
        if size <= self.max_request:  # under the broker's limit: the namespace's frame limit
            return self.services.auth.large_frame(self.state, size, self.services.default_namespace)
        return f"request of {size} bytes exceeds max_request_bytes={self.max_request}"

    def _enqueue(self, frame: bytes | bytearray) -> None:
        self._pending.append(frame)
        self._pending_bytes += len(frame)
        if self._pending_bytes > self.queue_limit and not self._read_paused:
            self._read_paused = True
            self._update_reading()

    def _update_reading(self) -> None:
        """Read from the socket unless the queue is full or a quota mutes us."""
        want = not (self._read_paused or self._throttled)
        if want != self._reading and not self._closed:
            self._reading = want
            if want:
                self.transport.resume_reading()
            else:
                self.transport.pause_reading()

    def _throttle(self, ms: int) -> None:
        if ms <= 0 or self._closed:
            return
        if self._throttle_timer is not None:
            self._throttle_timer.cancel()
        self._throttled = True
        self._update_reading()
        self._throttle_timer = self.services.clock.call_later(ms, self._end_throttle)

    def _end_throttle(self) -> None:
        self._throttle_timer = None
        self._throttled = False
        if self._closed:
            return
        self._update_reading()
        self._drain()

    # -- dispatch --------------------------------------------------------
    def _drain(self) -> None:
        """Handle queued requests in order until one must wait."""
        outermost = self._out is None  # (a nested call leaves the outer run's answers held)
        if outermost:
            self._out, self._out_bytes = [], 0
        try:
            while (self._pending and not self._busy and not self._write_paused and not self._closed
                   and not self._throttled):
                frame = self._pending.popleft()
                self._pending_bytes -= len(frame)
                self._handle(frame)
        finally:
            if outermost:
                self._uncork()
        if self._read_paused and self._pending_bytes <= self.queue_limit // 2 and not self._closed:
            self._read_paused = False
            self._update_reading()

    def _handle(self, frame: bytes | bytearray) -> None:
        if self.state.attrs.get("sasl_raw"):
            self._handle_raw_sasl(frame)
            return
        repeated = self._repeated.decode(frame) if self._repeated is not None else None
        if repeated is not None:  # the Fetch before it again, at another offset
            header, request = repeated
        else:
            request = None
            view = memoryview(frame)
            try:
                header = codec.parse_request_header(view)
            except codec.CodecError as exc:
                self._abort(f"malformed request header: {exc}")
                return
        reg = registry.lookup(header.api_key)
        if reg is None or not reg.min_version <= header.api_version <= reg.max_version:
            if header.api_key == codec.ApiKey.ApiVersions:
                # Kafka answers unknown ApiVersions versions in v0 so the client can retry.
                self._write(codec.api_versions_v0_fallback(
                    header, registry.advertised(), Errors.UnsupportedVersionError.errno))
                return
            self._abort(f"unsupported api key {header.api_key} v{header.api_version} "
                        f"from client {header.client_id!r}")
            return
        state = self.state
        if not (state.authenticated or reg.pre_auth or "anonymous" in state.attrs):
            refused = self.services.auth.anonymous(self.services, state)
            if refused is not None:
                self._abort(f"{_api_name(header.api_key)} before authentication: {refused}",
                            repeat_kind="unauthenticated")
                return
        if request is None:
            try:
                request = codec.decode_request(header, view)
            except codec.CodecError as exc:
                self._abort(str(exc))
                return
            if header.api_key == _FETCH:
                self._repeated = RepeatedFetch.of(frame, header, request)
        ctx = RequestContext(header, self.state, self.services, self.server.cluster)
        self.last_client_id = header.client_id
        observer = self.services.observer
        started = _clock() if observer is not None else 0.0
        faults = self.services.faults
        delay = 0.0
        if faults is not None and faults.active:
            stamp, delay = faults.request_faults(ctx, request)
            if stamp is not None:  # answered as failed, not served: nothing of it is done
                try:
                    canned = error_response(header.api_key, header.api_version, request, stamp)
                except Exception:
                    log.exception("injected error for api key %s v%s could not be built; closing %s",
                                  header.api_key, header.api_version, self.state.peer)
                    self._abort(None)
                    return
                if not delay:
                    self._respond(canned, header)
                    return
                self._busy = True
                self._task = asyncio.ensure_future(_late(canned, delay))
                self._task.add_done_callback(
                    lambda t, h=header, c=ctx, s=started: self._on_done(t, h, c, s))
                return
        try:
            result = reg.handler(request, ctx)
        except Exception:
            log.exception("handler for api key %s v%s failed; closing %s",
                          header.api_key, header.api_version, self.state.peer)
            self._abort(None)
            return
        if delay:
            result = _late(result, delay)
        if result.__class__ is Raw and not ctx.throttle_ms and not result.close_after:
            # (a fast path's answer, nothing to mute: _respond's first branch, inlined)
            self._write_many(result.chunks(header))
            if observer is not None:
                observer.on_request(header, _clock() - started, ctx)
            return
        if result.__class__ is not Raw and inspect.isawaitable(result):  # (Raw: the fast paths' answers)
            self._busy = True
            self._task = asyncio.ensure_future(result)
            self._task.add_done_callback(
                lambda t, h=header, c=ctx, s=started: self._on_done(t, h, c, s))
            return
        self._respond(result, header, ctx.throttle_ms)
        if observer is not None:
            observer.on_request(header, _clock() - started, ctx)

    def _handle_raw_sasl(self, frame) -> None:
        """The bare SASL token that follows a SaslHandshake v0."""
        self.state.attrs.pop("sasl_raw", None)
        try:
            reply = self.services.auth.raw_sasl(self.services, self.state, bytes(frame))
        except Exception as exc:  # noqa: BLE001 - outside _handle's try: it escaped the transport
            log.warning("SASL token (after SaslHandshake v0) from %s could not be read: %s: %s",
                        self.state.peer, type(exc).__name__, str(exc)[:200])
            reply = None
        if reply is None:  # v0 has no error answer: only the (delayed) close
            self._close_after_write()
            return
        self._write(_LEN.pack(len(reply)) + reply)

    def _on_done(self, task: asyncio.Task, header, ctx: RequestContext, started: float) -> None:
        self._busy = False
        self._task = None
        self.last_active = _monotonic()
        if self._closed or task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("handler for api key %s v%s failed; closing %s", header.api_key,
                      header.api_version, self.state.peer, exc_info=exc)
            self._abort(None)
            return
        self._respond(task.result(), header, ctx.throttle_ms)
        observer = self.services.observer
        if observer is not None:
            observer.on_request(header, _clock() - started, ctx)
        self._drain()

    def _respond(self, response: Any, header, throttle_ms: int = 0) -> None:
        if response is None:
            self._throttle(throttle_ms)
            return
        if isinstance(response, Raw):
            self._write_many(response.chunks(header))
            if response.close_after:
                self._close_after_write()
            elif throttle_ms > 0:
                self._throttle(throttle_ms)
            return
        if throttle_ms > 0 and hasattr(response, "throttle_time_ms"):
            response.throttle_time_ms = throttle_ms
        try:
            out = codec.encode_response(response, header)
        except Exception:
            log.exception("cannot encode response to api key %s v%s", header.api_key,
                          header.api_version)
            self._abort(None)
            return
        self._write(out)
        self._throttle(throttle_ms)

    def _write(self, data) -> None:
        if not self._closed:
            if self._out is None:
                self.transport.write(data)
                return
            self._out.append(data)
            self._out_bytes += len(data)
            if self._out_bytes >= _SCRATCH:
                self._flush_out()

    def _write_many(self, chunks) -> None:
        if not self._closed:
            if self._out is None:
                if len(chunks) == 1:
                    self.transport.write(chunks[0])
                else:
                    self.transport.writelines(chunks)
                return
            self._out += chunks
            self._out_bytes += sum(map(len, chunks))
            if self._out_bytes >= _SCRATCH:
                self._flush_out()

    def _flush_out(self) -> None:
        """Send the answers held so far (large ones at once: the transport's
        pause_writing must see them before more requests are handled). Many
        small pieces (pipelined Produce answers) are joined into one ``write``:
        uvloop's ``writelines`` pays per piece (100 pieces averaging 60 B: 7.5 us
        of CPU, joined and written 4.6), but a join of larger pieces costs more
        than it saves (8 pieces totalling 60 KB: 5.5 us as they are, 41 joined), and a
        Fetch's mapped record batches must go uncopied."""
        out, self._out = self._out, []
        size, self._out_bytes = self._out_bytes, 0
        if out and not self._closed:
            if len(out) == 1:
                self.transport.write(out[0])
            elif size < len(out) * _JOIN_PIECES_BELOW:
                self.transport.write(b"".join(out))
            else:
                self.transport.writelines(out)

    def _uncork(self) -> None:
        if self._out is not None:
            self._flush_out()
            self._out = None

    def _abort(self, reason: str | None, repeat_kind: str | None = None) -> None:
        """Close now. ``repeat_kind``: count repeats of this kind from one client
        address instead of logging each (a misconfigured client retries fast)."""
        self._uncork()  # answers to earlier requests go out first, as they would have
        if reason:
            peer = self.state.peer if self.state else "?"
            message = f"closing connection {peer}: {reason}"
            if repeat_kind is None:
                log.warning("%s", message)
            else:
                _repeats.warn(repeat_kind, client_address(peer), message)
        self._closed = True
        self._pending.clear()
        if self.transport is not None:
            self.transport.abort()

    def _close_after_write(self) -> None:
        """After a failed authentication: read and handle nothing more, and close
        (once the answer is sent) ``failed_authentication_delay_ms`` later."""
        self._uncork()
        self._closed = True
        self._pending.clear()
        if self.transport is None:
            return
        delay_ms = self.services.config.failed_authentication_delay_ms
        if delay_ms <= 0:
            self.transport.close()
            return
        self.transport.pause_reading()
        self._reading = False
        # Wall time, not the injected clock: the socket and the client are real.
        self._close_timer = asyncio.get_running_loop().call_later(delay_ms / 1000, self._delayed_close)

    def _delayed_close(self) -> None:
        self._close_timer = None
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def idle_for(self, now: float) -> float:
        """Seconds without traffic; 0 while a request, a queue, a quota or a slow
        reader still holds the connection."""
        if self._busy or self._pending or self._throttled or self._write_paused:
            return 0.0
        return now - self.last_active

    def close(self) -> None:
        self._abort(None)


async def _late(result, delay: float):
    """An injected delay: the answer (a handler's, or an injected error) ``delay`` s late."""
    if inspect.isawaitable(result):
        result = await result
    await asyncio.sleep(delay)
    return result


class KafkaServer:
    """Owns the listening socket and the set of live connections."""

    def __init__(self, services: Services, cluster: ClusterInfo) -> None:
        self.services = services
        self.cluster = cluster  # this listener's identity: Metadata advertises its address
        self.connections: set[KafkaConnection] = set()
        self._server: asyncio.base_events.Server | None = None
        self._sweeper: asyncio.TimerHandle | None = None
        registry.load_all()

    async def start(self, host: str, port: int, ssl=None) -> tuple[str, int]:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: KafkaConnection(self), host, port, ssl=ssl, reuse_address=True, backlog=1024)
        sock = self._server.sockets[0]
        bound = sock.getsockname()
        if self.services.config.connections_max_idle_ms > 0:
            self._schedule_sweep(loop)
        return bound[0], bound[1]

    # Kafka (connections.max.idle.ms, 10 min) and Event Hubs (240 s) close idle
    # connections; wall time, not the injected clock: sockets are real.
    def _sweep_period(self) -> float:
        return min(30.0, max(0.05, self.services.config.connections_max_idle_ms / 4000.0))

    def _schedule_sweep(self, loop) -> None:
        self._sweeper = loop.call_later(self._sweep_period(), self._sweep, loop)

    def _sweep(self, loop) -> None:
        limit = self.services.config.connections_max_idle_ms / 1000.0
        now = _monotonic()
        for conn in list(self.connections):
            idle = conn.idle_for(now)
            if idle >= limit:
                log.info("closing connection %s: idle for %.0f s (connections_max_idle_ms=%d)",
                         conn.state.peer if conn.state else "?", idle,
                         self.services.config.connections_max_idle_ms)
                conn.close()
        if self._server is not None:
            self._schedule_sweep(loop)

    def close_connections(self) -> None:
        for conn in list(self.connections):
            conn.close()

    async def stop(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        if self._server is not None:
            self._server.close()
            self.close_connections()
            await self._server.wait_closed()
            self._server = None
