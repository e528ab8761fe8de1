"""The Kafka connection protocol over a fake transport: bytes in, bytes out, no
socket (as uvicorn tests its protocols). Framing, answers in request order,
back-pressure both ways, an oversized frame, and the ApiVersions v0 fallback.

The connections hang off a real in-process broker's server, so the handlers and
collaborators are the real ones; each test drives them on the broker's loop."""
from __future__ import annotations

import struct
import time

import pytest

from kafka_wire import codec
from kafka_wire.server import KafkaConnection
from kafka_wire.testing import EmulatedBroker


class FakeTransport:
    """What asyncio gives a protocol, recording what the protocol does with it."""

    def __init__(self) -> None:
        self.written = bytearray()
        self.reading = True
        self.closed = False
        self.aborted = False

    def write(self, data) -> None:
        self.written += bytes(data)

    def writelines(self, chunks) -> None:
        for chunk in chunks:
            self.written += bytes(chunk)

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def is_closing(self) -> bool:
        return self.closed or self.aborted

    def close(self) -> None:
        self.closed = True

    def abort(self) -> None:
        self.aborted = True

    def get_extra_info(self, name, default=None):
        return ("127.0.0.1", 4242) if name == "peername" else default

    def frames(self) -> list[bytes]:
        out, pos, data = [], 0, bytes(self.written)
        while pos + 4 <= len(data):
            (size,) = struct.unpack_from(">i", data, pos)
            out.append(data[pos + 4:pos + 4 + size])
            pos += 4 + size
        return out


def api_versions(correlation_id: int, version: int = 0) -> bytes:
    client = b"unit"
    header = struct.pack(">hhih", codec.ApiKey.ApiVersions, version, correlation_id, len(client)) + client
    if version >= 3:
        header += b"\x00"  # flexible request header: no tagged fields
        body = b"\x05unit\x041.0\x00"  # client software name and version (compact strings), no tags
    else:
        body = b""
    frame = header + body
    return struct.pack(">i", len(frame)) + frame


@pytest.fixture(scope="module")
def broker():
    with EmulatedBroker(in_memory=True) as b:
        yield b


def connect(broker) -> tuple[KafkaConnection, FakeTransport]:
    def make():
        conn = KafkaConnection(broker.broker.server)
        transport = FakeTransport()
        conn.connection_made(transport)
        return conn, transport
    return broker.call(make)


def feed(broker, conn: KafkaConnection, data: bytes) -> None:
    """As the event loop does: fill the buffer the protocol offers, tell it, repeat."""
    def push():
        rest = memoryview(data)
        while rest:
            view = conn.get_buffer(-1)
            n = min(len(view), len(rest))
            view[:n] = rest[:n]
            del view  # the protocol may resize its buffer once no view is alive
            conn.buffer_updated(n)
            rest = rest[n:]
    broker.call(push)


def correlation_ids(transport: FakeTransport) -> list[int]:
    return [struct.unpack_from(">i", f)[0] for f in transport.frames()]


def test_a_request_split_byte_by_byte_is_answered_once(broker):
    conn, transport = connect(broker)
    for byte in api_versions(7):
        feed(broker, conn, bytes([byte]))
    assert correlation_ids(transport) == [7]
    (answer,) = transport.frames()
    assert struct.unpack_from(">h", answer, 4)[0] == 0  # error code: none


def test_two_requests_in_one_chunk_are_answered_in_order(broker):
    conn, transport = connect(broker)
    feed(broker, conn, api_versions(1) + api_versions(2, version=3))
    assert correlation_ids(transport) == [1, 2]


def test_an_unknown_api_versions_version_gets_a_v0_answer_with_the_list(broker):
    conn, transport = connect(broker)
    client = b"unit"
    # a client newer than us: the flexible header v2 it sends, then a body we cannot read
    header = struct.pack(">hhih", codec.ApiKey.ApiVersions, 99, 5, len(client)) + client + b"\x00"
    frame = header + b"\x05unit\x041.0\x00"
    feed(broker, conn, struct.pack(">i", len(frame)) + frame)
    (answer,) = transport.frames()
    correlation, error, count = struct.unpack_from(">ihi", answer)
    assert (correlation, error) == (5, 35)  # UNSUPPORTED_VERSION, in v0 so any client reads it
    keys = {struct.unpack_from(">h", answer, 10 + 6 * i)[0] for i in range(count)}
    assert {codec.ApiKey.Produce, codec.ApiKey.Fetch, codec.ApiKey.ApiVersions} <= keys
    assert not transport.aborted


def test_an_oversized_frame_closes_only_that_connection(broker):
    conn, transport = connect(broker)
    other, other_transport = connect(broker)
    limit = broker.broker.config.max_request_bytes
    feed(broker, conn, struct.pack(">i", limit + 1))
    assert transport.aborted and transport.written == b""
    feed(broker, other, api_versions(3))
    assert correlation_ids(other_transport) == [3] and not other_transport.aborted


def test_a_full_write_buffer_holds_further_requests_until_it_drains(broker):
    conn, transport = connect(broker)
    broker.call(conn.pause_writing)
    feed(broker, conn, api_versions(1) + api_versions(2))
    assert transport.frames() == []  # nothing handled while the client does not read
    broker.call(conn.resume_writing)
    assert correlation_ids(transport) == [1, 2]


def test_queued_requests_past_the_buffer_limit_stop_reading(broker):
    conn, transport = connect(broker)
    conn.queue_limit = 64 * 1024  # the broker's connection_buffer_bytes, small for the test
    broker.call(conn.pause_writing)
    one = api_versions(0)
    chunk = one * 100
    sent = 0
    while transport.reading and sent < 10 * conn.queue_limit:
        feed(broker, conn, chunk)
        sent += len(chunk)
    assert not transport.reading  # back-pressure: the socket is no longer read
    assert conn.queue_limit < sent < conn.queue_limit * 1.5  # paused as soon as it was over
    broker.call(conn.resume_writing)
    assert transport.reading and len(transport.frames()) == sent // len(one)


def test_a_lone_request_waits_while_the_client_does_not_read(broker):
    # Each request in a read of its own (a consumer's, one at a time): it still waits.
    conn, transport = connect(broker)
    broker.call(conn.pause_writing)
    feed(broker, conn, api_versions(1))
    feed(broker, conn, api_versions(2))
    assert transport.frames() == []
    broker.call(conn.resume_writing)
    assert correlation_ids(transport) == [1, 2]


def fetch_v4(correlation_id: int, topic: str, max_wait_ms: int) -> bytes:
    F = codec.request_class(codec.ApiKey.Fetch)
    body = F(version=4, replica_id=-1, max_wait_ms=max_wait_ms, min_bytes=1, max_bytes=1 << 20,
             isolation_level=0, topics=[F.FetchTopic(topic=topic, partitions=[
                 F.FetchTopic.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])]
             ).encode(version=4)
    client = b"unit"
    frame = struct.pack(">hhih", codec.ApiKey.Fetch, 4, correlation_id, len(client)) + client + bytes(body)
    return struct.pack(">i", len(frame)) + frame


def test_a_lone_request_during_a_long_poll_is_answered_after_it(broker):
    broker.create_hub("empty-poll")
    conn, transport = connect(broker)
    feed(broker, conn, fetch_v4(1, "empty-poll", max_wait_ms=300))  # nothing to read: it waits
    feed(broker, conn, api_versions(2))  # arrives alone while the Fetch waits
    assert transport.frames() == []
    deadline = time.monotonic() + 10
    while len(broker.call(transport.frames)) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert correlation_ids(transport) == [1, 2]
    assert not transport.aborted
