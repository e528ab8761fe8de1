"""A Kafka 4.3 Java transactional producer against kafka-wire: committed and
aborted transactions (two with sendOffsetsToTransaction), then Java
read_committed and read_uncommitted consumers, and a confluent-kafka
read_committed consumer, all in agreement (tests/java/src/TxnProducer.java);
uncompressed and zstd-compressed transactional batches.
"""
from __future__ import annotations

import time

import confluent_kafka
import pytest

pytestmark = pytest.mark.slow

PARTITIONS = 2


def _values(prefix: str, partition: int) -> list[str]:
    return [f"{prefix}-{i}" for i in range(5) if i % PARTITIONS == partition]


def _records(lines: list[str], isolation: str) -> dict[int, list[tuple[int, str]]]:
    out: dict[int, list[tuple[int, str]]] = {p: [] for p in range(PARTITIONS)}
    for line in lines:
        if line.startswith(f"RECORD {isolation} "):
            _, _iso, part, offset, value = line.split(" ", 4)
            out[int(part)].append((int(offset), value))
    return out


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_read_committed_sees_only_committed_transactions_and_their_offsets(
        java, broker, compression):
    topic, group = "java-txn", "java-txn-group"
    broker.create_hub(topic, partitions=PARTITIONS)
    res = java.run("TxnProducer", broker.bootstrap_servers, topic, "java-txn-id", group,
                   compression, timeout=120)
    output = f"stdout:\n{res.stdout}\nstderr:\n{res.stderr[-3000:]}"
    assert res.returncode == 0 and res.lines()[-1] == "DONE", output
    assert res.lines()[:4] == ["TXN commit-1 committed", "TXN abort-1 aborted",
                               "TXN commit-2 committed", "TXN abort-2 aborted"], output

    committed = _records(res.lines(), "read_committed")
    uncommitted = _records(res.lines(), "read_uncommitted")
    for p in range(PARTITIONS):
        assert [v for _o, v in committed[p]] == _values("commit-1", p) + _values("commit-2", p), output
        assert [v for _o, v in uncommitted[p]] == (
            _values("commit-1", p) + _values("abort-1", p)
            + _values("commit-2", p) + _values("abort-2", p)), output
        # Each transaction ends with a control marker that takes an offset.
        offsets = [o for o, _v in uncommitted[p]]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)
        assert set(o for o, _v in committed[p]) <= set(offsets)
    # Offsets sent in the committed transaction count; those of the aborted one do not.
    assert "GROUP_OFFSET 0 42" in res.lines() and "GROUP_OFFSET 1 none" in res.lines(), output

    # librdkafka's read_committed consumer agrees with Java's.
    consumer = confluent_kafka.Consumer({"bootstrap.servers": broker.bootstrap_servers,
                                         "group.id": "txn-check", "enable.auto.commit": False,
                                         "isolation.level": "read_committed"})
    seen: dict[int, list[tuple[int, str]]] = {p: [] for p in range(PARTITIONS)}
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                         for p in range(PARTITIONS)])
        deadline = time.monotonic() + 30
        while sum(map(len, seen.values())) < 10 and time.monotonic() < deadline:
            for msg in consumer.consume(20, timeout=1):
                assert msg.error() is None, msg.error()
                seen[msg.partition()].append((msg.offset(), msg.value().decode()))
        for msg in consumer.consume(20, timeout=1):
            seen[msg.partition()].append((msg.offset(), msg.value().decode()))
    finally:
        consumer.close()
    assert seen == committed
