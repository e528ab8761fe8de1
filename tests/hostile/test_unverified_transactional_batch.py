"""A transactional batch is written only into its producer's ongoing transaction,
for a partition added to it, at its epoch (Kafka 3.6+'s verification): a batch of a
producer id never issued opened a transaction nothing would end, and held every
read_committed reader below it until the 15-minute sweep."""
from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafka_wire import codec
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient
from tests.unit.log.log_helpers import make_batch

INVALID_TXN_STATE = 48


def _produce(c: RawClient, blob: bytes, tid: str | None = None) -> int:
    r = c.request(codec.ApiKey.Produce, 7, transactional_id=tid, acks=-1, timeout_ms=5000,
                  topic_data=[("hub", [(0, blob)])])
    return r.responses[0][1][0].error_code


@pytest.fixture
def broker(tmp_path):
    with EmulatedBroker(tmp_path / "data") as b:
        b.create_hub("hub", 2)
        yield b


def _committed_values(broker) -> list[bytes]:
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "rc",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition("hub", 0, 0)])
        got = []
        for _ in range(50):  # bounded: 50 polls of up to 0.2 s after the last record
            m = c.poll(0.2)
            if m is None and got:
                break
            if m is not None and not m.error():
                got.append(m.value())
        return got
    finally:
        c.close()


@pytest.mark.parametrize("case", ["never-issued", "wrong-epoch", "partition-not-added"])
def test_a_transactional_batch_outside_its_transaction_is_refused(broker, case):
    with RawClient(broker.bootstrap_servers) as c:
        r = c.request(codec.ApiKey.InitProducerId, 1, transactional_id="t", transaction_timeout_ms=60_000)
        pid, epoch = r.producer_id, r.producer_epoch
        r = c.request(codec.ApiKey.AddPartitionsToTxn, 1, v3_and_below_transactional_id="t",
                      v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                      v3_and_below_topics=[("hub", [1])])  # partition 1, not 0
        assert r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
        rogue = {"never-issued": (424_242, 0), "wrong-epoch": (pid, epoch + 1),
                 "partition-not-added": (pid, epoch)}[case]
        blob = make_batch(1, transactional=True, producer_id=rogue[0], producer_epoch=rogue[1])
        # (an epoch not the transaction's is a fenced producer, as in Kafka's verification)
        assert _produce(c, blob, "t") == (47 if case == "wrong-epoch" else INVALID_TXN_STATE)
        assert _produce(c, make_batch(3, tag=7)) == 0
    assert len(_committed_values(broker)) == 3  # nothing holds the readers back


def test_a_batch_in_its_transaction_is_taken(broker):
    with RawClient(broker.bootstrap_servers) as c:
        r = c.request(codec.ApiKey.InitProducerId, 1, transactional_id="t", transaction_timeout_ms=60_000)
        pid, epoch = r.producer_id, r.producer_epoch
        c.request(codec.ApiKey.AddPartitionsToTxn, 1, v3_and_below_transactional_id="t",
                  v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                  v3_and_below_topics=[("hub", [0])])
        blob = make_batch(2, transactional=True, producer_id=pid, producer_epoch=epoch)
        assert _produce(c, blob, "t") == 0
        r = c.request(codec.ApiKey.EndTxn, 1, transactional_id="t", producer_id=pid,
                      producer_epoch=epoch, committed=True)
        assert r.error_code == 0
    assert len(_committed_values(broker)) == 2


def test_a_fenced_producer_is_told_it_is_fenced_not_invalid_txn_state(broker):
    # Clients (and Kafka Streams) know a zombie by the fencing error: INVALID_TXN_STATE
    # would make librdkafka abort and go on, where INVALID_PRODUCER_EPOCH is fatal.
    INVALID_PRODUCER_EPOCH = 47
    with RawClient(broker.bootstrap_servers) as c:
        r = c.request(codec.ApiKey.InitProducerId, 1, transactional_id="t", transaction_timeout_ms=60_000)
        pid, epoch = r.producer_id, r.producer_epoch
        c.request(codec.ApiKey.AddPartitionsToTxn, 1, v3_and_below_transactional_id="t",
                  v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                  v3_and_below_topics=[("hub", [0])])
        assert _produce(c, make_batch(1, transactional=True, producer_id=pid, producer_epoch=epoch), "t") == 0
        r = c.request(codec.ApiKey.InitProducerId, 1, transactional_id="t", transaction_timeout_ms=60_000)
        assert (r.producer_id, r.producer_epoch) == (pid, epoch + 1)  # a new instance fences it
        zombie = make_batch(1, transactional=True, producer_id=pid, producer_epoch=epoch, base_sequence=1)
        assert _produce(c, zombie, "t") == INVALID_PRODUCER_EPOCH
