"""TxnOffsetCommit to a KIP-848 group (group.protocol=consumer) is checked against the
group's members, as Kafka's OffsetMetadataManager.validateTransactionalOffsetCommit does
with ConsumerGroup.validateOffsetCommit: a producer holding the group metadata of a member
that left, or of an epoch the member has moved on from, is fenced (KIP-447), so a zombie
cannot commit offsets and break exactly-once. An unknown member is UNKNOWN_MEMBER_ID, an
epoch not the member's ILLEGAL_GENERATION (a producer never sees STALE_MEMBER_EPOCH);
no member id with generation -1 (no group metadata given) is accepted. Before, any member
id and any epoch were accepted."""
from __future__ import annotations

import time

import kafka.errors as Errors
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from kafka_wire import codec
from tests.rawclient import RawClient

K = codec.ApiKey
HEARTBEAT, DESCRIBE = 68, 69
TIMEOUT_S = 30


def _wait(condition, what: str, poll=(), timeout: float = TIMEOUT_S):
    """Polls the given consumers (their heartbeats and callbacks run in poll) until
    ``condition()`` is true."""
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        for c in poll:
            c.poll(0.1)
    return result


def _consumer(bootstrap: str, group: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "group.protocol": "consumer", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "isolation.level": "read_committed"})


def _members(bootstrap: str, group: str) -> dict[str, tuple[int, set[int]]]:
    """ConsumerGroupDescribe: member id -> (member epoch, partitions held)."""
    with RawClient(bootstrap) as c:
        (g,) = c.request(DESCRIBE, 0, group_ids=[group], include_authorized_operations=False).groups
    assert g.error_code == 0, g
    return {m.member_id: (m.member_epoch, {p for tp in m.assignment.topic_partitions
                                           for p in tp.partitions}) for m in g.members}


def _committed(consumer: Consumer, topic: str, partition: int) -> int:
    (tp,) = consumer.committed([TopicPartition(topic, partition)], timeout=10)
    return tp.offset


def _read(consumer: Consumer, count: int) -> list:
    msgs: list = []

    def enough():
        m = consumer.poll(0.2)
        if m is not None and not m.error():
            msgs.append(m)
        return len(msgs) >= count
    _wait(enough, f"{count} records")
    return msgs


def _fill(bootstrap: str, topic: str, partitions: int, count: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap})
    for part in range(partitions):
        for i in range(count):
            p.produce(topic, b"v%d" % i, partition=part)
    assert p.flush(30) == 0


def _fenced(producer: Producer, offsets, metadata) -> KafkaError:
    """send_offsets_to_transaction (or the commit) is refused; the transaction is aborted."""
    try:
        producer.send_offsets_to_transaction(offsets, metadata, 10)
        producer.commit_transaction(10)
    except KafkaException as e:
        producer.abort_transaction(10)
        return e.args[0]
    raise AssertionError("the zombie's offsets were committed")


def test_exactly_once_commits_and_a_departed_members_metadata_is_fenced(broker):
    broker.create_hub("in", 1)
    broker.create_hub("out", 1)
    bs = broker.bootstrap_servers
    _fill(bs, "in", 1, 5)
    c = _consumer(bs, "eos")
    c.subscribe(["in"])
    msgs = _read(c, 5)
    tp = Producer({"bootstrap.servers": bs, "transactional.id": "eos-848"})
    tp.init_transactions(10)
    tp.begin_transaction()
    for m in msgs[:3]:
        tp.produce("out", m.value().upper(), partition=0)
    tp.send_offsets_to_transaction([TopicPartition("in", 0, 3)], c.consumer_group_metadata(), 10)
    tp.commit_transaction(10)
    assert _committed(c, "in", 0) == 3
    departed = c.consumer_group_metadata()
    c.close()  # the member leaves the group
    c2 = _consumer(bs, "eos")
    c2.subscribe(["in"])
    _wait(lambda: c2.assignment(), "the new member's assignment", poll=[c2])
    tp.begin_transaction()
    tp.produce("out", b"zombie", partition=0)
    error = _fenced(tp, [TopicPartition("in", 0, 5)], departed)
    assert error.code() == KafkaError.UNKNOWN_MEMBER_ID, error
    assert _committed(c2, "in", 0) == 3
    # The live member's metadata goes on committing.
    tp.begin_transaction()
    tp.produce("out", b"V3", partition=0)
    tp.send_offsets_to_transaction([TopicPartition("in", 0, 4)], c2.consumer_group_metadata(), 10)
    tp.commit_transaction(10)
    assert _committed(c2, "in", 0) == 4
    out = _consumer(bs, "reader")
    out.assign([TopicPartition("out", 0, 0)])
    # read_committed: the zombie's record was aborted with its offsets
    assert [m.value() for m in _read(out, 4)] == [b"V0", b"V1", b"V2", b"V3"]
    for x in (c2, out):
        x.close()
    tp.flush(10)


def test_a_member_whose_epoch_moved_on_is_fenced_for_the_partition_it_gave_up(broker):
    broker.create_hub("in", 2)
    bs = broker.bootstrap_servers
    a = _consumer(bs, "moving")
    a.subscribe(["in"])
    _wait(lambda: len(a.assignment()) == 2, "a's two partitions", poll=[a])
    a_id = a.memberid()
    (old_epoch, held) = _wait(lambda: _members(bs, "moving").get(a_id), "a in the group", poll=[a])
    assert held == {0, 1}
    old = a.consumer_group_metadata()
    b = _consumer(bs, "moving")
    b.subscribe(["in"])

    def moved_on():
        members = _members(bs, "moving")
        return (len(members) == 2 and members[a_id][0] > old_epoch
                and len(members[a_id][1]) == 1 and members[a_id][1]) or None
    (kept,) = _wait(moved_on, "a's new epoch with one partition", poll=[a, b])
    (given_up,) = {0, 1} - {kept}
    tp = Producer({"bootstrap.servers": bs, "transactional.id": "moving-tx"})
    tp.init_transactions(10)
    tp.begin_transaction()
    # Kafka 4.3 (KIP-1251) too: the partition is not the member's any more.
    error = _fenced(tp, [TopicPartition("in", given_up, 7)], old)
    assert error.code() == KafkaError.ILLEGAL_GENERATION, error
    assert _committed(a, "in", given_up) < 0
    for c in (a, b):
        c.close()
    tp.flush(10)


def _heartbeat(client, member: str, epoch: int):
    r = client.request(HEARTBEAT, 1, group_id="g", member_id=member, member_epoch=epoch,
                       instance_id=None, rack_id=None, rebalance_timeout_ms=30_000,
                       subscribed_topic_names=["orders"], server_assignor=None,
                       topic_partitions=[], subscribed_topic_regex=None)
    assert r.error_code == 0, r
    return r


def test_txn_offset_commit_answers_a_kip848_group_as_kafka(broker):
    broker.create_hub("orders", 1)
    with RawClient(broker.bootstrap_servers) as c:
        assert _heartbeat(c, "m-1", 0).member_epoch == 1
        r = c.request(K.InitProducerId, 1, transactional_id="tx", transaction_timeout_ms=60_000)
        pid, pepoch = r.producer_id, r.producer_epoch
        r = c.request(K.AddOffsetsToTxn, 1, transactional_id="tx", producer_id=pid,
                      producer_epoch=pepoch, group_id="g")
        assert r.error_code == 0, r

        def commit(member: str, generation: int, instance: str | None = None,
                   version: int = 3) -> int:
            r = c.request(K.TxnOffsetCommit, version, transactional_id="tx", group_id="g",
                          producer_id=pid, producer_epoch=pepoch, generation_id=generation,
                          member_id=member, group_instance_id=instance,
                          topics=[("orders", [(0, 5, -1, "")])])
            return r.topics[0].partitions[0].error_code

        unknown, illegal = Errors.UnknownMemberIdError.errno, Errors.IllegalGenerationError.errno
        assert [commit("m-1", 1), commit("m-1", 1, version=5), commit("", -1)] == [0, 0, 0]
        assert [commit("m-2", 1), commit("", 1), commit("", -1, instance="i-1")] == [unknown] * 3
        assert [commit("m-1", 2), commit("m-1", 0), commit("m-1", -1)] == [illegal] * 3
        _heartbeat(c, "m-1", -1)  # the last member leaves: the group goes (Empty in Kafka)
        assert [commit("m-1", 1), commit("", -1), commit("m-1", -1)] == [unknown, 0, 0]
