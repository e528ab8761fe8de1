"""A consumer's repeated one-partition Fetch requests, decoded from the connection's kept
request (fetch_decoding.RepeatedFetch), read every record in order at every offset, and a
consumer that changes what it fetches (two partitions, then another one) reads right too."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_wire.apis.fetch_decoding import RepeatedFetch


def _read(consumer, n: int) -> list[tuple[int, int, bytes]]:
    got: list[tuple[int, int, bytes]] = []
    deadline = time.monotonic() + 60
    while len(got) < n and time.monotonic() < deadline:
        for m in consumer.consume(1000, 0.5):
            assert m.error() is None, m.error()
            got.append((m.partition(), m.offset(), m.value()))
    return got


def test_repeated_fetches_read_every_record_in_order(broker, monkeypatch):
    hits = []
    decode = RepeatedFetch.decode

    def counted(self, frame):
        found = decode(self, frame)
        if found is not None:
            hits.append(found[1].topics[0].partitions[0].fetch_offset)
        return found

    monkeypatch.setattr(RepeatedFetch, "decode", counted)
    broker.create_hub("rep", partitions=2)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0,
                         "batch.num.messages": 1})
    for i in range(300):
        producer.produce("rep", b"a%d" % i, partition=0)
        if i < 50:
            producer.produce("rep", b"b%d" % i, partition=1)
        producer.poll(0)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "rep",
                         "enable.auto.commit": False, "max.partition.fetch.bytes": 1,
                         "fetch.wait.max.ms": 50})
    try:
        consumer.assign([TopicPartition("rep", 0, 0)])
        assert _read(consumer, 300) == [(0, i, b"a%d" % i) for i in range(300)]
        # One batch per Fetch: nearly every request repeated the one before at the next offset.
        assert len({h for h in hits if 0 < h < 300}) >= 250
        consumer.assign([TopicPartition("rep", 0, 250), TopicPartition("rep", 1, 0)])
        got = _read(consumer, 100)
        assert sorted(g for g in got if g[0] == 0) == [(0, i, b"a%d" % i) for i in range(250, 300)]
        assert sorted(g for g in got if g[0] == 1) == [(1, i, b"b%d" % i) for i in range(50)]
        consumer.assign([TopicPartition("rep", 1, 10)])
        assert _read(consumer, 40) == [(1, i, b"b%d" % i) for i in range(10, 50)]
    finally:
        consumer.close()
