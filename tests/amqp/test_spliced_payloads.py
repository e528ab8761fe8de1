"""Receivers' events go into their transfer frames beside proton (frames.FramePadder):
proton is handed each delivery empty and keeps the link's state. What a client gets
must not change: every event whole and in order, whatever its size against the
frame size the client takes (events that do not fit in one frame go through proton,
split), every delivery settled once written, and nothing left behind when the
link or the connection ends."""
from __future__ import annotations

import random

import pytest
from confluent_kafka import Producer
from cproton import lib as pn
from proton import Endpoint, Message

from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.raw_amqp import RawAmqp

from .conftest import wait_for

SEED = 20261126


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("spliced") / "data", amqp=True) as b:
        b.create_hub("hub", 4)
        yield b


def _bodies(n: int, seed: int, most: int) -> list[bytes]:
    rng = random.Random(seed)
    sizes = [0, 1, most // 2, most - 200, most - 100, most, most + 100, 3 * most, 70_000]
    sizes += [rng.randrange(0, 4 * most) for _ in range(n - len(sizes))]
    rng.shuffle(sizes)
    return [rng.randbytes(s) for s in sizes]


def _fill(broker, partition: int, bodies: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5,
                         "message.max.bytes": 1_000_000})
    for body in bodies:
        producer.produce("hub", body, partition=partition)
    assert producer.flush(30) == 0


def _server_connection(broker, client: RawAmqp):
    host, port = client.sock.getsockname()[:2]
    peer = f"{host}:{port}"
    return wait_for(lambda: broker.call(lambda: next(
        (c for c in broker.broker.amqp_server.connections if c.peer == peer), None)))


def _receive(client: RawAmqp, link, count: int) -> list[bytes]:
    got: list[bytes] = []

    def drain():
        while link.current is not None and not link.current.partial:
            delivery = link.current
            got.append(link.recv(delivery.pending) or b"")
            link.advance()
        if link.credit < 50:
            link.flow(200)
        return len(got) >= count

    client.wait(drain, timeout=60)
    return got


def _read_partition(client: RawAmqp, ssn, name: str, partition: int, count: int) -> list[Message]:
    """``count`` events of ``partition`` read from its start by a new receiver ``name``."""
    link = ssn.receiver(name)
    link.source.address = f"hub/ConsumerGroups/$Default/Partitions/{partition}"
    link.open()
    link.flow(200)
    events = []
    for raw in _receive(client, link, count):
        m = Message()
        m.decode(raw)
        events.append(m)
    return events


@pytest.mark.parametrize("max_frame", [1024, 16384])
def test_every_event_arrives_whole_and_in_order_whatever_its_size_against_the_frame(broker, max_frame):
    partition = {1024: 0, 16384: 1}[max_frame]
    bodies = _bodies(60, SEED + max_frame, max_frame)
    _fill(broker, partition, bodies)
    with RawAmqp(broker.amqp_port) as client:
        client.transport.max_frame_size = max_frame
        client.open()
        conn = _server_connection(broker, client)
        events = _read_partition(client, client.session(), "r", partition, len(bodies))
        assert [bytes(m.body) for m in events] == bodies
        assert [m.annotations["x-opt-sequence-number"] for m in events] == list(range(len(bodies)))
        # Read to its end: every delivery settled on the broker's side, no payload held
        reader = wait_for(lambda: broker.call(lambda: next(
            (h for hs in broker.broker.amqp_server.readers.values() for h in hs if h.conn is conn), None)))
        assert wait_for(lambda: broker.call(lambda: pn.pn_link_unsettled(reader.link._impl)) == 0, timeout=10)
        assert broker.call(lambda: (len(conn.padder.payloads), conn.padder.lost)) == (0, 0)
        # the big ones went through proton, split into frames the client takes
        assert broker.call(lambda: conn.largest_spliced()) < max_frame
        assert broker.call(lambda: conn.padder.written) == {reader: broker.call(lambda: conn.tags)}
    # Closed: the padder lets go of the receiver (a cycle the collector would find only
    # at its next full pass held the connection's proton objects: 57 MB a 100k-event read)
    assert wait_for(lambda: broker.call(lambda: conn.padder.written) == {}, timeout=10)


def test_a_link_detached_with_events_unwritten_leaves_no_payload_behind(broker):
    bodies = [b"%d" % i * 50 for i in range(400)]
    _fill(broker, 2, bodies)
    with RawAmqp(broker.amqp_port) as client:
        client.transport.max_frame_size = 1024
        client.open()
        conn = _server_connection(broker, client)
        # A session window of 4 frames: of the 300 events a link is granted, proton
        # writes 4 and holds the rest until the client reads on; it never will
        ssn = client.conn.session()
        ssn.incoming_capacity = 4 * 1024
        ssn.open()
        client.wait(lambda: ssn.state & Endpoint.REMOTE_ACTIVE)
        for round_ in range(3):
            link = ssn.receiver(f"r{round_}")
            link.source.address = "hub/ConsumerGroups/$Default/Partitions/2"
            link.open()
            link.flow(300)
            client.wait(lambda: link.current is not None)  # transfers are arriving
            held = broker.call(lambda: len(conn.padder.payloads))
            assert held > 0  # (this test is about those)
            link.close()
            client.wait(lambda: link.state & Endpoint.REMOTE_CLOSED, timeout=10)
        # Each link was granted credit and closed at once: what proton did not write of
        # its events is dropped after the flush that held the detach
        assert wait_for(lambda: broker.call(lambda: (len(conn.padder.payloads), len(conn.padder.written))) == (0, 0),
                        timeout=10), broker.call(lambda: len(conn.padder.payloads))
        assert broker.call(lambda: conn.padder.lost) == 0
        # and the connection still serves a receiver afterwards, from the start
        events = _read_partition(client, client.session(), "after", 2, len(bodies))
        assert [bytes(m.body) for m in events] == bodies
