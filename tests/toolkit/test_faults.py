"""Injected faults look like a real cluster's failures; real clients ride them out."""
from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kafka_wire import codec
from tests.rawclient import RawClient


def _read(bootstrap, topic, partitions, count, timeout=30):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out = {p: [] for p in range(partitions)}
    deadline = time.monotonic() + timeout
    while sum(map(len, out.values())) < count and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            out[m.partition()].append(m.value())
    c.close()
    return out


def test_idempotent_producer_delivers_exactly_once_in_order_through_not_leader_errors(broker):
    broker.create_hub("flaky", partitions=2)
    broker.faults.fail("Produce", "NOT_LEADER_OR_FOLLOWER", count=5, topic="flaky")
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "enable.idempotence": True,
                  "linger.ms": 1, "batch.num.messages": 50, "retry.backoff.ms": 20})
    errors = []
    for i in range(2000):
        p.produce("flaky", b"%06d" % i, partition=i % 2,
                  on_delivery=lambda e, m: errors.append(e) if e else None)
        if i % 100 == 0:
            p.poll(0)
    assert p.flush(60) == 0
    assert not errors
    assert broker.faults.injected >= 5
    got = _read(broker.bootstrap_servers, "flaky", 2, 2000)
    for part in (0, 1):
        assert got[part] == [b"%06d" % i for i in range(part, 2000, 2)]


def test_partition_unavailable_moves_leader_epoch_and_clients_recover(broker):
    broker.create_hub("moving")
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all", "retry.backoff.ms": 50})
    p.produce("moving", b"before")
    p.flush(10)
    broker.faults.partition_unavailable("moving", 0, ms=700)
    delivered = []
    p.produce("moving", b"during", on_delivery=lambda e, m: delivered.append((e, m.offset())))
    p.flush(20)
    assert delivered == [(None, 1)]
    with RawClient(broker.bootstrap_servers) as c:
        md = c.request(codec.ApiKey.Metadata, 9, topics=[
            codec.request_class(codec.ApiKey.Metadata).MetadataRequestTopic(name="moving")],
            allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    assert md.topics[0].partitions[0].leader_epoch == 1
    assert _read(broker.bootstrap_servers, "moving", 1, 2)[0] == [b"before", b"during"]


def test_delayed_responses_arrive_late_but_intact(broker):
    broker.create_hub("slow")
    broker.faults.delay("Produce", ms=400, count=1)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all", "linger.ms": 0})
    start = time.monotonic()
    done = []
    p.produce("slow", b"x", on_delivery=lambda e, m: done.append(e))
    p.flush(10)
    assert done == [None]
    assert time.monotonic() - start >= 0.4


def test_failed_find_coordinator_is_retried_by_the_client(broker):
    broker.create_hub("coord")
    broker.faults.fail("FindCoordinator", "COORDINATOR_NOT_AVAILABLE", count=3)
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "retrying",
                  "auto.offset.reset": "earliest"})
    c.subscribe(["coord"])
    deadline = time.monotonic() + 20
    while not c.assignment() and time.monotonic() < deadline:
        c.poll(0.1)
    assert c.assignment()
    assert broker.faults.injected >= 3
    c.close()


def test_consumer_group_survives_dropped_connections(broker):
    broker.create_hub("dropped", partitions=2)
    # Idempotent: a produce request that reaches the broker on a connection being dropped is
    # appended but never answered, and its retry must not append it twice (a plain producer
    # would, as against Kafka, and the committed ends below would count the duplicates).
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all",
                  "enable.idempotence": True, "reconnect.backoff.ms": 20})
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "survivors",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "reconnect.backoff.ms": 20})
    c.subscribe(["dropped"])
    seen = set()
    dropped = 0
    for stage in range(4):
        for i in range(100):
            p.produce("dropped", b"%d-%d" % (stage, i), partition=i % 2)
        assert p.flush(20) == 0
        deadline = time.monotonic() + 30
        while len(seen) < 100 * (stage + 1) and time.monotonic() < deadline:
            m = c.poll(0.05)
            if m is not None and not m.error():
                seen.add(m.value())
        c.commit(asynchronous=False)
        dropped += broker.faults.drop_connections()
    committed = c.committed([TopicPartition("dropped", 0), TopicPartition("dropped", 1)], timeout=10)
    c.close()
    assert dropped >= 6  # producer and consumer connections, every stage
    assert len(seen) == 400
    assert sorted(tp.offset for tp in committed) == [200, 200]


def test_forced_rebalance_reassigns_and_paused_fetches_hold_data(broker):
    broker.create_hub("rebal", partitions=2)
    revoked = []
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "forced",
                  "auto.offset.reset": "earliest"})
    c.subscribe(["rebal"], on_revoke=lambda cons, parts: revoked.append(len(parts)))
    deadline = time.monotonic() + 20
    while not c.assignment() and time.monotonic() < deadline:
        c.poll(0.1)
    assert broker.faults.force_rebalance("forced")
    deadline = time.monotonic() + 20
    while not revoked and time.monotonic() < deadline:
        c.poll(0.1)
    assert revoked == [2]
    while not c.assignment() and time.monotonic() < deadline:
        c.poll(0.1)
    assert len(c.assignment()) == 2

    with broker.faults.paused_fetches():
        p = Producer({"bootstrap.servers": broker.bootstrap_servers})
        p.produce("rebal", b"held", partition=0)
        p.flush(10)
        got = [m for m in (c.poll(0.3) for _ in range(3)) if m is not None and not m.error()]
        assert got == []
    deadline = time.monotonic() + 10
    while not got and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(m)
    assert got and got[0].value() == b"held"
    c.close()
