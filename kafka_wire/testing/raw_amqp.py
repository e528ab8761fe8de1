"""A bare AMQP 1.0 client for tests that misbehave: proton's engine over a blocking
socket, driven by hand, so a test decides exactly what is sent and when, and
counts the bytes. Waits are bounded: a hang fails the test.

:class:`WsRawAmqp` is the same over a WebSocket (AMQPWSB10, as the SDKs' WebSocket
transport): :func:`upgrade`, then AMQP's bytes in masked binary frames
(:func:`client_frame`), the server's frames taken apart by :func:`server_frames`.
Those three serve tests that write WebSocket frames of their own too. :class:`TlsRawAmqp`
is the same over TLS: what a TLS record brought beyond what was read is held in the
socket object, out of ``select``'s sight, so it is read before waiting."""
from __future__ import annotations

import base64
import os
import select
import socket
import ssl
import time
from typing import Callable

from proton import Collector, Connection, Endpoint, Transport

from kafka_wire.amqp.websocket import accept_key, frame, payload_length, unmask


class RawAmqp:
    def __init__(self, port: int, *, hostname: str | None = None, user: str | None = None,
                 password: str | None = None, chunk: int = 65536) -> None:
        self.sock = self._connect(port)
        self.transport = Transport(Transport.CLIENT)
        if user is not None:  # SASL PLAIN; otherwise plain AMQP, no SASL layer
            sasl = self.transport.sasl()
            sasl.allowed_mechs("PLAIN")
            sasl.allow_insecure_mechs = True  # PLAIN without TLS: a test on loopback
        self.conn = Connection()
        if user is not None:
            self.conn.user, self.conn.password = user, password
        if hostname:
            self.conn.hostname = hostname
        self.collector = Collector()
        self.conn.collect(self.collector)
        self.transport.bind(self.conn)
        self.chunk = chunk
        self.paused = False    # hold back what the engine has to send
        self.sent = 0          # bytes written to the socket
        self.eof = False

    def _connect(self, port: int) -> socket.socket:
        return socket.create_connection(("127.0.0.1", port), timeout=10)

    def open(self, timeout: float = 10.0) -> None:
        self.conn.open()
        self.wait(lambda: self.conn.state & Endpoint.REMOTE_ACTIVE or self.closed, timeout)

    @property
    def closed(self) -> bool:
        return bool(self.conn.state & Endpoint.REMOTE_CLOSED) or self.eof

    def session(self, timeout: float = 10.0):
        ssn = self.conn.session()
        ssn.open()
        self.wait(lambda: ssn.state & (Endpoint.REMOTE_ACTIVE | Endpoint.REMOTE_CLOSED), timeout)
        return ssn

    def sender(self, ssn, address: str, name: str, timeout: float = 10.0):
        link = ssn.sender(name)
        link.target.address = address
        link.open()
        self.wait(lambda: link.state & (Endpoint.REMOTE_ACTIVE | Endpoint.REMOTE_CLOSED), timeout)
        return link

    def detach(self, link, timeout: float = 10.0) -> None:
        link.close()
        self.wait(lambda: link.state & Endpoint.REMOTE_CLOSED, timeout)
        link.free()

    # -- bytes ----------------------------------------------------------------------
    def send_some(self) -> int:
        """Write up to one chunk of what the engine has to send; bytes written."""
        pending = self.transport.pending()
        if pending <= 0 or self.paused:
            return 0
        data = self.transport.peek(min(pending, self.chunk))
        self._write(data)
        self.transport.pop(len(data))
        self.sent += len(data)
        return len(data)

    def _write(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _amqp(self, data: bytes) -> bytes:
        """AMQP's bytes in what the socket gave (on a plain socket, all of it)."""
        return data

    def _buffered(self) -> bool:
        """Whether bytes the socket took are held above it (a TLS record's), where select
        does not see them."""
        return False

    def receive(self, wait_s: float) -> None:
        """Push what the server sent (waiting up to ``wait_s`` for some) into the engine."""
        if self.eof:
            return
        if not self._buffered():
            ready, _, _ = select.select([self.sock], [], [], wait_s)
            if not ready:
                return
        data = self.sock.recv(1 << 20)
        if not data:
            self.eof = True
            self.transport.close_tail()
        else:
            view = memoryview(self._amqp(data))
            while len(view):  # in pieces of what proton takes at once (its capacity)
                room = self.transport.capacity()
                if room <= 0:
                    break
                self.transport.push(bytes(view[:room]))
                view = view[room:]
        while self.collector.peek() is not None:  # state is read off the endpoints
            self.collector.pop()

    def wait(self, predicate: Callable[[], object], timeout: float = 10.0):
        """Exchange bytes until ``predicate()`` holds; its value. Fails after ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            while self.send_some():
                pass
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"not reached in {timeout} s: {predicate}")
            if self.eof:
                value = predicate()
                if value:
                    return value
                raise AssertionError("the server closed the socket first")
            self.receive(0.05)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> "RawAmqp":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class TlsRawAmqp(RawAmqp):
    """:class:`RawAmqp` over TLS (the AMQPS port), trusting ``ca_file``."""

    def __init__(self, port: int, ca_file, **kwargs) -> None:
        self._context = ssl.create_default_context(cafile=str(ca_file))
        super().__init__(port, **kwargs)

    def _connect(self, port: int) -> socket.socket:
        return self._context.wrap_socket(super()._connect(port), server_hostname="localhost")

    def _buffered(self) -> bool:
        return self.sock.pending() > 0


def upgrade(port: int, path: str = "/$servicebus/websocket",
            protocol: str = "AMQPWSB10") -> tuple[socket.socket, bytes]:
    """A socket upgraded to a WebSocket (or refused), and the server's answer's head; a
    101 is checked to accept this key (RFC 6455 4.2.2)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET {path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
               f"Sec-WebSocket-Protocol: {protocol}\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        byte = s.recv(1)  # (a byte at a time: what follows the head is the caller's)
        if not byte:
            break
        head += byte
    if head.startswith(b"HTTP/1.1 101"):
        assert f"Sec-WebSocket-Accept: {accept_key(key)}".encode() in head, head
    return s, head


def client_frame(opcode: int, payload: bytes, mask: bytes = b"\x0f\x1e\x2d\x3c") -> bytes:
    """A client's frame: masked, as RFC 6455 requires of clients (the server's
    :func:`~kafka_wire.amqp.websocket.frame`, with the mask bit and key)."""
    plain = frame(opcode, payload)
    head = bytearray(plain[:len(plain) - len(payload)])
    head[1] |= 0x80
    return bytes(head) + mask + unmask(payload, mask)  # (XOR: masking is unmasking)


def server_frames(buf: bytearray) -> list[tuple[int, bytes]]:
    """Whole (unmasked) server frames taken off the front of ``buf``: [(opcode, payload)];
    a frame not all there yet stays in ``buf``."""
    out = []
    while len(buf) >= 2 and (head := payload_length(buf)) is not None:
        n, at = head
        if len(buf) < at + n:
            break
        out.append((buf[0] & 0x0F, bytes(buf[at:at + n])))
        del buf[:at + n]
    return out


class WsRawAmqp(RawAmqp):
    """:class:`RawAmqp` over a WebSocket on ``port`` (the AMQP port's, or the HTTP
    listener's upgrade): AMQP's bytes in masked binary frames."""

    def _connect(self, port: int) -> socket.socket:
        sock, head = upgrade(port)
        assert head.startswith(b"HTTP/1.1 101"), head
        self._frames = bytearray()  # what has come of a frame not all there yet
        return sock

    def _write(self, data: bytes) -> None:
        self.sock.sendall(client_frame(0x2, data))

    def _amqp(self, data: bytes) -> bytes:
        self._frames += data
        return b"".join(payload for opcode, payload in server_frames(self._frames)
                        if opcode in (0x0, 0x2))  # (continuation and binary: AMQP's bytes)
