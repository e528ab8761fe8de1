"""A bare AMQP 1.0 client for tests that misbehave: proton's engine over a blocking
socket, driven by hand, so a test decides exactly what is sent and when, and
counts the bytes. Waits are bounded: a hang fails the test."""
from __future__ import annotations

import select
import socket
import time
from typing import Callable

from proton import Collector, Connection, Endpoint, Transport


class RawAmqp:
    def __init__(self, port: int, *, hostname: str | None = None, user: str | None = None,
                 password: str | None = None, chunk: int = 65536) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
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
        self.sock.sendall(data)
        self.transport.pop(len(data))
        self.sent += len(data)
        return len(data)

    def receive(self, wait_s: float) -> None:
        """Push what the server sent (waiting up to ``wait_s`` for some) into the engine."""
        if self.eof:
            return
        ready, _, _ = select.select([self.sock], [], [], wait_s)
        if not ready:
            return
        data = self.sock.recv(1 << 20)
        if not data:
            self.eof = True
            self.transport.close_tail()
        else:
            view = memoryview(data)
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
