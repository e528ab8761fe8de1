"""kafka-python against a real in-process broker."""
from __future__ import annotations

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_with_compression(broker, codec):
    topic = f"kp-{codec or 'none'}"
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all",
                             compression_type=codec, linger_ms=5)
    futures = [producer.send(topic, key=f"k{i}".encode(), value=f"v{i}".encode() * 20,
                             headers=[("n", str(i).encode())]) for i in range(300)]
    offsets = [f.get(timeout=30).offset for f in futures]
    producer.close()
    assert offsets == list(range(300))
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False,
                             consumer_timeout_ms=10000)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got = []
    for msg in consumer:
        got.append(msg)
        if len(got) == 300:
            break
    consumer.close()
    assert [(m.offset, m.key, m.value, m.headers) for m in got] == \
           [(i, f"k{i}".encode(), f"v{i}".encode() * 20, [("n", str(i).encode())]) for i in range(300)]


def test_end_and_beginning_offsets(broker):
    broker.create_hub("ends", partitions=2)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks=1)
    for i in range(10):
        producer.send("ends", value=b"x", partition=i % 2)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers)
    tps = [TopicPartition("ends", 0), TopicPartition("ends", 1)]
    assert consumer.end_offsets(tps) == {tps[0]: 5, tps[1]: 5}
    assert consumer.beginning_offsets(tps) == {tps[0]: 0, tps[1]: 0}
    consumer.close()
