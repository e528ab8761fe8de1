"""Compression round-trips between Kafka 4.3 Java clients, confluent-kafka
(librdkafka) and kafka-python, for every codec: gzip, snappy (Java frames it
the xerial way, librdkafka raw), lz4 and zstd.

Each Python client produces one topic per codec; one JVM then produces its
own topic per codec with the default producer (idempotent: DescribeProducers
shows its producer id and sequences) and reads every topic back, CRCs checked;
confluent-kafka and kafka-python read the Java topics. The broker stores the
producers' batches as sent: fetched batches still carry the producer's codec
and, for snappy, its framing (it decodes only where it must); the hubs'
LogAppendTime stamp reaches Java as LogAppendTime with valid CRCs.
"""
from __future__ import annotations

import time

import confluent_kafka
import pytest
from kafka import KafkaProducer

from kafka_wire import codec
from tests.java.pyclients import (
    CODEC_IDS, CODECS, PAD, XERIAL_MAGIC, read_confluent, read_kafka_python, stored_batches,
)
from tests.rawclient import RawClient

pytestmark = pytest.mark.slow

PARTITIONS = 2
N = 60


def _value(client: str, codec_name: str, i: int) -> str:
    return f"{client}-{codec_name}-{i}-{PAD}"


def _produce_confluent(bootstrap: str, topic: str, codec_name: str) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap,
                                         "compression.type": codec_name, "linger.ms": 20,
                                         "enable.idempotence": True})
    errors = []
    for i in range(N):
        producer.produce(topic, key=f"k-{i}", value=_value("confluent", codec_name, i),
                         partition=i % PARTITIONS,
                         on_delivery=lambda err, _msg: err and errors.append(err))
    assert producer.flush(30) == 0 and not errors, errors


def _produce_kafka_python(bootstrap: str, topic: str, codec_name: str) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=codec_name,
                             linger_ms=20)
    try:
        futures = [producer.send(topic, key=f"k-{i}".encode(),
                                 value=_value("kafka-python", codec_name, i).encode(),
                                 partition=i % PARTITIONS) for i in range(N)]
        for f in futures:
            f.get(timeout=30)
    finally:
        producer.close(timeout=10)


def _expected(client: str, codec_name: str) -> dict[int, list[tuple[str, str]]]:
    """partition -> [(key, value)] in offset order."""
    out: dict[int, list[tuple[str, str]]] = {p: [] for p in range(PARTITIONS)}
    for i in range(N):
        out[i % PARTITIONS].append((f"k-{i}", _value(client, codec_name, i)))
    return out


def _java_records(stdout: str) -> dict[str, dict[int, list[tuple[str, str]]]]:
    got: dict[str, dict[int, list[tuple[str, str]]]] = {}
    for line in stdout.splitlines():
        if line.startswith("RECORD "):
            _, topic, part, _offset, key, value = line.split(" ", 5)
            got.setdefault(topic, {p: [] for p in range(PARTITIONS)})[int(part)].append((key, value))
    return got


def _producers(bootstrap: str, topic: str) -> dict[int, list]:
    """partition -> the active producers DescribeProducers reports."""
    req = codec.request_class(codec.ApiKey.DescribeProducers)
    with RawClient(bootstrap) as client:
        resp = client.request(codec.ApiKey.DescribeProducers, 0, topics=[
            req.TopicRequest(name=topic, partition_indexes=list(range(PARTITIONS)))])
    return {p.partition_index: p.active_producers for t in resp.topics for p in t.partitions}


def test_every_codec_round_trips_between_java_confluent_and_kafka_python(java, broker):
    bootstrap = broker.bootstrap_servers
    started_ms = int(time.time() * 1000)
    producers = {"confluent": _produce_confluent, "kafka-python": _produce_kafka_python}
    py_topics = []
    for client, produce in producers.items():
        for c in CODECS:
            topic = f"codec-{client}-{c}"
            broker.create_hub(topic, partitions=PARTITIONS)
            produce(bootstrap, topic, c)
            py_topics.append((topic, client, c))
    java_topics = [(f"codec-java-{c}", "java", c) for c in CODECS]
    for topic, _client, _c in java_topics:
        broker.create_hub(topic, partitions=PARTITIONS)

    res = java.run("JavaProduceConsume", bootstrap, str(N),
                   "produce=" + ",".join(f"{t}:{c}" for t, _cl, c in java_topics),
                   "consume=" + ",".join(t for t, _cl, _c in java_topics + py_topics),
                   timeout=120)
    assert res.returncode == 0 and "DONE" in res.lines(), \
        f"Java failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    for topic, _client, _c in java_topics:
        assert f"ACKED {topic} {N}" in res.lines()

    # Java's default producer is idempotent: one producer id per topic, and
    # sequences 0..N/PARTITIONS-1 on each partition.
    for topic, _client, _c in java_topics:
        active = _producers(bootstrap, topic)
        assert all(len(active[p]) == 1 for p in range(PARTITIONS)), active
        assert len({active[p][0].producer_id for p in range(PARTITIONS)}) == 1
        assert all(active[p][0].producer_id >= 0
                   and active[p][0].last_sequence == N // PARTITIONS - 1
                   for p in range(PARTITIONS)), active

    # Event Hubs topics stamp LogAppendTime: the broker sets the batch's
    # timestamp (and CRC, which Java checks) without recompressing.
    for topic, _client, _c in java_topics + py_topics:
        (line,) = [ln for ln in res.lines() if ln.startswith(f"TIMESTAMPS {topic} ")]
        _, _t, types, low, high = line.split()
        assert types == "LogAppendTime", line
        assert started_ms - 1000 <= int(low) <= int(high) <= int(time.time() * 1000) + 1000, line

    # Java read every topic (its own and the Python clients'), byte for byte.
    got = _java_records(res.stdout)
    for topic, client, c in java_topics + py_topics:
        assert got.get(topic) == _expected(client, c), f"Java read {topic} wrong"

    # confluent-kafka and kafka-python read the Java-compressed topics.
    for topic, client, c in java_topics:
        assert read_confluent(bootstrap, topic, PARTITIONS, N) == _expected(client, c), \
            f"confluent-kafka read {topic} wrong"
        assert read_kafka_python(bootstrap, topic, PARTITIONS, N) == _expected(client, c), \
            f"kafka-python read {topic} wrong"

    # Stored as produced: every batch keeps its producer's codec.
    for topic, client, c in java_topics + py_topics:
        stored = stored_batches(bootstrap, topic, PARTITIONS)
        assert stored and {codec_id for codec_id, _ in stored} == {CODEC_IDS[c]}, topic
        if c == "snappy":  # both framings reach the other clients unchanged
            xerial = {head == XERIAL_MAGIC for _, head in stored}
            assert xerial == {client != "confluent"}, (topic, stored)
