"""Log lines a person can act on: the request is named, what is required is said,
repeats from one client address are counted instead of printed, other protocols
sent to the Kafka port are recognised, and a topic's creation is one line."""
from __future__ import annotations

import logging
import socket
import struct
import time

import pytest

from kafka_wire import server
from kafka_wire.log_lines import RepeatedWarnings, iso_utc
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import CONFIG_JSON, EMULATOR_CS, auth_error


@pytest.fixture(autouse=True)
def fresh_counts(monkeypatch):
    """The Kafka listener's repeats are counted per process: each test starts with none
    seen (a namespace's door counts its own, so a new broker starts afresh)."""
    monkeypatch.setattr(server, "_repeats", RepeatedWarnings(server.log))


def _metadata_v1(correlation_id: int) -> bytes:
    body = struct.pack(">i", -1)  # all topics
    frame = struct.pack(">hhih", 3, 1, correlation_id, 3) + b"cli" + body
    return struct.pack(">i", len(frame)) + frame


def _send_and_wait_close(port: int, data: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(data)
        try:
            while sock.recv(4096):
                pass
        except ConnectionResetError:
            pass


def _lines(caplog, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def test_unauthenticated_requests_are_named_explained_and_counted(caplog, monkeypatch):
    monkeypatch.setattr(server, "_repeats", RepeatedWarnings(server.log, window_s=0.5))
    with EmulatedBroker(config_file=CONFIG_JSON) as broker, caplog.at_level(logging.WARNING):
        for i in range(20):
            _send_and_wait_close(broker.port, _metadata_v1(i))
        first = _lines(caplog, "before authentication")
        assert len(first) == 1, first
        assert "Metadata (api key 3)" in first[0]
        assert "requires SASL" in first[0] and "$ConnectionString" in first[0]
        time.sleep(0.6)
        _send_and_wait_close(broker.port, _metadata_v1(99))
        lines = _lines(caplog, "before authentication")
    assert len(lines) == 2, lines
    assert "and 19 more like it from 127.0.0.1" in lines[1]


def test_wrong_keys_from_one_client_are_one_line_then_a_count(caplog):
    wrong = EMULATOR_CS.replace("SAS_KEY_VALUE", "wrong")
    with EmulatedBroker(config_file=CONFIG_JSON) as broker, caplog.at_level(logging.WARNING):
        # confluent-kafka retries its failed authentication several times a second
        assert auth_error(broker.bootstrap_servers, wrong, timeout=3) is not None
        for _ in range(3):
            auth_error(broker.bootstrap_servers, wrong, timeout=1)
    failures = _lines(caplog, "PLAIN login from")
    assert len(failures) == 1, failures
    assert "is wrong" in failures[0]


@pytest.mark.parametrize("data, words", [
    (b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", ["looks like HTTP", "Kafka protocol"]),
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(40), ["looks like a TLS handshake",
                                                                   "SASL_PLAINTEXT"]),
])
def test_other_protocols_on_the_kafka_port_are_recognised(caplog, data, words):
    with EmulatedBroker() as broker, caplog.at_level(logging.WARNING):
        _send_and_wait_close(broker.port, data)
        deadline = time.monotonic() + 5
        while not _lines(caplog, "closing connection") and time.monotonic() < deadline:
            time.sleep(0.02)
    lines = _lines(caplog, "closing connection")
    assert len(lines) == 1, lines
    assert all(w in lines[0] for w in words), lines[0]


def test_topic_creation_is_logged_once(caplog):
    with EmulatedBroker() as broker, caplog.at_level(logging.INFO):
        broker.create_hub("once", partitions=3)
    assert len(_lines(caplog, "created topic once")) == 1


def test_repeated_warnings_count_per_address_and_window():
    now = [0.0]
    logged = []

    class Sink(logging.Logger):
        def warning(self, msg, *args, **kwargs):
            logged.append(msg % args)

    warnings = RepeatedWarnings(Sink("t"), window_s=10, max_keys=2, clock=lambda: now[0])
    assert warnings.warn("k", "10.0.0.1", "a")
    assert not warnings.warn("k", "10.0.0.1", "a")
    assert warnings.warn("k", "10.0.0.2", "b")  # another address is its own line
    now[0] = 11
    assert warnings.warn("k", "10.0.0.1", "a")
    assert logged == ["a", "b", "a (and 1 more like it from 10.0.0.1 in the last 11 s)"]
    warnings.warn("k", "10.0.0.3", "c")  # a third address: the oldest is forgotten
    assert len(warnings._seen) == 2


def test_expiry_is_an_iso_timestamp():
    assert iso_utc(0) == "1970-01-01T00:00:00Z"
