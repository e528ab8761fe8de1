"""A key scoped to one event hub cannot reach another hub's Kafka transaction: it
could describe one (hubs, partitions, producer id and epoch) and end it (EndTxn
checked Send on the namespace, which a hub-scoped key passes), aborting another
producer's records. Now every request naming a transactional id whose partitions
lie on a hub the key does not see is TRANSACTIONAL_ID_AUTHORIZATION_FAILED."""
from __future__ import annotations

import pytest

from kafka_wire import codec
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import MULTI_TOML
from tests.hostile.surfaces import CREDENTIALS
from tests.rawclient import RawClient
from tests.unit.log.log_helpers import make_batch

TXN_DENIED = 53
ROOT = CREDENTIALS[0]
ORDERS_ONLY = next(c for c in CREDENTIALS if c.kind == "wrong-scope")  # Send+Listen on 'orders'


@pytest.fixture
def victim(tmp_path):
    """A root-key producer mid-transaction on 'payments': (broker, its client, pid, epoch)."""
    with EmulatedBroker(tmp_path / "data", config_file=MULTI_TOML) as broker:
        with RawClient(broker.bootstrap_servers) as v:
            assert v.login(ROOT.password()) == 0
            r = v.request(codec.ApiKey.InitProducerId, 1, transactional_id="payments-txn",
                          transaction_timeout_ms=60_000)
            pid, epoch = r.producer_id, r.producer_epoch
            r = v.request(codec.ApiKey.AddPartitionsToTxn, 1, v3_and_below_transactional_id="payments-txn",
                          v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                          v3_and_below_topics=[("payments", [0])])
            assert r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == 0
            blob = make_batch(1, transactional=True, producer_id=pid, producer_epoch=epoch)
            r = v.request(codec.ApiKey.Produce, 7, transactional_id="payments-txn", acks=-1,
                          timeout_ms=5000, topic_data=[("payments", [(0, blob)])])
            assert r.responses[0][1][0].error_code == 0
            yield broker, v, pid, epoch


def test_another_hubs_transaction_can_be_neither_described_nor_ended(victim):
    broker, v, pid, epoch = victim
    with RawClient(broker.bootstrap_servers) as a:
        assert a.login(ORDERS_ONLY.password()) == 0
        s = a.request(codec.ApiKey.DescribeTransactions, 0,
                      transactional_ids=["payments-txn"]).transaction_states[0]
        assert (s.error_code, s.producer_id, s.topics) == (TXN_DENIED, -1, [])
        listed = a.request(codec.ApiKey.ListTransactions, 0, state_filters=[], producer_id_filters=[])
        assert [st.transactional_id for st in listed.transaction_states] == []
        r = a.request(codec.ApiKey.EndTxn, 1, transactional_id="payments-txn", producer_id=pid,
                      producer_epoch=epoch, committed=False)
        assert r.error_code == TXN_DENIED
        r = a.request(codec.ApiKey.AddOffsetsToTxn, 1, transactional_id="payments-txn", producer_id=pid,
                      producer_epoch=epoch, group_id="g")
        assert r.error_code == TXN_DENIED
        r = a.request(codec.ApiKey.InitProducerId, 1, transactional_id="payments-txn",
                      transaction_timeout_ms=60_000)  # it would fence the producer
        assert r.error_code == TXN_DENIED
        # Its own hub's transactions are its to use.
        r = a.request(codec.ApiKey.InitProducerId, 1, transactional_id="orders-txn",
                      transaction_timeout_ms=60_000)
        assert r.error_code == 0
    # The producer's transaction is untouched: it commits.
    r = v.request(codec.ApiKey.EndTxn, 1, transactional_id="payments-txn", producer_id=pid,
                  producer_epoch=epoch, committed=True)
    assert r.error_code == 0


def test_a_namespace_key_still_describes_every_transaction(victim):
    broker, _v, pid, _epoch = victim
    with RawClient(broker.bootstrap_servers) as a:
        assert a.login(ROOT.password()) == 0
        s = a.request(codec.ApiKey.DescribeTransactions, 0,
                      transactional_ids=["payments-txn"]).transaction_states[0]
        assert (s.error_code, s.producer_id) == (0, pid)
        listed = a.request(codec.ApiKey.ListTransactions, 0, state_filters=[], producer_id_filters=[])
        assert [st.transactional_id for st in listed.transaction_states] == ["payments-txn"]
        assert [(t.topic, list(t.partitions)) for t in s.topics] == [("payments", [0])]
