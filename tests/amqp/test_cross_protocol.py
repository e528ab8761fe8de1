"""One log for both protocols: what an Azure SDK sends a Kafka client reads, and
the other way round, with the mapping Event Hubs documents for mixed traffic
(body ⇄ value, partition key ⇄ key, application properties ⇄ headers with
AMQP-encoded values, enqueued time ⇄ timestamp)."""
from __future__ import annotations

import time

from azure.eventhub import EventData
from confluent_kafka import Consumer, Producer, TopicPartition
from proton import Data

from kafka_wire.eventhubs.partition_key import partition_for_key
from tests.eventhubs.conftest import confluent_conf

from .conftest import ROOT, receive
from .test_sdk_python import consumer, producer


def kafka_password(broker) -> str:
    return broker.connection_string(namespace="contoso", policy=ROOT[0])


def kafka_read(broker, hub: str, partition: int, count: int, timeout: float = 20.0) -> list:
    c = Consumer(confluent_conf(broker.bootstrap_servers, kafka_password(broker),
                                **{"group.id": f"x-{hub}", "enable.auto.commit": False}))
    c.assign([TopicPartition(hub, partition, 0)])
    got, deadline = [], time.monotonic() + timeout
    try:
        while len(got) < count and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m)
    finally:
        c.close()
    return got


def amqp_value(raw: bytes):
    d = Data()
    d.decode(raw)
    d.rewind()
    d.next()
    value = d.get_object()
    return bytes(value) if isinstance(value, memoryview) else value


def test_sdk_events_reach_kafka_consumers(broker):
    broker.create_hub("to-kafka", 4)
    bodies = [bytes(range(256)), b"", "héllo".encode()]
    props = {"color": "red", "count": 7, "raw": b"\x00\xff", "ok": True}
    with producer(broker, "to-kafka") as p:
        batch = p.create_batch(partition_key="device-17")
        for body in bodies:
            event = EventData(body)
            event.properties = props
            batch.add(event)
        p.send_batch(batch)
    partition = partition_for_key("device-17", 4)
    got = kafka_read(broker, "to-kafka", partition, 3)
    assert [m.value() or b"" for m in got] == bodies  # byte for byte
    assert {m.key() for m in got} == {b"device-17"}
    assert [m.offset() for m in got] == [0, 1, 2]
    for m in got:
        headers = dict(m.headers())
        assert set(headers) == set(props)
        # Azure hands AMQP properties to Kafka clients AMQP-encoded: decode and compare.
        assert {n: amqp_value(v) for n, v in headers.items()} == props
    # The enqueued time is the record's timestamp, as the SDK reports it.
    (_, sdk_event), *_ = receive(consumer(broker, "to-kafka"), 1, partition_id=str(partition),
                                 starting_position="-1")
    assert got[0].timestamp()[1] == int(sdk_event.enqueued_time.timestamp() * 1000)


def test_kafka_records_reach_sdk_receivers(broker):
    broker.create_hub("from-kafka", 2)
    p = Producer(confluent_conf(broker.bootstrap_servers, kafka_password(broker)))
    sent = [(b"k-1", bytes(range(255, -1, -1)), [("h1", b"v1"), ("bin", b"\x00\x01\x02")]),
            (None, b"no key", []),
            (b"k-2", b"", [("empty", b"")])]
    for key, value, headers in sent:
        p.produce("from-kafka", value=value, key=key, headers=headers, partition=1)
    assert p.flush(10) == 0
    got = [e for _, e in receive(consumer(broker, "from-kafka"), 3, partition_id="1",
                                 starting_position="-1")]
    assert [b"".join(e.body) for e in got] == [v for _, v, _ in sent]
    assert [e.sequence_number for e in got] == [0, 1, 2]
    assert [e.partition_key for e in got] == [b"k-1", None, b"k-2"]
    for event, (_, _, headers) in zip(got, sent):
        # Kafka headers arrive as application properties with binary values.
        assert {k.decode() if isinstance(k, bytes) else k: v
                for k, v in (event.properties or {}).items()} == dict(headers)


def test_keyed_kafka_and_sdk_sends_share_partitions(broker):
    """The same key from both protocols: the SDK's partition key is hashed the
    Event Hubs way; a Kafka key is hashed the Kafka way (murmur2, by the
    client), as on Azure. Both land in the one log, each readable by both."""
    broker.create_hub("mixed", 1)
    p = Producer(confluent_conf(broker.bootstrap_servers, kafka_password(broker)))
    p.produce("mixed", value=b"from kafka", key=b"k")
    assert p.flush(10) == 0
    with producer(broker, "mixed") as sdk:
        sdk.send_batch([EventData(b"from sdk")], partition_key="k")
    kafka_side = kafka_read(broker, "mixed", 0, 2)
    sdk_side = [e for _, e in receive(consumer(broker, "mixed"), 2, partition_id="0",
                                      starting_position="-1")]
    assert [m.value() for m in kafka_side] == [b"".join(e.body) for e in sdk_side] \
        == [b"from kafka", b"from sdk"]
    assert [m.key() for m in kafka_side] == [b"k", b"k"]
