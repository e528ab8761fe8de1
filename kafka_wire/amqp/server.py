"""The AMQP listener: accepts connections, and holds what they share (the
receivers of each partition and consumer group, the traffic counters the
metrics show, the limits every connection is held to)."""
from __future__ import annotations

import asyncio
import logging

from kafka_wire.amqp import websocket
from kafka_wire.amqp.connection import AmqpConnection
from kafka_wire.amqp.limits import ConnectionLimits
from kafka_wire.amqp.outgoing import SharedEvents
from kafka_wire.context import Services

log = logging.getLogger(__name__)


class AmqpServer:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.limits = ConnectionLimits()  # read by each connection when it needs them
        self.connections: set[AmqpConnection] = set()
        # (namespace, hub, consumer group, partition) -> its receive links
        self.readers: dict[tuple[str, str, str, int], set] = {}
        # (namespace, hub, partition) -> its receive links, all groups: when more than one,
        # they share the messages they read (outgoing.SharedEvents)
        self.partition_readers: dict[tuple[str, str, int], int] = {}
        self.shared_events = SharedEvents()
        self._servers: list[asyncio.base_events.Server] = []  # AMQP, AMQPS
        self.bytes_in = self.events_in = self.bytes_out = self.events_out = 0

    async def start(self, host: str, port: int, ssl=None) -> tuple[str, int]:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: AmqpConnection(self), host, port,
                                          ssl=ssl, reuse_address=True)
        self._servers.append(server)
        return server.sockets[0].getsockname()[:2]

    def add_reader(self, key: tuple[str, str, str, int], handler) -> None:
        self.readers.setdefault(key, set()).add(handler)
        where = (key[0], key[1], key[3])
        self.partition_readers[where] = self.partition_readers.get(where, 0) + 1

    def remove_reader(self, key: tuple[str, str, str, int], handler) -> None:
        readers = self.readers.get(key)
        if readers is None or handler not in readers:
            return
        readers.discard(handler)
        if not readers:
            self.readers.pop(key, None)
        where = (key[0], key[1], key[3])
        left = self.partition_readers.get(where, 1) - 1
        if left > 0:
            self.partition_readers[where] = left
        else:
            self.partition_readers.pop(where, None)
        if not self.partition_readers:
            self.shared_events.clear()  # nobody reads over AMQP: hold nothing

    def count_in(self, nbytes: int, events: int) -> None:
        self.bytes_in += nbytes
        self.events_in += events

    def count_out(self, nbytes: int, events: int) -> None:
        self.bytes_out += nbytes
        self.events_out += events

    async def serve_upgrade(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                            target: str, headers: dict[str, str]) -> None:
        """AMQP over WebSockets on the HTTP listener: answer the upgrade request the
        HTTP server read (``headers`` with lower-case names), then carry the
        connection until either side closes."""
        reply, accepted = websocket.respond(["GET", target, "HTTP/1.1"], headers)
        writer.write(reply)
        if not accepted:
            writer.close()
            return
        conn = AmqpConnection(self)
        conn.connection_made(writer)
        conn.upgraded()
        transport = writer.transport
        transport.set_protocol(_WritingTold(transport.get_protocol(), conn))
        try:
            while not writer.is_closing():
                data = await reader.read(65536)
                if not data:
                    conn.eof_received()
                    break
                conn.data_received(data)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            if not writer.is_closing():
                writer.close()
            conn.connection_lost(None)

    def hubs_changed(self) -> None:
        """The management API changed hubs (any namespace's): each connection detaches
        its links to a hub made Disabled or deleted (AmqpConnection.hubs_changed). A walk of every
        link, once per management change; nothing on the send or receive path."""
        for conn in list(self.connections):
            conn.hubs_changed()

    def close_connections(self) -> None:
        for conn in list(self.connections):
            conn.close()

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        self.close_connections()
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()


class _WritingTold(asyncio.Protocol):
    """The protocol of a connection the HTTP listener upgraded: its stream's
    (``asyncio.StreamReaderProtocol``), with the transport's pause and resume of writing
    told to the AMQP connection as well, as its own transport tells it on the AMQP port.
    The stream alone kept them (for ``drain``, awaited only after what the client sent):
    the connection's receivers went on sending into the transport's buffer, a whole
    credit window of a client that never read (123 MB)."""

    def __init__(self, stream: asyncio.Protocol, conn: AmqpConnection) -> None:
        self.stream, self.conn = stream, conn

    def connection_made(self, transport) -> None:
        self.stream.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self.stream.data_received(data)

    def eof_received(self):
        return self.stream.eof_received()

    def connection_lost(self, exc) -> None:
        self.stream.connection_lost(exc)

    def pause_writing(self) -> None:
        self.stream.pause_writing()
        self.conn.pause_writing()

    def resume_writing(self) -> None:
        self.stream.resume_writing()
        self.conn.resume_writing()
