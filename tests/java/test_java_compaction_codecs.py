"""Compaction is where the broker must decode batches: the LogCleaner drops
superseded records from a compressed batch and recompresses the survivors
with the batch's codec. Batches the Kafka 4.3 Java producer wrote with each
codec (gzip, snappy, lz4, zstd) are compacted, then read back by a Java
consumer (CRCs checked), confluent-kafka and kafka-python: the newest value of
every key at its original offset, no superseded record in the cleaned part,
and every batch still in the producer's codec.
"""
from __future__ import annotations

import pytest

from tests.java.pyclients import (
    CODEC_IDS, CODECS, PAD, XERIAL_MAGIC, read_confluent, read_kafka_python, stored_batches,
)

pytestmark = pytest.mark.slow

N = 200          # records per topic, one partition
KEYS = 10        # even records cycle through 10 keys, odd ones have unique keys
FLUSH = 10       # one producer batch per 10 records
CONFIGS = {"cleanup.policy": "compact", "segment.bytes": "1024", "delete.retention.ms": "0",
           "min.cleanable.dirty.ratio": "0.01"}


def _key(i: int) -> str:
    return f"k-{i % KEYS}" if i % 2 == 0 else f"u-{i}"


def _cleaner(broker):
    services = broker.broker.services
    return services.namespaces[broker.broker.config.default_namespace].cleaner


def test_compaction_recompresses_java_batches_every_client_still_reads(java, broker):
    bootstrap = broker.bootstrap_servers
    topics = {c: f"compact-java-{c}" for c in CODECS}
    for topic in topics.values():
        broker.create_hub(topic, partitions=1, configs=CONFIGS)
    res = java.run("JavaProduceConsume", bootstrap, str(N),
                   "produce=" + ",".join(f"{t}:{c}" for c, t in topics.items()), "consume=",
                   f"keys={KEYS}", f"flush={FLUSH}", timeout=120)
    assert res.returncode == 0 and "DONE" in res.lines(), \
        f"Java failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"

    cleaner = _cleaner(broker)
    cleaned_to = {}
    for c, topic in topics.items():
        result = broker.call(lambda t=topic: cleaner.clean_now(t, 0))
        assert result is not None, f"nothing cleaned in {topic}: segments did not roll"
        cleaned_to[c] = result.end_offset
        assert 0 < result.end_offset < N
        # Each batch kept its odd (unique-key) records and lost superseded even
        # ones: rewritten, i.e. decompressed and recompressed, none dropped.
        assert result.records_removed > 0 and result.batches_removed == 0, result

    res = java.run("JavaProduceConsume", bootstrap, "0", "produce=",
                   "consume=" + ",".join(topics.values()), timeout=120)
    assert res.returncode == 0 and "DONE" in res.lines(), \
        f"Java failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    java_read: dict[str, list[tuple[int, str, str]]] = {t: [] for t in topics.values()}
    for line in res.lines():
        if line.startswith("RECORD "):
            _, topic, _part, offset, key, value = line.split(" ", 5)
            java_read[topic].append((int(offset), key, value))

    for c, topic in topics.items():
        got = java_read[topic]
        values = {f"java-{c}-{i}-{PAD}": i for i in range(N)}
        # Every surviving record is at the offset it was produced at.
        assert all(values.get(v) == o and _key(o) == k for o, k, v in got), topic
        offsets = [o for o, _k, _v in got]
        assert offsets == sorted(offsets)
        latest = {_key(i): i for i in range(N)}
        assert set(latest.values()) <= set(offsets), f"{topic}: a newest value is missing"
        cleaned = [k for o, k, _v in got if o < cleaned_to[c]]
        assert len(cleaned) == len(set(cleaned)), f"{topic}: duplicate key in the cleaned part"
        assert len(got) < N, f"{topic}: nothing was compacted away"
        # Odd records have unique keys: every one of them survived.
        assert {o for o in offsets if o % 2} == set(range(1, N, 2))

        # The other clients read the recompressed batches too.
        for read in (read_confluent, read_kafka_python):
            other = read(bootstrap, topic, partitions=1, count=len(got))
            assert other == {0: [(k, v) for _o, k, v in got]}, f"{read.__name__} {topic}"

        stored = stored_batches(bootstrap, topic, partitions=1)
        assert {codec_id for codec_id, _ in stored} == {CODEC_IDS[c]}, topic
        if c == "snappy":  # recompressed with Java's (xerial) framing
            assert {head for _, head in stored} == {XERIAL_MAGIC}, stored
