"""[limits] kafka_groups_per_namespace holds however a group comes to be: an OffsetCommit or a
transaction's TxnOffsetCommit to a new group id makes the group (it keeps the offsets), so
past the bound either is refused with POLICY_VIOLATION, as a JoinGroup is; commits to the
groups there are go on."""
from __future__ import annotations

import kafka.errors as Errors
import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from kafka_wire import codec
from kafka_wire.eventhubs.bounds import Bounds
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

BOUND = 5
POLICY_VIOLATION = Errors.PolicyViolationError.errno


@pytest.fixture
def broker():
    with EmulatedBroker(bounds=Bounds(kafka_groups_per_namespace=BOUND)) as b:
        with RawClient(b.bootstrap_servers) as c:
            r = c.request(codec.ApiKey.CreateTopics, 4, topics=[("t1", 1, 1, [], [])],
                          timeout_ms=5000, validate_only=False)
            assert r.topics[0].error_code == 0, r
        yield b


def _commit(c: RawClient, group: str, offset: int = 1, generation: int = -1) -> int:
    r = c.request(codec.ApiKey.OffsetCommit, 2, group_id=group,
                  generation_id_or_member_epoch=generation, member_id="", retention_time_ms=-1,
                  topics=[("t1", [(0, offset, "")])])
    return r.topics[0].partitions[0].error_code


def _groups(c: RawClient) -> set[str]:
    return {g.group_id for g in c.request(codec.ApiKey.ListGroups, 4, states_filter=[]).groups}


def test_offset_commits_to_new_groups_stop_at_the_bound(broker):
    # Before: 2,000 commits to new group ids all succeeded (JoinGroup was refused at 6).
    with RawClient(broker.bootstrap_servers) as c:
        assert [_commit(c, f"g{i}") for i in range(BOUND)] == [0] * BOUND
        assert [_commit(c, f"new{i}") for i in range(20)] == [POLICY_VIOLATION] * 20
        assert _groups(c) == {f"g{i}" for i in range(BOUND)}
        assert _commit(c, "g0", offset=2) == 0  # a group there commits on
        r = c.request(codec.ApiKey.JoinGroup, 5, group_id="joiner", session_timeout_ms=6000,
                      rebalance_timeout_ms=200, member_id="", group_instance_id=None,
                      protocol_type="consumer", protocols=[("range", b"")])
        assert r.error_code == POLICY_VIOLATION  # commits count towards the bound too
        # An old generation of a group that is gone is not a new group: Kafka's answer.
        assert _commit(c, "gone", generation=3) == Errors.IllegalGenerationError.errno


def test_a_transactions_offset_commit_to_a_new_group_stops_at_the_bound(broker):
    with RawClient(broker.bootstrap_servers) as c:
        assert [_commit(c, f"g{i}") for i in range(BOUND)] == [0] * BOUND
        r = c.request(codec.ApiKey.InitProducerId, 1, transactional_id="tx",
                      transaction_timeout_ms=60000)
        assert r.error_code == 0, r
        pid, epoch = r.producer_id, r.producer_epoch
        for group, expected in (("g1", 0), ("brand-new", POLICY_VIOLATION)):
            r = c.request(codec.ApiKey.AddOffsetsToTxn, 1, transactional_id="tx", producer_id=pid,
                          producer_epoch=epoch, group_id=group)
            assert r.error_code == 0, r
            r = c.request(codec.ApiKey.TxnOffsetCommit, 2, transactional_id="tx", group_id=group,
                          producer_id=pid, producer_epoch=epoch,
                          topics=[("t1", [(0, 7, -1, "")])])
            assert r.topics[0].partitions[0].error_code == expected, (group, r)
        r = c.request(codec.ApiKey.EndTxn, 1, transactional_id="tx", producer_id=pid,
                      producer_epoch=epoch, committed=True)
        assert r.error_code == 0, r
        assert _groups(c) == {f"g{i}" for i in range(BOUND)}


def test_one_transaction_cannot_commit_past_the_bound_to_many_new_groups(broker):
    # Before: the groups were made only at EndTxn (and then only as offsets, listed by no
    # ListGroups until a restart), so each TxnOffsetCommit saw the count below the bound.
    with RawClient(broker.bootstrap_servers) as c:
        assert [_commit(c, f"g{i}") for i in range(BOUND - 2)] == [0] * (BOUND - 2)
        r = c.request(codec.ApiKey.InitProducerId, 1, transactional_id="tx",
                      transaction_timeout_ms=60000)
        pid, epoch = r.producer_id, r.producer_epoch
        codes = []
        for group in [f"t{i}" for i in range(6)]:
            r = c.request(codec.ApiKey.AddOffsetsToTxn, 1, transactional_id="tx", producer_id=pid,
                          producer_epoch=epoch, group_id=group)
            assert r.error_code == 0, r
            r = c.request(codec.ApiKey.TxnOffsetCommit, 2, transactional_id="tx", group_id=group,
                          producer_id=pid, producer_epoch=epoch,
                          topics=[("t1", [(0, 7, -1, "")])])
            codes.append(r.topics[0].partitions[0].error_code)
        assert codes == [0, 0] + [POLICY_VIOLATION] * 4
        r = c.request(codec.ApiKey.EndTxn, 1, transactional_id="tx", producer_id=pid,
                      producer_epoch=epoch, committed=True)
        assert r.error_code == 0, r
        assert _groups(c) == {"g0", "g1", "g2", "t0", "t1"}
        r = c.request(codec.ApiKey.OffsetFetch, 1, group_id="t1", topics=[("t1", [0])])
        assert r.topics[0].partitions[0].committed_offset == 7


def test_a_client_committing_without_subscribing_is_told_the_bound(broker):
    # confluent-kafka (librdkafka): assign() and commit, no group membership.
    with RawClient(broker.bootstrap_servers) as c:
        assert [_commit(c, f"g{i}") for i in range(BOUND)] == [0] * BOUND
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "one-too-many",
                         "enable.auto.commit": False, "socket.timeout.ms": 10000})
    try:
        with pytest.raises(KafkaException) as caught:
            consumer.commit(offsets=[TopicPartition("t1", 0, 1)], asynchronous=False)
        assert caught.value.args[0].code() == POLICY_VIOLATION, caught.value
    finally:
        consumer.close()
