"""A transactional id whose producer epochs run out (KIP-360): an open transaction at the
last epoch handed out (32766) is aborted under the producer id the partitions hold it by,
at epoch 32767, so the last stable offset moves on at once; only then does the next
producer of the id get a new producer id (epoch 0)."""
from __future__ import annotations

import time

import kafka.errors as Errors
import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from kafka_wire import codec
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

NONE = Errors.NoError.errno
LAST_EPOCH = 32766  # the last epoch a producer is given; 32767 only fences


def _exhaust(bootstrap: str, tid: str) -> int:
    """Restart ``tid``'s producer until its epoch is 32765 (32,766 InitProducerId, ~2 s):
    the next producer gets the last epoch. Its producer id."""
    with RawClient(bootstrap) as raw:
        for _ in range(LAST_EPOCH):
            r = raw.request(codec.ApiKey.InitProducerId, 1, transactional_id=tid,
                            transaction_timeout_ms=60000)
            assert r.error_code == NONE, r
    assert r.producer_epoch == LAST_EPOCH - 1
    return r.producer_id


def _txn_producer(bootstrap: str, tid: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 1,
                  "transaction.timeout.ms": 60000})
    p.init_transactions(15)
    return p


def _open_at_last_epoch(b: EmulatedBroker, tid: str) -> tuple[Producer, int]:
    """A producer of ``tid`` at epoch 32766 with a transaction open in ``t``-0 (offset 0),
    then a plain record (offset 1) that read_committed readers wait behind."""
    pid = _exhaust(b.bootstrap_servers, tid)
    tp = _txn_producer(b.bootstrap_servers, tid)
    st = _state(b, tid)
    assert (st.producer_id, st.producer_epoch) == (pid, LAST_EPOCH)
    tp.begin_transaction()
    tp.produce("t", b"in-txn", partition=0)
    tp.flush(10)
    p = Producer({"bootstrap.servers": b.bootstrap_servers})
    p.produce("t", b"after", partition=0)
    p.flush(10)
    return tp, pid


def _state(b: EmulatedBroker, tid: str):
    return b.call(lambda: b.broker.services.default.txns.describe(tid))


def _read_committed(bootstrap: str, count: int, timeout: float = 10.0) -> list[tuple[int, bytes]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "isolation.level": "read_committed",
                  "enable.auto.commit": False})
    c.assign([TopicPartition("t", 0, 0)])
    out, deadline = [], time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            out.append((m.offset(), m.value()))
    c.close()
    return out


def _end_offsets(bootstrap: str) -> tuple[int, int]:
    """(last stable offset, high watermark) of ``t``-0."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "w", "isolation.level": "read_committed"})
    try:
        _, lso = c.get_watermark_offsets(TopicPartition("t", 0), timeout=5)
        c.close()
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "w", "isolation.level": "read_uncommitted"})
        _, hw = c.get_watermark_offsets(TopicPartition("t", 0), timeout=5)
        return lso, hw
    finally:
        c.close()


def test_new_producer_aborts_the_last_epochs_transaction_under_its_producer_id(broker):
    bs = broker.bootstrap_servers
    broker.create_hub("t", 1)
    old, pid = _open_at_last_epoch(broker, "x")
    new = _txn_producer(bs, "x")  # the application restarted: its open transaction is aborted
    st = _state(broker, "x")
    assert st.state == "CompleteAbort"
    assert st.producer_id != pid and st.producer_epoch == 0  # a new id for the new producer
    assert (st.last_producer_id, st.last_producer_epoch) == (pid, LAST_EPOCH)
    assert _end_offsets(bs) == (3, 3)  # the record, the plain one, the ABORT marker: nothing open
    assert _read_committed(bs, 1) == [(1, b"after")]
    new.begin_transaction()
    new.produce("t", b"fresh", partition=0)
    new.commit_transaction(15)
    assert _read_committed(bs, 2) == [(1, b"after"), (3, b"fresh")]
    with pytest.raises(KafkaException):
        old.commit_transaction(10)  # the fenced producer cannot commit what was aborted


def test_timeout_aborts_the_last_epochs_transaction_under_its_producer_id():
    with EmulatedBroker(virtual_clock=True, in_memory=True) as b:
        bs = b.bootstrap_servers
        b.create_hub("t", 1)
        _old, pid = _open_at_last_epoch(b, "y")
        b.clock.advance(seconds=61)  # past the transaction timeout (60 s)
        st = _state(b, "y")
        assert (st.state, st.producer_id, st.producer_epoch) == ("CompleteAbort", pid, LAST_EPOCH + 1)
        assert _end_offsets(bs) == (3, 3)
        assert _read_committed(bs, 1) == [(1, b"after")]
        new = _txn_producer(bs, "y")  # epoch 32767 is never handed out: a new producer id
        st = _state(b, "y")
        assert st.producer_id != pid and st.producer_epoch == 0
        new.begin_transaction()
        new.produce("t", b"fresh", partition=0)
        new.commit_transaction(15)
        assert _read_committed(bs, 2) == [(1, b"after"), (3, b"fresh")]
