"""A hub of 2,000 partitions costs a bounded number of file descriptors: its
partitions open on first use and the log's FileHandleCache closes the least
recently written ones; records still round-trip and survive a restart."""
from __future__ import annotations

import os

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_wire.log.handles import shared_cache

PARTITIONS = 2_000
SAMPLE = range(0, PARTITIONS, 97)  # 21 partitions spread across all of them
CAP = 32  # below the 84 descriptors the sample's active segments would hold
CLIENT_SLACK = 64  # sockets, pipes and eventfds of the broker's listeners and librdkafka, in this process


def descriptors(under=None) -> int:
    """Open descriptors of this process (the broker is in-process), or those on files under ``under``."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        if under is None:
            n += 1
            continue
        try:
            n += os.readlink(f"/proc/self/fd/{fd}").startswith(str(under))
        except OSError:  # closed meanwhile (the listdir's own descriptor)
            pass
    return n


@pytest.fixture
def small_cap():
    cache = shared_cache()
    saved = cache.max_open_files
    cache.max_open_files = CAP
    yield cache
    cache.max_open_files = saved


def consume(bootstrap: str, topic: str, expected: int) -> dict[int, list[bytes]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "many", "enable.auto.commit": False})
    got: dict[int, list[bytes]] = {p: [] for p in SAMPLE}
    try:
        c.assign([TopicPartition(topic, p, 0) for p in SAMPLE])
        n = 0
        for _ in range(600):  # bounded: poll waits for data, it does not sleep
            m = c.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, m.error()
            got[m.partition()].append(m.value())
            n += 1
            if n == expected:
                break
    finally:
        c.close()
    return got


def test_a_hub_of_2000_partitions_keeps_descriptors_under_the_cap(broker_factory, small_cap):
    b = broker_factory()
    data_dir = b.data_dir / b.config.default_namespace  # the partition logs (not the coordinators' files)
    baseline = descriptors()
    b.create_hub("wide", PARTITIONS)
    assert descriptors(data_dir) <= CAP
    assert descriptors() <= baseline + CAP + 8

    sent = {p: [f"{p}:{i}".encode() for i in range(3)] for p in SAMPLE}
    producer = Producer({"bootstrap.servers": b.bootstrap_servers, "acks": "all", "linger.ms": 0})
    for i in range(3):  # round robin: every partition is reopened after the cap closed it
        for p in SAMPLE:
            producer.produce("wide", sent[p][i], partition=p)
        assert producer.flush(30) == 0
        assert descriptors(data_dir) <= CAP
    assert small_cap.open_files <= CAP
    assert descriptors() <= baseline + CAP + CLIENT_SLACK
    del producer

    assert consume(b.bootstrap_servers, "wide", 3 * len(SAMPLE)) == sent
    assert descriptors(data_dir) <= CAP
    b.stop()

    b = broker_factory()
    assert descriptors(data_dir) == 0  # nothing opened before first use
    assert consume(b.bootstrap_servers, "wide", 3 * len(SAMPLE)) == sent
    assert descriptors(data_dir) == 0  # reads hold no descriptor
