"""Bad input on the AMQP port closes that connection only, with the AMQP answer
the spec gives (a protocol header, or a close with a framing error); the
broker keeps serving everyone else."""
from __future__ import annotations

import socket
import time
import struct
from concurrent.futures import ThreadPoolExecutor

import pytest
from azure.eventhub import EventData
from proton import Data, Described, uint, ulong

from .conftest import receive
from .test_sdk_python import consumer, producer

AMQP_HEADER = b"AMQP\x00\x01\x00\x00"


def exchange(broker, payload: bytes, timeout: float = 10.0) -> bytes:
    """Send ``payload`` and read until the broker closes the connection."""
    with socket.create_connection(("127.0.0.1", broker.amqp_port), timeout=timeout) as s:
        s.sendall(payload)
        out = bytearray()
        while True:
            chunk = s.recv(65536)  # a hang fails the test with socket.timeout
            if not chunk:
                return bytes(out)
            out += chunk


def frames(data: bytes) -> list[tuple[int, object]]:
    """(frame type, performative) of each AMQP frame in ``data``."""
    out, pos = [], 0
    while pos + 8 <= len(data):
        size, doff, kind, _ = struct.unpack_from(">IBBH", data, pos)
        body = data[pos + doff * 4:pos + size]
        if body:
            d = Data()
            d.decode(body)
            d.rewind()
            d.next()
            out.append((kind, d.get_object()))
        pos += size
    return out


@pytest.mark.parametrize("payload", [
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64,  # a TLS ClientHello
    b"AMQP\x00\x02\x00\x00",                                         # a version we do not speak
    b"AMQP\x03\x01\x00\x00" + b"\x00\x00\x00\x08\x02\x01\x00\x00",    # SASL, then an empty frame
    b"\x00" * 3,                                                     # fewer bytes than a header
], ids=["http", "tls", "version", "sasl-garbage", "short"])
def test_garbage_gets_a_protocol_header_and_a_close(broker, payload):
    if payload == b"\x00" * 3:
        with socket.create_connection(("127.0.0.1", broker.amqp_port), timeout=10) as s:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)  # then nothing more: the broker closes, not hangs
            assert s.recv(100) in (b"", AMQP_HEADER, b"AMQP\x03\x01\x00\x00")
        return
    answer = exchange(broker, payload)
    if payload.startswith(b"GET "):  # taken for a WebSocket upgrade, to the wrong path
        assert answer.startswith(b"HTTP/1.1 404"), answer[:40]
        return
    assert answer[:4] == b"AMQP", answer[:40]


def test_a_frame_over_the_max_frame_size_closes_with_a_framing_error(broker):
    oversized = struct.pack(">IBBH", 10_000_000, 2, 0, 0) + b"\x00" * 1000
    answer = exchange(broker, AMQP_HEADER + oversized)
    assert answer.startswith(AMQP_HEADER)
    performatives = [p for _, p in frames(answer[8:])]
    close = performatives[-1]
    assert int(close.descriptor) == 0x18, performatives  # close
    assert "framing-error" in str(close.value), close


def test_a_frame_that_does_not_decode_closes_the_connection(broker):
    garbage = b"\x00\x53\x10\xff\xff\xff"  # an open performative that does not decode
    frame = struct.pack(">IBBH", 8 + len(garbage), 2, 0, 0) + garbage
    answer = exchange(broker, AMQP_HEADER + frame)  # closed, not left waiting
    assert answer.startswith(AMQP_HEADER)
    # Proton stops at the bad frame: our open, and a close if it still writes one.
    kinds = [int(p.descriptor) for _, p in frames(answer[8:])]
    assert kinds in ([0x10], [0x10, 0x18]), kinds


def _frame(code: int, value, body: bytes | None = None) -> bytes:
    if body is None:
        d = Data()
        d.put_object(Described(ulong(code), value))
        body = bytes(d.encode())
    return struct.pack(">IBBH", 8 + len(body), 2, 0, 0) + body


_OPEN = _frame(0x10, ["hostile"])
_BEGIN = _frame(0x11, [None, uint(0), uint(100), uint(100)])


@pytest.mark.parametrize("payload", [
    AMQP_HEADER + _OPEN + _BEGIN + _frame(0x12, None, b"\x00\x53\x12\x40"),      # attach: a described null
    AMQP_HEADER + _OPEN + _BEGIN + _frame(0x12, None, b"\x00\x53\x12\x52\x05"),  # attach: a number
    AMQP_HEADER + _frame(0x10, ["hostile", None, "big"]) + _frame(0x18, []),     # max-frame-size: a string
    AMQP_HEADER + _frame(0x10, ["hostile", None, ["x"]]) + _frame(0x18, []),     # max-frame-size: a list
], ids=["attach-null", "attach-number", "max-frame-string", "max-frame-list"])
def test_a_performative_of_the_wrong_shape_gets_an_amqp_answer(broker, payload):
    # The broker reads open's and attach's fields before proton does; these raised there,
    # and the socket closed with no AMQP answer (a traceback in the log).
    answer = exchange(broker, payload)
    assert answer.startswith(AMQP_HEADER), answer[:40]
    kinds = [int(p.descriptor) for _, p in frames(answer[8:])]
    assert kinds[0] == 0x10 and kinds[-1] == 0x18, kinds  # our open, and a close


def test_the_broker_keeps_serving_while_others_send_garbage(broker):
    broker.create_hub("steady", 1)
    garbage = (b"\xff" * 4096, AMQP_HEADER + struct.pack(">IBBH", 1 << 30, 2, 0, 0))
    # the garbage connections run beside the sends (each one is closed only after our
    # close frame's 2 s linger); every one of them must still end in a close
    with producer(broker, "steady") as p, ThreadPoolExecutor(10) as pool:
        closed = []
        for i in range(5):
            closed += [pool.submit(exchange, broker, g) for g in garbage]
            p.send_batch([EventData(f"e{i}")], partition_id="0")
        assert p.get_eventhub_properties()["partition_ids"] == ["0"]
        for done in closed:
            done.result()
    got = receive(consumer(broker, "steady"), 5, partition_id="0", starting_position="-1")
    assert [e.body_as_str() for _, e in got] == [f"e{i}" for i in range(5)]


@pytest.mark.parametrize("payload", [b"", b"AM", b"GET /$servicebus/websocket HTTP/1.1\r\n"],
                         ids=["silent", "half-header", "half-upgrade"])
def test_a_client_that_never_finishes_its_handshake_is_closed(broker, monkeypatch, payload):
    from kafka_wire.amqp import connection

    monkeypatch.setattr(connection, "HANDSHAKE_TIMEOUT_S", 0.5)
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", broker.amqp_port), timeout=10) as s:
        s.sendall(payload)
        assert s.recv(100) == b""  # closed by the broker, not left open
    assert time.monotonic() - started < 5
