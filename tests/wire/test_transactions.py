"""Transactions with confluent-kafka: commit, abort, read_committed, timeouts."""
from __future__ import annotations

import time

import pytest

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from kafka_wire.testing import EmulatedBroker


def _txn_producer(bootstrap, tid, **conf):
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 1, **conf})
    p.init_transactions(15)
    return p


def _read(bootstrap, topic, isolation, count=None, timeout=5.0):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{isolation}",
                  "isolation.level": isolation, "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, 0)])
    out, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            if count is None or len(out) >= count:
                break
            continue
        out.append(m.value())
    c.close()
    return out


def test_read_committed_sees_committed_and_never_aborted_records(broker):
    broker.create_hub("txn")
    p = _txn_producer(broker.bootstrap_servers, "tx-1")
    p.begin_transaction()
    for i in range(5):
        p.produce("txn", b"committed-%d" % i, partition=0)
    p.commit_transaction(15)
    p.begin_transaction()
    for i in range(5):
        p.produce("txn", b"aborted-%d" % i, partition=0)
    p.flush(10)
    p.abort_transaction(15)
    p.begin_transaction()
    p.produce("txn", b"after", partition=0)
    p.commit_transaction(15)
    committed = _read(broker.bootstrap_servers, "txn", "read_committed", 6)
    assert committed == [b"committed-%d" % i for i in range(5)] + [b"after"]
    everything = _read(broker.bootstrap_servers, "txn", "read_uncommitted", 11)
    assert len(everything) == 11


def test_open_transaction_holds_back_read_committed_until_commit(broker):
    broker.create_hub("lso")
    p = _txn_producer(broker.bootstrap_servers, "tx-lso")
    p.begin_transaction()
    p.produce("lso", b"pending", partition=0)
    p.flush(10)
    assert _read(broker.bootstrap_servers, "lso", "read_committed", timeout=1.5) == []
    assert _read(broker.bootstrap_servers, "lso", "read_uncommitted", 1) == [b"pending"]
    for isolation, end in (("read_uncommitted", 1), ("read_committed", 0)):
        c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "x",
                      "isolation.level": isolation})
        # The last stable offset stops before the open transaction.
        assert c.get_watermark_offsets(TopicPartition("lso", 0), timeout=5) == (0, end)
        c.close()
    p.commit_transaction(15)
    assert _read(broker.bootstrap_servers, "lso", "read_committed", 1) == [b"pending"]


def test_consume_transform_produce_commits_offsets_with_the_transaction(broker):
    broker.create_hub("src")
    broker.create_hub("dst")
    plain = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(10):
        plain.produce("src", b"%d" % i, partition=0)
    plain.flush(10)
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "eos",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "isolation.level": "read_committed"})
    c.subscribe(["src"])
    p = _txn_producer(broker.bootstrap_servers, "tx-eos")
    got = []
    deadline = time.monotonic() + 20
    while len(got) < 10 and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append(m)
    p.begin_transaction()
    for m in got:
        p.produce("dst", m.value() * 2, partition=0)
    p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 10)
    p.commit_transaction(15)
    committed = c.committed([TopicPartition("src", 0)], timeout=10)
    c.close()
    assert committed[0].offset == 10
    assert _read(broker.bootstrap_servers, "dst", "read_committed", 10) == [b"%d" % i * 2 for i in range(10)]


def test_new_producer_with_same_transactional_id_fences_the_old_one(broker):
    broker.create_hub("fence")
    old = _txn_producer(broker.bootstrap_servers, "tx-fence")
    old.begin_transaction()
    old.produce("fence", b"zombie", partition=0)
    old.flush(10)
    new = _txn_producer(broker.bootstrap_servers, "tx-fence")  # aborts the open transaction
    new.begin_transaction()
    new.produce("fence", b"fresh", partition=0)
    new.commit_transaction(15)
    with pytest.raises(KafkaException):  # the zombie's commit is refused (fenced)
        old.commit_transaction(10)
    assert _read(broker.bootstrap_servers, "fence", "read_committed", 1) == [b"fresh"]


def test_transaction_timeout_aborts_on_the_virtual_clock():
    with EmulatedBroker(virtual_clock=True, in_memory=True) as b:
        b.create_hub("slowtx")
        p = _txn_producer(b.bootstrap_servers, "tx-timeout", **{"transaction.timeout.ms": 60000})
        p.begin_transaction()
        p.produce("slowtx", b"never", partition=0)
        p.flush(10)
        b.clock.advance(seconds=61)
        tx = b.call(lambda: b.broker.services.default.txns.describe("tx-timeout"))
        assert tx.state == "CompleteAbort" and tx.producer_epoch == 1
        assert _read(b.bootstrap_servers, "slowtx", "read_committed", timeout=1.5) == []
        c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "x",
                      "isolation.level": "read_uncommitted"})
        lo, hi = c.get_watermark_offsets(TopicPartition("slowtx", 0), timeout=5)
        c.close()
        assert hi == 2  # the record and the abort marker


def test_transactions_survive_a_broker_restart(broker_factory):
    b = broker_factory()
    b.create_hub("durable-tx")
    p = _txn_producer(b.bootstrap_servers, "tx-restart")
    p.begin_transaction()
    p.produce("durable-tx", b"one", partition=0)
    p.commit_transaction(15)
    b.stop()
    b2 = broker_factory()
    tx = b2.call(lambda: b2.broker.services.default.txns.describe("tx-restart"))
    assert tx is not None and tx.state == "CompleteCommit"
    p2 = _txn_producer(b2.bootstrap_servers, "tx-restart")  # epoch bumps past the old one
    tx = b2.call(lambda: b2.broker.services.default.txns.describe("tx-restart"))
    assert tx.producer_epoch == 1
    p2.begin_transaction()
    p2.produce("durable-tx", b"two", partition=0)
    p2.commit_transaction(15)
    assert _read(b2.bootstrap_servers, "durable-tx", "read_committed", 2) == [b"one", b"two"]
