"""A receiver that grants credit and does not read its socket costs the broker a bounded
buffer (``SEND_BUDGET`` in kafka_wire/amqp/connection.py, the transport's high-water mark,
one event), on plain AMQP, on AMQPS, on a WebSocket on the AMQP port and on a WebSocket
through the HTTP listener's upgrade; the broker buffered the whole credit window (123 MB of a 123 MB
partition). Once the client reads it gets every event, in order, and other connections are
served all the while."""
from __future__ import annotations

import pytest
from proton import Described, Message, symbol

from kafka_wire.amqp import connection
from kafka_wire.amqp.websocket import FramedTransport
from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.raw_amqp import RawAmqp, TlsRawAmqp, WsRawAmqp

from .conftest import produce, wait_for
from .test_hostile_amqp import on_loop, server_side

HUB = "slow"
EVENTS, SIZE = 3000, 8000  # 24 MB: far past the bound and what the kernel's socket buffers take
SELECTOR = symbol("apache.org:selector-filter:string")


def body(i: int) -> bytes:
    return (b"%06d" % i) * (SIZE // 6) + b"." * (SIZE % 6)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("slow") / "data", amqp=True, http=True, tls=True) as b:
        b.create_hub(HUB, 1)
        produce(b, HUB, {0: [body(i) for i in range(EVENTS)]})
        yield b


TRANSPORTS = {
    "plain": lambda b: RawAmqp(b.amqp_port),
    "tls": lambda b: TlsRawAmqp(b.amqps_port, b.ca_file),
    "websocket-amqp-port": lambda b: WsRawAmqp(b.amqp_port),
    "websocket-http-listener": lambda b: WsRawAmqp(b.http_port),
}


def buffered(conn) -> tuple[int, int]:
    """(bytes the broker holds unsent for ``conn``, its transport's high-water mark), on the
    loop: its transport's write buffer (under a WebSocket's framing, a StreamWriter's
    transport for the HTTP listener's) and what proton has not handed over yet."""
    transport = conn.transport
    if isinstance(transport, FramedTransport):
        transport = transport.inner
    transport = getattr(transport, "transport", transport)  # (a StreamWriter)
    pending = conn.engine.pending() if conn.engine is not None else 0
    return transport.get_write_buffer_size() + max(pending, 0), transport.get_write_buffer_limits()[1]


def bound(high: int) -> int:
    return connection.SEND_BUDGET + high + SIZE + 64 * 1024  # (+ flows, dispositions, framing)


def receivers(client, names: list[str], credit: int) -> list:
    ssn = client.session()
    links = []
    for name in names:
        link = ssn.receiver(name)
        link.source.address = f"{HUB}/ConsumerGroups/$Default/Partitions/0"
        link.source.filter.put_object({SELECTOR: Described(SELECTOR, "amqp.annotation.x-opt-sequence-number >= '0'")})
        link.open()
        link.flow(credit)
        links.append(link)
    while client.send_some():  # (the attaches and flows out; nothing read)
        pass
    return links


def read_all(client, links: list, count: int) -> list[list[tuple[int, bytes]]]:
    """Read until each of ``links`` has ``count`` events: per link, (sequence number, body)."""
    got: list[list] = [[] for _ in links]

    def drain():
        for link, out in zip(links, got):
            while link.current is not None and not link.current.partial:
                delivery = link.current
                message = Message()
                message.decode(link.recv(delivery.pending))
                out.append((message.annotations[symbol("x-opt-sequence-number")], bytes(message.body)))
                link.advance()
                delivery.settle()
        return all(len(out) >= count for out in got)

    client.wait(drain, timeout=90)
    return got


def held_back(broker, client) -> tuple:
    """Wait until the broker's connection for ``client`` has filled what the socket takes
    (its buffer past the transport's high-water mark: nothing more is sent until it
    drains); (the connection, the most it was seen to hold, the high-water mark)."""
    conn = server_side(broker, client)
    seen = [0, 0]

    def full() -> bool:
        size, high = on_loop(broker, lambda: buffered(conn))
        seen[0], seen[1] = max(seen[0], size), high
        return size > high

    assert wait_for(full, timeout=60), f"the broker never filled its buffer: {seen}"
    return conn, seen[0], seen[1]


@pytest.mark.parametrize("transport", list(TRANSPORTS))
def test_a_receiver_that_does_not_read_costs_the_broker_a_bounded_buffer(broker, transport):
    client = TRANSPORTS[transport](broker)
    with client:
        client.open()
        [link] = receivers(client, ["never-reads"], EVENTS)  # credit for the whole partition
        conn, most, high = held_back(broker, client)
        assert most <= bound(high), f"{most} bytes held for a client that reads nothing"

        # meanwhile another connection is served as ever
        with RawAmqp(broker.amqp_port) as other:
            other.open()
            [quick] = receivers(other, ["other"], 10)
            assert read_all(other, [quick], 10) == [[(i, body(i)) for i in range(10)]]
        still, high = on_loop(broker, lambda: buffered(conn))
        assert still <= bound(high), f"{still} bytes held for a client that reads nothing"

        # and once it reads, it gets every event in order
        assert read_all(client, [link], EVENTS) == [[(i, body(i)) for i in range(EVENTS)]]


def test_links_on_one_connection_share_its_bound(broker):
    """Five receivers of one partition (the most without owner levels) on one connection,
    none read: the connection's bound, not five of it; then each gets its events in order."""
    per_link = EVENTS // 5
    with RawAmqp(broker.amqp_port) as client:
        client.open()
        links = receivers(client, [f"r{i}" for i in range(5)], per_link)
        _, most, high = held_back(broker, client)
        assert most <= bound(high), f"{most} bytes held for a client that reads nothing"
        expected = [(i, body(i)) for i in range(per_link)]
        assert read_all(client, links, per_link) == [expected] * 5
