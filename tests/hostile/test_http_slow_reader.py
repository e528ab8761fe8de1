"""A client that pipelines requests and never reads the answers holds its connection
only as long as a client may take to send a request (the listener's READ_TIMEOUT_S,
lowered here): then the connection is dropped and its slot is free again, so
``http_connections`` such clients, needing no credential, cannot shut the HTTP
listener for everyone."""
from __future__ import annotations

import socket
import time

import requests

from kafka_wire.eventhubs.bounds import Bounds
from kafka_wire.httpd import listener
from tests.hostile.conftest import start

SLOTS = 2
TIMEOUT_S = 2.0


def health(broker) -> int:
    try:
        return requests.get(broker.http_url + "/health", timeout=10).status_code
    except requests.ConnectionError:  # refused while the listener is full: not an answer
        return 0


def test_clients_that_never_read_their_answers_lose_their_slots(tmp_path, monkeypatch):
    monkeypatch.setattr(listener, "READ_TIMEOUT_S", TIMEOUT_S)
    broker = start(tmp_path / "data", bounds=Bounds(http_connections=SLOTS))
    held = []
    try:
        for _ in range(SLOTS):  # each asks for far more than the socket buffers hold, reads nothing
            s = socket.create_connection(("127.0.0.1", broker.http_port), timeout=10)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.sendall(b"GET /static/app.js HTTP/1.1\r\nHost: x\r\n\r\n" * 2000)
            held.append(s)
        # the listener is full: a new client is refused...
        deadline = time.monotonic() + 10
        while (status := health(broker)) == 200:
            assert time.monotonic() < deadline, "the non-reading clients never filled the listener"
            time.sleep(0.05)
        assert status == 503
        # ...until the non-reading clients' answers have waited READ_TIMEOUT_S
        deadline = time.monotonic() + 10 * TIMEOUT_S + 5
        while (status := health(broker)) != 200:
            assert time.monotonic() < deadline, f"a slot never came free ({status})"
            time.sleep(0.05)
        for s in held:  # and the broker dropped them
            s.settimeout(10)
            try:
                while s.recv(1 << 20):
                    pass
            except ConnectionResetError:
                pass
    finally:
        for s in held:
            s.close()
        broker.stop()
