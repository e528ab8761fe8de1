"""One AMQP connection: bytes in and out of proton's engine, on the broker's loop.

Proton's ``Transport``/``Connection``/``Collector`` do the framing,
performatives, sessions, links, flow control and encoding without I/O of
their own: bytes received are pushed into the transport, the collector's
events are handled here (links are handed to the node they address), and
what the transport has to send is written to the socket. Proton's idle
timeout runs from ``tick``, scheduled on the loop.

The SASL exchange comes first (:mod:`.sasl`). The ``open`` frame's hostname
(else SASL's) selects the namespace, as the Kafka endpoint's connection
string does. Links are authorized by tokens put on ``$cbs`` (:mod:`.cbs`), or
by SASL PLAIN credentials, or by nothing where the namespace does not require
authentication.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from typing import TYPE_CHECKING

from cproton import ffi as _ffi
from cproton import lib as _pn
from proton import (Collector, Condition, Connection, Delivery, Event, EventType, Link, Session, Terminus,
                    Transport, symbol)

from kafka_wire.amqp import addresses, websocket
from kafka_wire.amqp.frames import FramePadder, dispositions
from kafka_wire.amqp.input_frames import InputFrames
from kafka_wire.amqp.sasl import SaslError, SaslServer
from kafka_wire.eventhubs.auth import USERNAME, AuthError, split_plain
from kafka_wire.eventhubs.door import (ConnectionString, Refusal, Refused, SasKey, door_for_credential,
                                       door_for_host)
from kafka_wire.eventhubs.refusals import Denial
from kafka_wire.log_lines import RepeatedWarnings, client_address, shortened

if TYPE_CHECKING:
    from kafka_wire.amqp.server import AmqpServer
    from kafka_wire.context import NamespaceRuntime
    from kafka_wire.eventhubs.auth import Principal

log = logging.getLogger(__name__)
_repeats = RepeatedWarnings(log)
_ids = itertools.count(1)

# The largest frame clients may send us (our open's max-frame-size). 256 KiB: a 1 MiB batch from
# the SDKs arrives in 4 transfer frames, not 16 (broker CPU per event sent 0.87x of 64 KiB's);
# 1 MiB cost more with events of differing sizes (1.28x), and each connection holds one partial frame.
MAX_FRAME = 256 * 1024
SPLICE_ROOM = 128  # a transfer frame's header and performative, padded, with room to spare
# Advertised in our open frame, as the service advertises 120 s; a connection that
# sends nothing for this long is closed with amqp:connection:forced, as the service
# closes an inactive one: the SDKs retry that condition and reconnect on their next
# operation (an idle producer sends no heartbeats). Tests lower it.
IDLE_TIMEOUT_S = 120.0
CONNECTION_FORCED = "amqp:connection:forced"
# Until proton's engine runs (and its idle timeout with it), the SASL exchange, the AMQP
# header and any WebSocket upgrade must be done within this, or the connection is closed.
HANDSHAKE_TIMEOUT_S = 30.0
LINGER_S = 2.0  # after our close frame, how long the client may take to close its side

UNAUTHORIZED = "amqp:unauthorized-access"
NOT_FOUND = "amqp:not-found"
NOT_ALLOWED = "amqp:not-allowed"
INTERNAL = "amqp:internal-error"
INVALID_FIELD = "amqp:invalid-field"
RESOURCE_LIMIT = "amqp:resource-limit-exceeded"
MESSAGE_SIZE_EXCEEDED = "amqp:link:message-size-exceeded"
DETACH_FORCED = "amqp:link:detach-forced"
DECODE_ERROR = "amqp:decode-error"
# A Disabled hub (or application group): the service's condition, which the SDKs do not
# retry (azure-eventhub's NO_RETRY_ERRORS), so the application hears of it.
ENTITY_DISABLED = "com.microsoft:entity-disabled"
SERVER_BUSY = "com.microsoft:server-busy"

# The namespace's refusals as the AMQP conditions Event Hubs sends.
CONDITIONS: dict[Refusal, str] = {
    Refusal.UNAUTHENTICATED: UNAUTHORIZED,
    Refusal.ADDRESS: UNAUTHORIZED,
    Refusal.DENIED: UNAUTHORIZED,
    Refusal.NOT_FOUND: NOT_FOUND,
    Refusal.INVALID: NOT_ALLOWED,
    Refusal.LIMIT: RESOURCE_LIMIT,
    Refusal.TOO_LARGE: MESSAGE_SIZE_EXCEEDED,
    Refusal.UNSUPPORTED: NOT_ALLOWED,
    Refusal.DISABLED: NOT_ALLOWED,
    Refusal.BUSY: SERVER_BUSY,        # over the throughput units for longer than a send waits
    Refusal.REPLICATION: SERVER_BUSY,  # geo-replication lag past its limit, or failing over: retriable
    Refusal.FAILED: INTERNAL,
}


def condition_for(denial: Denial) -> Condition:
    """A refusal of the namespace as the AMQP error Event Hubs sends."""
    return Condition(CONDITIONS[denial.reason], denial.message)


class _Event:
    """A proton event as :meth:`AmqpConnection._dispatch` reads it. Proton's own
    :class:`~proton.Event` wraps the event's delivery, link, session and connection
    when it is made, a third of the send path's broker time (one event per transfer
    frame); these are wrapped when asked for."""
    __slots__ = ("_impl", "type")

    def __init__(self, impl) -> None:
        self._impl = impl
        self.type = EventType.TYPES[_pn.pn_event_type(impl)]

    @property
    def delivery(self):
        return Delivery.wrap(_pn.pn_event_delivery(self._impl))

    @property
    def link(self):
        return Link.wrap(_pn.pn_event_link(self._impl))

    @property
    def session(self):
        return Session.wrap(_pn.pn_event_session(self._impl))

    @property
    def connection(self):
        return Connection.wrap(_pn.pn_event_connection(self._impl))

    @property
    def transport(self):  # only for a transport error: proton's event, as it reads it
        return Event.wrap(self._impl).transport


class LinkHandler:
    """What a node does with a link attached to it (the default: nothing).
    Subclasses set ``conn`` and ``link``."""
    conn: AmqpConnection
    link: object
    # The largest message the link takes (None: the namespace's publication limit);
    # the connection refuses a larger one as its frames arrive, before a handler sees it.
    max_message_bytes: int | None = None
    token_timer = None  # the check of the token that authorized the link (watch_token)
    token_watch = None  # (link, hub, right) that check is for, to re-arm it on a renewal
    # The hub a sender or receiver is attached to, and who attached it (None: a $cbs or
    # $management link): hubs_changed detaches it when the hub is made Disabled or deleted.
    hub: str | None = None
    principal = None

    def detach(self, condition: str, description: str) -> None:
        """End the link with an error, as the service does (a stolen partition,
        an expired token)."""
        link = self.link
        self.conn.end_link(link)
        link.condition = Condition(condition, description)
        link.close()
        self.conn.pump()

    def on_flow(self) -> None:
        pass

    def on_delivery(self, delivery) -> None:
        pass

    def on_close(self) -> None:
        pass


WRITE_PARTS = 1024  # pieces of the padder's output joined into one write (see _write_parts)
# What a connection reads into (get_buffer): one buffer per thread (per broker loop; tests run
# several), shared by its connections, as each read is handed to proton before the next one.
READ_BYTES = 256 * 1024
_reads = threading.local()
PEEK_KEPT = 1 << 20  # the most of proton's output a connection keeps a buffer for
# The most receivers hand one connection to send in a turn (their events, encoded, and the
# transfer frames around them), before its flush writes them out. Only the transport's
# pause_writing stopped them, and nothing is written before the flush: a client that
# granted credit and never read made the broker hold its whole credit window (123 MB).
# Past it a turn ends (consume.ConsumeLink.on_flow); the next starts at once if the transport
# took what was written, else when it drains (resume_writing). A connection's unsent bytes
# stay under this, plus one event, plus the transport's high-water mark (64 KiB).
SEND_BUDGET = 4 << 20
TRANSFER_BYTES = 48  # a transfer frame's header and padded performative, what on_flow counts per event
_NO_BUFFER = _ffi.new("char[]", 0)


class AmqpConnection(asyncio.BufferedProtocol):
    def __init__(self, server: AmqpServer) -> None:
        self.server = server
        self.services = server.services
        # Injected faults (kafka_wire.fault_plan): hooks check ``fault_plan.active`` first.
        faults = self.services.faults
        self.fault_plan = faults.plan if faults is not None else None
        self.id = next(_ids)
        self.peer = "?"
        self.transport: asyncio.Transport | None = None
        self.sasl = SaslServer(self._sasl_login)
        self.engine: Transport | None = None
        self.connection: Connection | None = None
        self.collector: Collector | None = None
        self.namespace: NamespaceRuntime | None = None
        self.sasl_principal: Principal | None = None
        self.tokens: dict[str, Principal] = {}   # audience -> principal, from $cbs
        self.container: str | None = None
        self._tick: asyncio.TimerHandle | None = None
        self._idle_timer = None  # on the broker's clock (see _idle_check)
        self._deadline: asyncio.TimerHandle | None = None
        self._closed = False
        self._linger_timer = None
        self._write_paused = False
        self._in_pump = False
        self.queued = 0  # bytes receivers handed over since the last flush (see SEND_BUDGET)
        self._next_turn: asyncio.Handle | None = None  # a turn cut short by the budget goes on
        self._turns = 0  # which handler goes first in a turn (see _give_turns)
        self.handlers: set[LinkHandler] = set()
        # Receivers holding deliveries to settle once proton has written them (consume.py)
        self.settling: set = set()
        self.tags = 0  # the last delivery tag a receiver used: unique on the connection (frames.py)
        self.run_tags = None  # where receivers' run tags are made for proton (consume.RunTagSlots)
        self._forgotten: list = []  # ended receivers whose unwritten payloads go after a flush
        self._disposing: list = []  # [channel, first id, last] the receivers settle (dispose)
        # What proton holds for the peer until we free it: sessions with their links.
        self.sessions: dict[object, set] = {}
        self.links: set = set()
        self._partial: dict[object, int] = {}  # delivery -> bytes buffered, while partial
        self._partial_bytes = 0
        self._auth_deadline: asyncio.TimerHandle | None = None
        self.scanner = None
        self.padder: FramePadder | None = None
        self._peek_buf = _NO_BUFFER  # proton's output is copied out through it (see _flush)
        # AMQP over WebSockets: the first bytes decide (b"GET " is an upgrade request)
        self._sniff: bytearray | None = bytearray()
        self._handshake: websocket.Handshake | None = None
        self._frames: websocket.FrameReader | None = None

    # -- asyncio ------------------------------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        most = self.services.config.bounds.amqp_connections
        if len(self.server.connections) >= most:  # refused before any buffer is spent on it
            _repeats.warn("amqp-connections", client_address(self.peer),
                          f"AMQP connection from {self.peer} closed: {most} connections are open, "
                          "the most [limits] amqp_connections allows")
            self._closed = True
            transport.close()
            return
        self.server.connections.add(self)
        self._deadline = asyncio.get_running_loop().call_later(HANDSHAKE_TIMEOUT_S, self._too_slow)

    def _too_slow(self) -> None:
        self._deadline = None
        if self.engine is None and not self._closed:
            _repeats.warn("amqp-handshake", client_address(self.peer),
                          f"closing AMQP connection from {self.peer}: no AMQP header within "
                          f"{HANDSHAKE_TIMEOUT_S:g} s of connecting")
            self.abort()

    def get_buffer(self, sizehint: int) -> memoryview:
        """Read into a buffer of ours, not a new bytes each time: uvloop copies every
        read of a Protocol into one (a megabyte per batch sent, 3% of the send path)."""
        buf = getattr(_reads, "buf", None)
        if buf is None:
            buf = _reads.buf = memoryview(bytearray(READ_BYTES))
        return buf

    def buffer_updated(self, nbytes: int) -> None:
        data = _reads.buf[:nbytes]
        if self.engine is not None and self._frames is None and not self._closed:
            # The AMQP frames after the handshake: handed to proton (which copies them)
            # through InputFrames, which keeps nothing of the buffer.
            self._amqp_received(data)
        else:  # (the handshake, WebSocket frames, a lingering close: may keep what they read)
            self.data_received(bytes(data))

    def data_received(self, data: bytes) -> None:
        """What was read (from buffer_updated, or from the HTTP listener for a connection
        it upgraded to a WebSocket)."""
        if self._closed:
            if self._frames is not None and self._linger_timer is not None:
                self._lingering_websocket(data)
            return
        if self._frames is not None:
            self._websocket_received(data)
            return
        if self._sniff is not None:
            self._sniff += data
            if len(self._sniff) < 4:
                return
            data, self._sniff = bytes(self._sniff), None
            if data.startswith(b"GET "):
                self._handshake = websocket.Handshake()
        if self._handshake is not None:
            self._upgrade(data)
            return
        self._amqp_received(data)

    def upgraded(self) -> None:
        """The HTTP listener has already answered the upgrade: WebSocket frames from here."""
        self._sniff = None
        self._frames = websocket.FrameReader()
        self.transport = websocket.FramedTransport(self.transport)

    def _upgrade(self, data: bytes) -> None:
        done = self._handshake.feed(data)
        if done is None:
            return
        reply, accepted, rest = done
        self._handshake = None
        self._write(reply)
        if not accepted:
            status = reply.split(b"\r\n", 1)[0].decode("latin-1")
            _repeats.warn("amqp-handshake", client_address(self.peer),
                          f"closing connection from {self.peer}: a WebSocket upgrade that cannot "
                          f"be served ({status})")
            self.abort()
            return
        self.upgraded()
        if rest:
            self._websocket_received(rest)

    def _websocket_received(self, data: bytes) -> None:
        try:
            messages = self._frames.feed(data)
        except websocket.WebSocketError as exc:
            _repeats.warn("amqp-websocket", client_address(self.peer),
                          f"closing WebSocket from {self.peer}: {exc}")
            self.transport.close(exc.status)
            self._closed = True
            return
        for n, (opcode, payload) in enumerate(messages):
            if self._closed:  # (the AMQP close just handled: its client's close frame may follow)
                if self._linger_timer is not None and any(op == websocket.CLOSE for op, _ in messages[n:]):
                    self._answer_close(1000)
                return
            if opcode == websocket.BINARY:
                self._amqp_received(payload)
            elif opcode == websocket.PING:
                self.transport.control(websocket.PONG, payload)
            elif opcode == websocket.CLOSE:
                self.transport.close(1000)
                self._closed = True
                return

    def _amqp_received(self, data) -> None:
        """AMQP bytes after the protocol header (bytes, or a view of the read buffer from
        buffer_updated once the engine runs): SASL until it is done, then the frames."""
        if self.engine is None:
            try:
                reply = self.sasl.feed(data)
            except SaslError as exc:
                _repeats.warn("amqp-handshake", client_address(self.peer),
                              f"closing AMQP connection from {self.peer}: {exc}")
                self._write(exc.reply)
                self.abort()
                return
            self._write(reply)
            if not self.sasl.done:
                return
            self._start_engine()
            data = self.sasl.leftover
            if not data:
                return
        self._last_input = self.services.clock.now_ms()
        self._push(self.scanner.feed_parts(data), self.scanner.ended)

    def _linger(self) -> None:
        """Our close frame is out: drop what the client still sends until it closes
        too, for at most :data:`LINGER_S`. Closing at once would reset the socket
        under frames it pipelined, and it would see a broken pipe, not our error."""
        transport = self.transport
        self._linger_timer = asyncio.get_running_loop().call_later(LINGER_S, transport.close)

    def _lingering_websocket(self, data: bytes) -> None:
        """Lingering over a WebSocket: the client's close frame is answered at once.
        Clients wait for that answer before they go on (the Python SDK's websocket-client
        up to 3 s: it was 2 s, the linger, per connection); the AMQP frames they still
        send are dropped as on a plain socket."""
        try:
            closing, status = any(opcode == websocket.CLOSE for opcode, _ in self._frames.feed(data)), 1000
        except websocket.WebSocketError as exc:
            closing, status = True, exc.status
        if closing:
            self._answer_close(status)

    def _answer_close(self, status: int) -> None:
        self._linger_timer.cancel()
        self.transport.close(status)

    def eof_received(self) -> bool:
        if self._closed:  # lingering after our close: the client has closed too
            self.transport.close()
            return False
        if self.engine is not None:
            self.engine.close_tail()
            self.pump()
        return False

    def connection_lost(self, exc) -> None:
        self._closed = True
        if self._linger_timer is not None:
            self._linger_timer.cancel()
        self.server.connections.discard(self)
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        if self._tick is not None:
            self._tick.cancel()
        if self._next_turn is not None:
            self._next_turn.cancel()
            self._next_turn = None
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._auth_deadline is not None:
            self._auth_deadline.cancel()
            self._auth_deadline = None
        for handler in list(self.handlers):
            # The link holds its handler in proton's record, out of the cycle collector's
            # sight, and the handler holds the link: a cycle that kept the connection's
            # proton objects (every delivery it sent) alive after it closed.
            handler.link.kw_node = None
            _cancel_token_timer(handler)  # it holds the handler (and so proton's objects) until it fires
            try:
                handler.on_close()
            except Exception:
                log.exception("closing a link of %s", self.peer)
        self.handlers.clear()
        self.settling.clear()
        self._forgotten.clear()
        if self.padder is not None:  # it holds receivers (and so proton's objects) by their tags
            self.padder.clear()
        self.sessions.clear()
        self.links.clear()
        self._partial.clear()
        if self.engine is not None:
            self.engine.unbind()
        self.engine = self.connection = self.collector = None

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._give_turns()
        self.pump()

    @property
    def writable(self) -> bool:
        """Whether receivers may hand over more to send: not while the transport's buffer
        is past its high-water mark, nor past :data:`SEND_BUDGET` in this turn."""
        return not self._write_paused and not self._closed and self.queued < SEND_BUDGET

    def _give_turns(self) -> None:
        """Let every link send what it may, the first in turn another each time: the budget
        of a turn goes to the links in order, and the first one with credit to spare would
        otherwise take it every time."""
        handlers = list(self.handlers)
        if len(handlers) > 1:
            first = self._turns % len(handlers)
            self._turns += 1
            handlers = handlers[first:] + handlers[:first]
        for handler in handlers:
            if handler in self.handlers:  # (not ended by an earlier one's fault or detach)
                handler.on_flow()

    def _turn(self) -> None:
        """The last turn ended at the budget and its flush is written: the links go on,
        unless the transport is past its high-water mark (then resume_writing goes on)."""
        self._next_turn = None
        if self._write_paused or self._closed or self.engine is None:
            return
        self._give_turns()
        self.pump()

    # -- the engine ---------------------------------------------------------------------
    def _start_engine(self) -> None:
        engine = Transport(Transport.SERVER)
        engine.max_frame_size = MAX_FRAME
        engine.idle_timeout = 2 * IDLE_TIMEOUT_S  # proton advertises half of it
        self._idle_limit = IDLE_TIMEOUT_S
        # On the broker's clock (ms): a virtual clock moved past it closes the connection
        self._last_input = self.services.clock.now_ms()
        self._idle_timer = self.services.clock.call_later(int(IDLE_TIMEOUT_S * 1000),
                                                          self._idle_check)
        conn = Connection()
        conn.kw_peer = self.peer  # for refuse()'s log line
        collector = Collector()
        conn.collect(collector)
        engine.bind(conn)
        self.engine, self.connection, self.collector = engine, conn, collector
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self.padder = FramePadder(self.peer)
        self.scanner = InputFrames(MAX_FRAME)

    def _push(self, parts: list, ended: bool = True) -> None:
        """Hand proton ``parts`` in turn, then handle what they made it do, once (as when
        they were one piece), and only if they ``ended`` a frame: a transfer frame's
        first bytes make proton do nothing, and a pump costs a flush and a tick."""
        pushed = False
        for data in parts:
            view = memoryview(data)
            while len(view) and self.engine is not None:
                room = self.engine.capacity()
                if room < 0:  # the transport's input is closed: drop what follows
                    break
                n = min(room, len(view)) if room else len(view)
                self.engine.push(view[:n])  # (proton copies it: no bytes of it made first)
                view = view[n:]
                pushed = True
                if len(view):
                    self.pump()  # (proton's input has room for the rest once it is handled)
        if pushed and ended:
            self.pump()

    def pump(self) -> None:
        """Handle the engine's events, then send what it has to send."""
        if self.engine is None or self._in_pump:
            return
        self._in_pump = True
        try:
            collector = self.collector._impl
            peek, pop = _pn.pn_collector_peek, _pn.pn_collector_pop
            null = _ffi.NULL
            while True:
                impl = peek(collector)
                if impl == null:
                    break
                event = _Event(impl)
                try:
                    self._dispatch(event)
                except Exception:
                    log.exception("AMQP connection %s: error handling %s", self.peer, event.type)
                    self._fail(INTERNAL, "the broker failed to handle a frame; see its log")
                pop(collector)
            self._flush()
        finally:
            self._in_pump = False

    def _flush(self) -> None:
        engine = self.engine
        if engine is None:
            return
        while True:
            pending = engine.pending()
            if self.settling and self._settle_sent():
                pending = engine.pending()  # with the disposition of what was settled
            if pending < 0:  # everything sent and the connection closed
                if self.transport is not None and not self._closed:
                    self._closed = True
                    self._linger()
                return
            if pending == 0:
                conn = self.connection
                if (engine.capacity() < 0 and conn is not None and conn.state & conn.LOCAL_CLOSED
                        and self.transport is not None and not self._closed):
                    # Input over and our close handed over: proton writes nothing more
                    # (after a frame it could not decode it does not even write the close).
                    self.transport.close()
                    self._closed = True
                    return
                break
            # Into a C buffer the connection keeps, then one bytes (Transport.peek copies it
            # twice more; a new zeroed bytearray each flush, then bytes of it, cost an
            # allocation and a fill more)
            out = self._peek_buf
            if len(out) < pending:
                out = _ffi.new("char[]", max(pending, 2 * len(out), 4096))
                if len(out) <= PEEK_KEPT:  # (a rare large output, a carried event's, is not kept)
                    self._peek_buf = out
            if _pn.pn_transport_peek(engine._impl, out, pending) < 0:
                break
            chunk = _ffi.unpack(out, pending)
            engine.pop(pending)
            self._write_parts(self.padder.feed_parts(chunk))
        if self.queued:
            # A turn that reached the budget cut its links short: the next one goes on after
            # what waits on the loop (other connections), unless the transport paused us
            if self.queued >= SEND_BUDGET and self._next_turn is None and not self._closed:
                self._next_turn = asyncio.get_running_loop().call_soon(self._turn)
            self.queued = 0
        if self._forgotten:
            # Proton writes no transfer of a link after the flush that held its detach
            forgotten, self._forgotten = self._forgotten, []
            for owner in forgotten:
                self.padder.forget(owner)
        self._schedule_tick()

    def largest_spliced(self) -> int:
        """The largest event a receiver hands the padder rather than proton (see
        frames.FramePadder): what fits in one frame the client takes."""
        remote = self.engine.remote_max_frame_size if self.engine is not None else 0
        return (remote or MAX_FRAME) - SPLICE_ROOM

    def forget_payloads(self, owner) -> None:
        """``owner`` (a receiver) has ended: after the next flush, the padder drops
        what it holds of it that proton did not write."""
        self._forgotten.append(owner)

    def _settle_sent(self) -> bool:
        """Let each receiver settle the deliveries proton has just written; True when
        proton has dispositions to write. Those of the runs proton holds settled already
        (consume.ConsumeLink.on_flow) the broker writes itself, here: after their transfers,
        before what proton writes next."""
        settled = False
        for handler in list(self.settling):  # each leaves the set once it holds none
            settled = handler.settle_sent() or settled
        if self._disposing:
            ranges, self._disposing = self._disposing, []
            conn = self.connection
            if conn is not None and not conn.state & conn.LOCAL_CLOSED:  # (none after the close)
                self._write_parts(dispositions(ranges))
        return settled

    def dispose(self, ranges: list) -> None:
        """Settle (accepted) the unsettled transfers ``ranges`` ([channel, first delivery id,
        last]) name, in the disposition frames :meth:`_settle_sent` writes."""
        self._disposing += ranges

    def _schedule_tick(self) -> None:
        if self.engine is None or self._closed:
            return
        loop = asyncio.get_running_loop()
        if self._idle_expired(self.services.clock.now_ms()):
            return
        deadline = self.engine.tick(loop.time())
        timer = self._tick
        if timer is not None:
            if deadline and timer.when() <= deadline:
                return  # it fires first, ticks and schedules again: not replaced on every flush
            timer.cancel()
            self._tick = None
        if deadline:
            self._tick = loop.call_at(deadline, self._on_tick)

    def _idle_expired(self, now: int) -> bool:
        """Close a connection idle for the idle timeout, long before proton's own
        expiry (twice that) would close it with amqp:resource-limit-exceeded, which
        the SDKs do not retry."""
        conn = self.connection
        if (not self._idle_limit or now - self._last_input < self._idle_limit * 1000 or conn is None
                or conn.state & conn.LOCAL_CLOSED):
            return False
        log.info("AMQP connection %s from %s idle for %g s: closing it (the client reconnects "
                 "when it needs it)", self.id, self.peer, self._idle_limit)
        self._fail(CONNECTION_FORCED, f"the connection was inactive for more than the allowed "
                                      f"{self._idle_limit * 1000:.0f} milliseconds")
        self._flush()  # (called from a flush: pump() would not write the close)
        return True

    def _idle_check(self) -> None:
        """The idle timer on the broker's clock: re-armed for what is left, or the
        connection closed (by the flush :meth:`_idle_expired` runs in)."""
        self._idle_timer = None
        if self.engine is None or self._closed:
            return
        left = int(self._idle_limit * 1000) - (self.services.clock.now_ms() - self._last_input)
        if left > 0:
            self._idle_timer = self.services.clock.call_later(left, self._idle_check)
        else:
            self.pump()

    def _on_tick(self) -> None:
        self._tick = None
        self.pump()

    def _write(self, data) -> None:
        if data and self.transport is not None and not self.transport.is_closing():
            self.transport.write(bytes(data))

    def _write_parts(self, parts: list) -> None:
        """Proton's padded output, its pieces joined into writes: uvloop's
        ``writelines`` costs more per piece (two a transfer) than the join's copy.
        A few hundred KB at a time (:data:`WRITE_PARTS` pieces, about four a transfer),
        not a credit window's megabytes in one: the join then writes into memory still
        in the cache from the last, not fresh pages, and the socket's copy reads it there."""
        if len(parts) <= WRITE_PARTS:
            if parts:
                self._write(b"".join(parts))
            return
        join = b"".join
        for i in range(0, len(parts), WRITE_PARTS):
            self._write(join(parts[i:i + WRITE_PARTS]))

    def abort(self) -> None:
        self._closed = True
        if self.transport is not None:
            self.transport.close()

    def _fail(self, condition: str, description: str) -> None:
        if self.connection is not None:
            self.connection.condition = Condition(condition, description)
            self.connection.close()

    def forced(self, description: str) -> None:
        """Close the connection with amqp:connection:forced, as the service does."""
        self._fail(CONNECTION_FORCED, description)
        self.pump()

    def close(self) -> None:
        """The broker is stopping: close the connection."""
        if self.connection is not None and not self._closed:
            self._fail("amqp:connection:forced", "the broker is shutting down")
            self.pump()
        self.abort()

    # -- events -------------------------------------------------------------------------
    def _dispatch(self, event) -> None:
        kind = event.type
        if kind == Event.CONNECTION_REMOTE_OPEN:
            self._on_open(event.connection)
        elif kind == Event.SESSION_REMOTE_OPEN:
            self._on_begin(event.session)
        elif kind == Event.LINK_REMOTE_OPEN:
            link = event.link
            if self._admit_link(link):
                self._on_attach(link)
            if self.scanner is not None:  # read during the attach only: kept, they piled up
                self.scanner.capabilities.pop(link.name, None)
        elif kind == Event.LINK_FLOW:
            handler = getattr(event.link, "kw_node", None)
            if handler is not None:
                handler.on_flow()
        elif kind == Event.DELIVERY:
            delivery = event.delivery
            link = delivery.link
            handler = getattr(link, "kw_node", None)
            if link.is_receiver:
                if getattr(delivery, "kw_format", None) is None:  # first seen: its transfer's format
                    tag = _pn.pn_delivery_tag(delivery._impl)  # (bytes: Delivery.tag decodes UTF-8)
                    tag = _ffi.unpack(tag.start, tag.size)
                    delivery.kw_format = self.scanner.take_format(link.name, tag) or 0
                if not self._admit_transfer(delivery, handler):
                    return
            if handler is not None:
                handler.on_delivery(delivery)
        elif kind in (Event.LINK_REMOTE_CLOSE, Event.LINK_REMOTE_DETACH):
            link = event.link
            self.end_link(link)
            if link.state & link.LOCAL_ACTIVE:
                link.close()
            self._release_link(link)
        elif kind == Event.SESSION_REMOTE_CLOSE:
            session = event.session
            if session.state & session.LOCAL_ACTIVE:
                session.close()
            self._release_session(session)
        elif kind == Event.CONNECTION_REMOTE_CLOSE:
            conn = event.connection
            if conn.state & conn.LOCAL_ACTIVE:
                conn.close()
        elif kind == Event.TRANSPORT_ERROR:
            condition = event.transport.condition
            _repeats.warn("amqp-transport", client_address(self.peer),
                          f"AMQP connection from {self.peer}: "
                          f"{condition.name if condition else 'error'}: "
                          f"{condition.description if condition else ''}")
        elif kind == Event.TRANSPORT_TAIL_CLOSED:
            # Input ended (EOF, or a frame proton could not decode, which it reports
            # by closing its input and nothing else): close our side too, or the
            # connection would wait for a close that cannot come.
            conn = self.connection
            if conn is not None and not conn.state & conn.LOCAL_CLOSED:
                if not conn.state & conn.REMOTE_CLOSED:
                    _repeats.warn("amqp-transport", client_address(self.peer),
                                  f"AMQP connection from {self.peer}: input ended without a close")
                    self._fail(DECODE_ERROR, "the input ended without a close frame "
                                                    "(or held a frame that does not decode)")
                else:
                    conn.close()
        elif kind == Event.TRANSPORT_CLOSED:
            self._flush()

    def _on_open(self, conn: Connection) -> None:
        host = conn.remote_hostname or self.sasl.hostname
        self.container = conn.remote_container
        conn.container = "kafka-wire"
        conn.hostname = host or ""
        # The SDKs' pyamqp reads every field of the open frame, properties (the
        # last) included; proton omits trailing empty fields unless this is set.
        conn.properties = {symbol("product"): "kafka-wire", symbol("platform"): "python"}
        conn.open()
        try:  # the namespace's door: which one the host names, and its IP filter (it logs)
            door = door_for_host(self.services, host.split(":")[0] if host else None)
            door.admit(self.peer, "AMQP connection")
        except Refused as exc:
            self._fail(CONDITIONS[exc.reason], exc.message)
            return
        runtime = door.runtime
        if self.sasl_principal is not None and self.sasl_principal.namespace != runtime.name:
            self._fail(UNAUTHORIZED, f"the SASL credentials are for namespace "
                                     f"{self.sasl_principal.namespace!r}, not {runtime.name!r}")
            return
        self.namespace = runtime
        log.debug("AMQP connection %s from %s opened on namespace %s", self.id, self.peer, runtime.name)
        if door.requires_auth and self.sasl_principal is None:
            timeout = self.server.limits.unauthenticated_timeout_s
            self._auth_deadline = asyncio.get_running_loop().call_later(
                timeout, self._unauthenticated, timeout)

    def _unauthenticated(self, timeout: float) -> None:
        self._auth_deadline = None
        if self._closed or self.connection is None or self.tokens or self.sasl_principal:
            return
        _repeats.warn("amqp-auth", client_address(self.peer),
                      f"closing AMQP connection from {self.peer}: no token put on $cbs within "
                      f"{timeout:g} s of opening")
        self._fail(UNAUTHORIZED, f"no token was put on $cbs within {timeout:g} s of opening the "
                                 f"connection: put a SAS token (or, where the namespace has OAuth, "
                                 f"a JWT) on $cbs right after opening")
        self.pump()

    def _on_attach(self, link) -> None:
        from kafka_wire.amqp import nodes  # the nodes import this module

        if self.namespace is None:
            refuse(link, NOT_ALLOWED, "the connection has no namespace")
            return
        terminus = link.remote_target if link.is_receiver else link.remote_source
        try:
            address = addresses.parse(terminus.address)
        except addresses.AddressError as exc:
            refuse(link, NOT_FOUND, str(exc))
            return
        handler = nodes.attach(self, link, address)
        if handler is not None:
            link.kw_node = handler
            self.handlers.add(handler)
            if getattr(self.namespace, "geo", None) is not None:  # geo-replicated
                from kafka_wire.amqp import georeplication
                georeplication.offer(self, link)

    def desired_capabilities(self, link_name: str) -> set[str]:
        """The capabilities the peer's attach of ``link_name`` desired (proton's
        Python binding does not expose them; :class:`InputFrames` reads them)."""
        return self.scanner.capabilities.get(link_name, set()) if self.scanner else set()

    def end_link(self, link) -> None:
        handler = getattr(link, "kw_node", None)
        if handler is not None:
            link.kw_node = None
            _cancel_token_timer(handler)
            self.handlers.discard(handler)
            handler.on_close()

    # -- limits (see .limits) -----------------------------------------------------------
    def _on_begin(self, session) -> None:
        self.sessions.setdefault(session, set())
        session.open()
        cap = self.server.limits.max_sessions
        if len(self.sessions) <= cap:
            return
        if len(self.sessions) > 2 * cap:  # our ends ignored: the peer keeps beginning
            self._fail(RESOURCE_LIMIT, f"more than {cap} sessions were begun on this connection "
                                       f"and the refusals were not answered")
            return
        _repeats.warn("amqp-limit", client_address(self.peer),
                      f"AMQP connection from {self.peer}: a session past the cap of {cap} refused")
        session.condition = Condition(RESOURCE_LIMIT, f"this connection has {cap} sessions, the "
                                                      f"most it may have: end one first")
        session.close()

    def _admit_link(self, link) -> bool:
        """Count the peer's new link; past the cap, refuse it (False) before a node sees it."""
        self.links.add(link)
        session = link.session
        self.sessions.setdefault(session, set()).add(link)
        if session.state & session.LOCAL_CLOSED:
            return False  # on a session we refused: freed with it when the peer ends it
        cap = self.server.limits.max_links
        if len(self.links) <= cap:
            return True
        if len(self.links) > 2 * cap:  # our detaches ignored: the peer keeps attaching
            self._fail(RESOURCE_LIMIT, f"more than {cap} links were attached on this connection "
                                       f"and the refusals were not answered")
            return False
        link.kw_peer = self.peer  # refuse() logs the refusal
        refuse(link, RESOURCE_LIMIT, f"this connection has {cap} links attached, the most it may "
                                     f"have: detach one first")
        return False

    def _release_link(self, link) -> None:
        """Both sides have detached ``link``: let proton free it (it still writes our detach)."""
        if link not in self.links:
            return  # freed already, with its session
        self.links.discard(link)
        links = self.sessions.get(link.session)
        if links is not None:
            links.discard(link)
        self._forget_deliveries(link)
        link.free()

    def _release_session(self, session) -> None:
        """Both sides have ended ``session``: free it, and the links the peer left in it."""
        links = self.sessions.pop(session, None)
        if links is None:
            return
        for link in links:
            self.end_link(link)
            self.links.discard(link)
            self._forget_deliveries(link)
        session.free()

    def _admit_transfer(self, delivery, handler: LinkHandler | None) -> bool:
        """Bound what an incoming message holds while its frames arrive: False (and the
        delivery settled, so proton drops the rest of its frames as they come) when no
        node takes it (rejected, with the link's reason), its sender aborted it, or it has grown past the link's limit or
        past the connection's budget for messages still arriving."""
        if delivery.aborted:
            self._drop(delivery, None, "")
            return False
        if handler is None:
            # The link was refused, or has ended: say why in a rejected outcome. A settle
            # with none reads as an unknown error in pyamqp, and rhea-promise waits for one.
            reason = delivery.link.condition
            self._drop(delivery, reason.name if reason else DETACH_FORCED,
                       reason.description if reason else "the link is detached: nothing takes "
                                                         "its messages")
            return False
        pending = delivery.pending
        limit = handler.max_message_bytes or self.namespace.policy.max_publication_bytes()
        if pending > limit:
            return self._refuse_transfer(
                delivery, "amqp-message-size", MESSAGE_SIZE_EXCEEDED,
                logged=f"a message over {limit} bytes refused at its frame past the limit",
                description=f"the message exceeds the limit ({limit} bytes) allowed on this link: "
                            f"it was refused at {pending} bytes and the rest of it is discarded")
        if not delivery.partial:
            self._forget(delivery)
            return True
        self._partial_bytes += pending - self._partial.get(delivery, 0)
        self._partial[delivery] = pending
        budget = max(self.server.limits.max_arriving_bytes, limit + MAX_FRAME)
        if self._partial_bytes > budget:
            return self._refuse_transfer(
                delivery, "amqp-limit", RESOURCE_LIMIT,
                logged=f"over {budget} bytes of messages arriving at once; one refused",
                description=f"the messages still arriving on this connection hold over {budget} "
                            "bytes: finish (or abort) some before starting more")
        return True

    def _refuse_transfer(self, delivery, kind: str, condition: str, *, logged: str,
                         description: str) -> bool:
        """Refuse an arriving message with ``condition`` (``logged`` once per client
        and ``kind``): False, for :meth:`_admit_transfer` to return."""
        _repeats.warn(kind, client_address(self.peer), f"AMQP connection from {self.peer}: {logged}")
        self._drop(delivery, condition, description)
        return False

    def _drop(self, delivery, condition: str | None, description: str) -> None:
        """Settle ``delivery`` (rejected with ``condition`` if given) and give back the credit."""
        self._forget(delivery)
        link = delivery.link
        if condition is not None:
            delivery.local.condition = Condition(condition, description)
            delivery.update(delivery.REJECTED)
        delivery.settle()
        if condition is not None and link.state & link.LOCAL_ACTIVE:
            link.flow(1)  # the credit the refused message took

    def _forget(self, delivery) -> None:
        self._partial_bytes -= self._partial.pop(delivery, 0)

    def _forget_deliveries(self, link) -> None:
        if self.scanner is not None:
            self.scanner.forget_link(link.name)
        for delivery in [d for d in self._partial if d.link == link]:
            self._forget(delivery)

    # -- authentication -----------------------------------------------------------------
    def _sasl_login(self, mechanism: str, response: bytes, hostname: str | None) -> str | None:
        """SASL's answer: ANONYMOUS and MSSBCBS defer to ``$cbs``; PLAIN carries a
        policy name and key, or ``$ConnectionString`` and a connection string."""
        if mechanism != "PLAIN":
            return None
        try:
            _authzid, username, password = split_plain(response)
            if username.lower() == USERNAME.lower():
                credential = ConnectionString(password, kafka=False)
                door = door_for_credential(self.services, credential)
            else:
                credential = SasKey(username, password)
                door = door_for_host(self.services, (hostname or "").split(":")[0] or None)
            principal = door.sign_in(credential, self.peer, "AMQP PLAIN login")  # it logs a refusal
        except AuthError as exc:
            _repeats.warn("amqp-auth", client_address(self.peer),
                          f"AMQP PLAIN authentication of {self.peer} failed: {exc}")
            return str(exc)
        except Refused as exc:
            return exc.message
        self.sasl_principal = principal
        return None

    def watch_token(self, handler: LinkHandler, link, hub: str, right: str) -> None:
        """End ``handler``'s link when the token that authorized it expires and no
        other token held by the connection still grants ``right`` on ``hub``."""
        handler.token_watch = (link, hub, right)
        principal, _ = self.principal_for(hub, right)
        if principal is None or principal.expires_s is None:
            return
        clock = self.services.clock
        delay = int((principal.expires_s + principal.skew_s) * 1000 - clock.now_ms()) + 1

        def check() -> None:
            if handler not in self.handlers:
                return
            _, why = self.principal_for(hub, right)
            if why is not None:
                handler.detach(UNAUTHORIZED, f"the token that authorized this link expired: {why}")
            else:
                self.watch_token(handler, link, hub, right)

        handler.token_timer = clock.call_later(max(delay, 0), check)

    def put_token(self, audience: str, principal: Principal) -> str | None:
        """Hold ``principal`` for ``audience`` (replacing the token put for it before);
        why not, when the connection holds tokens for max_tokens audiences. The links
        it may cover are checked again when it ends: a renewal that expires sooner
        than the token it replaces must end them sooner too."""
        tokens = self.tokens
        limit = self.server.limits.max_tokens
        if audience not in tokens and len(tokens) >= limit:
            now_s = self.services.clock.now_ms() / 1000
            for name in [a for a, p in tokens.items() if not p.valid_at(now_s)]:
                del tokens[name]
            if len(tokens) >= limit:
                return (f"this connection holds tokens for {limit} audiences: put new tokens "
                        f"under the audiences already used, or open another connection")
        tokens[audience] = principal
        for handler in list(self.handlers):
            watch = handler.token_watch
            if watch is not None and handler.token_timer is not None and \
                    (principal.hub is None or principal.hub.lower() == watch[1].lower()):
                _cancel_token_timer(handler)
                self.watch_token(handler, *watch)
        return None

    def hubs_changed(self) -> None:
        """The management API changed hubs (AmqpServer.hubs_changed): links to a hub now
        Disabled (or of a principal whose application group is) are detached at once with
        com.microsoft:entity-disabled, and links to a deleted hub with amqp:not-found, as
        the service does. Checked only at a receiver's next read, an idle receiver (with no
        credit, or of a Disabled hub with nothing new) stayed attached for good, and a
        sender until its next transfer."""
        from kafka_wire.amqp.nodes import entity_not_found  # the nodes import this module

        runtime = self.namespace
        if runtime is None or self.engine is None:
            return
        topics, disabled = runtime.topics, runtime.policy.disabled
        for handler in [h for h in self.handlers if h.hub is not None]:
            hub = handler.hub
            if handler not in self.handlers:  # (ended by an earlier detach's pump)
                continue
            if topics.get(hub) is None:
                condition = NOT_FOUND
                why = entity_not_found(runtime.name, hub, f"event hub {hub!r} was deleted")
            else:
                condition, why = ENTITY_DISABLED, disabled(hub, handler.principal)
                if why is None:
                    continue
            _repeats.warn(f"amqp-hub-changed {condition}", client_address(self.peer),
                          f"AMQP {'sender' if handler.link.is_receiver else 'receiver'} of {hub} "
                          f"from {self.peer} detached: {why}")
            handler.detach(condition, why)

    def principal_for(self, hub: str, right: str) -> tuple[Principal | None, str | None]:
        """(principal, None) when this connection may exercise ``right`` on ``hub``,
        else (None, why not)."""
        runtime = self.namespace
        policy = runtime.policy
        now_s = self.services.clock.now_ms() / 1000
        candidates = [self.sasl_principal] if self.sasl_principal is not None else []
        candidates += [p for p in self.tokens.values() if p.valid_at(now_s)]
        for principal in candidates:
            if policy.allows(principal, right, hub):
                return principal, None
        if not candidates:
            if not runtime.door.requires_auth:
                return None, None  # an open namespace: no token needed
            return None, (f"no valid token for {hub!r}: put a SAS token (or, where the namespace "
                          f"has OAuth, a JWT) on $cbs first")
        held = "; ".join(str(p) for p in candidates)
        return None, f"{right} on event hub {hub!r} is not granted by the tokens of this connection ({held})"


def _cancel_token_timer(handler: LinkHandler) -> None:
    timer, handler.token_timer = handler.token_timer, None
    if timer is not None:
        timer.cancel()


def refuse(link, condition: str, description: str) -> None:
    """Refuse an attach as AMQP 1.0 (2.6.3) says and the service does: answer with a
    null terminus on our side (target for a sender, source for a receiver), then detach
    at once with ``condition``. An echoed terminus says the link was made: the SDKs
    then see an attached link (``create_batch`` reads its size and succeeds) that is
    lost afterwards, with an unknown error on a send in flight. Logged once per client
    address and condition (clients retry many times a second)."""
    peer = getattr(link.connection, "kw_peer", "?")
    terminus = link.remote_target if link.is_receiver else link.remote_source
    description = shortened(description, 1000)  # (a huge one would not fit the peer's frames)
    _repeats.warn(f"amqp-refusal {condition}", client_address(peer),
                  f"AMQP attach of {shortened(repr(terminus.address), 200)} from {peer} refused: "
                  f"{condition}: {description}")
    if link.is_receiver:
        link.source.copy(link.remote_source)
        link.target.type = Terminus.UNSPECIFIED  # encoded as null
    else:
        link.target.copy(link.remote_target)
        link.source.type = Terminus.UNSPECIFIED
    link.open()
    link.condition = Condition(condition, description)
    link.close()
