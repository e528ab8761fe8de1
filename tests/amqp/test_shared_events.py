"""Receivers of one partition share the messages of the batches they read
(outgoing.SharedEvents): each batch is encoded once however many read it, a
receiver gets the same bytes as it would alone (from any start), and a lone
receiver, or one that asks for the runtime metric, keeps nothing there."""
from __future__ import annotations

import pytest
from confluent_kafka import Producer
from proton import Described, Message, symbol

from kafka_wire.amqp.outgoing import SharedEvents
from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.raw_amqp import RawAmqp

from .conftest import wait_for

COUNT = 300


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("shared") / "data", amqp=True) as b:
        b.create_hub("hub", 3)
        producer = Producer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 20})
        for partition in range(3):
            for i in range(COUNT):
                producer.produce("hub", b"event %d of %d" % (i, partition), key=None if i % 3 else b"k%d" % i,
                                 partition=partition)
        assert producer.flush(30) == 0
        yield b


def _read(client: RawAmqp, ssn, name: str, partition: int, start: int | None = None) -> list[bytes]:
    """Every event of ``partition`` from sequence number ``start`` (its start: None), raw."""
    link = ssn.receiver(name)
    link.source.address = f"hub/ConsumerGroups/$Default/Partitions/{partition}"
    if start is not None:
        selector = symbol("apache.org:selector-filter:string")
        link.source.filter.put_object({selector: Described(
            selector, f"amqp.annotation.x-opt-sequence-number >= '{start}'")})
    link.open()
    link.flow(COUNT)
    got: list[bytes] = []

    def drain():
        while link.current is not None and not link.current.partial:
            got.append(link.recv(link.current.pending))
            link.advance()
        return len(got) >= COUNT - (start or 0)

    client.wait(drain, timeout=30)
    return got


def _shared(broker):
    return broker.broker.amqp_server.shared_events


def test_two_receivers_of_a_partition_share_its_encoded_batches_and_get_what_one_alone_gets(broker):
    with RawAmqp(broker.amqp_port) as client:
        client.open()
        ssn = client.session()
        alone = _read(client, ssn, "alone", 0)
        assert broker.call(lambda: (_shared(broker).hits, _shared(broker).misses)) == (0, 0)
        # (the lone reader stays attached: the next ones are its company)
        first = _read(client, ssn, "first", 0)
        misses = broker.call(lambda: _shared(broker).misses)
        assert misses > 0
        second = _read(client, ssn, "second", 0, start=123)
        assert broker.call(lambda: _shared(broker).hits) > 0
    assert first == alone
    assert second == alone[123:]
    m = Message()
    m.decode(second[0])
    assert m.annotations["x-opt-sequence-number"] == 123
    # all receivers gone: nothing held
    assert wait_for(lambda: broker.call(lambda: (len(_shared(broker)._batches),
                                                 broker.broker.amqp_server.partition_readers)) == (0, {}))


def test_the_shared_batches_are_bounded_least_recently_used_first():
    shared = SharedEvents(max_bytes=100)
    calls = []

    def encode(name):
        calls.append(name)
        return [name.encode()]

    for name in "abcd":
        shared.events((name,), 40, lambda n=name: encode(n))
    # 160 bytes offered, 100 kept: a and b went first
    assert list(shared._batches) == [("c",), ("d",)] and shared._bytes == 80
    assert shared.events(("c",), 40, lambda: encode("c2")) == [b"c"]  # kept: not encoded again
    shared.events(("e",), 40, lambda: encode("e"))  # d is now the least recently used
    assert list(shared._batches) == [("c",), ("e",)]
    assert calls == ["a", "b", "c", "d", "e"] and (shared.hits, shared.misses) == (1, 5)
    big = SharedEvents(max_bytes=10)
    big.events(("x",), 50, lambda: [b"x"])  # one batch over the bound is still kept, alone
    assert list(big._batches) == [("x",)]
