"""A Produce request carrying many partitions is admitted by the namespace's policy as a
whole when nothing in it is refused, recorded or throttled, and publication by publication
otherwise, with the same answers, report entries and throttles as one request each.

kafka-python puts every partition ready for a broker in one Produce request (librdkafka
sends one partition a request), so these tests use it; each checks from the client's own
metrics that its partitions did travel in one request."""
from __future__ import annotations

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import MessageSizeTooLargeError

from kafka_wire.eventhubs import connection_string
from kafka_wire.eventhubs.report import load
from kafka_wire.testing import EmulatedBroker

MB = 1024 * 1024

CONFIG = """
default_namespace = "admit-std"

[namespaces.admit-std]
tier = "Standard"
mode = "strict"
throughput_units = 40

[namespaces.admit-std.eventhubs.orders]
partitions = 4

[namespaces.admit-std.eventhubs.audit]
partitions = 2

[namespaces.admit-relaxed]
tier = "Standard"
throughput_units = 40

[namespaces.admit-relaxed.eventhubs.loose]
partitions = 4

[namespaces.admit-slow]
tier = "Standard"
throughput_units = 1

[namespaces.admit-slow.eventhubs.slow]
partitions = 4
"""


@pytest.fixture(scope="module")
def broker(module_tmp):
    config = module_tmp / "admission.toml"
    config.write_text(CONFIG)
    with EmulatedBroker(module_tmp / "data", config_file=config) as b:
        yield b


def producer(broker, namespace: str | None = None, **extra) -> KafkaProducer:
    """Batches wait (linger; none fills) until ``flush``, which sends them all in one request."""
    conf = dict(bootstrap_servers=broker.bootstrap_servers, acks="all", linger_ms=60_000,
                max_request_size=4 * MB, batch_size=2 * MB, request_timeout_ms=30_000, **extra)
    if namespace is not None:
        conf.update(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                    sasl_plain_username="$ConnectionString",
                    sasl_plain_password=connection_string.build(
                        f"{namespace}.servicebus.windows.net", key_name="any", key="any"))
    return KafkaProducer(**conf)


def send_in_one_request(p: KafkaProducer, sends: list[tuple[str, int, bytes]]) -> list:
    """Each (topic, partition, value) sent, all in one Produce request; their futures."""
    for topic in {t for t, _p, _v in sends}:
        p.partitions_for(topic)  # metadata first: no send waits on it
    futures = [p.send(topic, value, partition=partition) for topic, partition, value in sends]
    p.flush(30)
    metrics = p.metrics()["producer-metrics"]
    assert metrics["records-per-request-avg"] == len(sends), metrics  # one request carried them
    return futures


def report(broker) -> dict:
    broker.call(lambda: broker.broker.services.report.flush())
    return {(e["namespace"], e["rule"], e["enforced"]): e for e in load(broker.data_dir)}


def count(broker, key) -> int:
    entry = report(broker).get(key)
    return entry["count"] if entry else 0


def read_all(broker, topic: str, partitions: int) -> dict[int, list[bytes]]:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False,
                             consumer_timeout_ms=5000)
    tps = [TopicPartition(topic, i) for i in range(partitions)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    ends = consumer.end_offsets(tps)
    got: dict[int, list[bytes]] = {i: [] for i in range(partitions)}
    for msg in consumer:
        got[msg.partition].append(msg.value)
        if all(len(got[tp.partition]) >= ends[tp] for tp in tps):
            break
    consumer.close()
    return got


def test_a_request_to_two_hubs_is_appended_whole(broker):
    p = producer(broker)
    sends = [("orders", i, f"order-{i}".encode()) for i in range(4)] + \
            [("audit", i, f"audit-{i}".encode()) for i in range(2)]
    futures = send_in_one_request(p, sends)
    p.close()
    assert [(f.get(10).topic, f.get(10).partition, f.get(10).offset) for f in futures] == \
        [(t, i, 0) for t, i, _v in sends]
    assert read_all(broker, "orders", 4) == {i: [f"order-{i}".encode()] for i in range(4)}
    assert read_all(broker, "audit", 2) == {i: [f"audit-{i}".encode()] for i in range(2)}


def test_one_oversized_publication_is_refused_alone(broker):
    before = count(broker, ("admit-std", "publication-size", True))
    p = producer(broker)
    sends = [("orders", 0, b"x" * (3 * MB // 2))] + [("orders", i, b"small") for i in (1, 2, 3)]
    futures = send_in_one_request(p, sends)
    p.close()
    with pytest.raises(MessageSizeTooLargeError):
        futures[0].get(10)
    assert [f.get(10).partition for f in futures[1:]] == [1, 2, 3]
    assert count(broker, ("admit-std", "publication-size", True)) == before + 1
    assert all(values[-1] == b"small" for i, values in read_all(broker, "orders", 4).items() if i)


def test_relaxed_violations_are_reported_once_per_publication(broker):
    p = producer(broker, "admit-relaxed", compression_type="lz4")
    futures = send_in_one_request(p, [("loose", i, b"l" * 2000) for i in range(4)])
    p.close()
    assert sorted(f.get(10).partition for f in futures) == [0, 1, 2, 3]  # relaxed: appended
    assert count(broker, ("admit-relaxed", "compression", False)) == 4


def test_throughput_units_throttle_a_request_publication_by_publication(broker):
    # One unit takes 1 MB/s (a second of burst): four 400 KB publications in one request
    # overdraw it, so the partitions past the first megabyte answer with a throttle.
    quota = broker.broker.services.namespaces["admit-slow"].quota
    p = producer(broker, "admit-slow")
    futures = send_in_one_request(p, [("slow", i, bytes(400_000)) for i in range(4)])
    assert sorted(f.get(10).partition for f in futures) == [0, 1, 2, 3]  # throttled, not refused
    throttles = [m["throttle-time-max"] for group, m in p.metrics().items()
                 if group.startswith("producer-node-metrics.node-")]
    assert max(throttles) > 0
    p.close()
    assert broker.call(lambda: quota.throttled_requests) == 2  # the third and fourth publications
