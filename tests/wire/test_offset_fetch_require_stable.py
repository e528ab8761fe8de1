"""OffsetFetch with require_stable (KIP-447): while a transaction holds an offset commit
for a group's partition (TxnOffsetCommit, not yet ended), that partition is answered
UNSTABLE_OFFSET_COMMIT with no offset; the client asks again until the transaction ends,
so a read_committed member that joins mid-transaction starts where the transaction's
commit puts it, not at the older committed offset (records processed twice)."""
from __future__ import annotations

import time

import kafka.errors as Errors
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_wire import codec
from tests.rawclient import RawClient

NONE = Errors.NoError.errno
UNSTABLE = Errors.UnstableOffsetCommitError.errno
Req = codec.request_class(codec.ApiKey.OffsetFetch)


def _committed(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> Consumer:
    """A consumer of ``group`` (not subscribed) that has committed ``offsets``."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
    return c


def _pending(bootstrap: str, tid: str, group_metadata, offsets: dict[tuple[str, int], int]) -> Producer:
    """A transactional producer with an open transaction holding ``offsets`` for the group."""
    tp = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 1})
    tp.init_transactions(15)
    tp.begin_transaction()
    tp.produce("out", b"processed", partition=0)
    tp.send_offsets_to_transaction([TopicPartition(t, p, o) for (t, p), o in offsets.items()],
                                   group_metadata, 15)
    return tp


def _fetch(raw: RawClient, version: int, group: str, require_stable: bool,
           partitions: dict[str, list[int]] | None) -> tuple[int, dict]:
    """(top-level or group error, {(topic, partition): (offset, error)}) of one OffsetFetch."""
    if version >= 8:
        topics = None if partitions is None else [
            Req.OffsetFetchRequestGroup.OffsetFetchRequestTopics(name=t, partition_indexes=ps)
            for t, ps in partitions.items()]
        r = raw.request(codec.ApiKey.OffsetFetch, version, require_stable=require_stable, groups=[
            Req.OffsetFetchRequestGroup(group_id=group, member_id=None, member_epoch=-1, topics=topics)])
        [g] = r.groups
        error, topics = g.error_code, g.topics
    else:
        topics = None if partitions is None else [
            Req.OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in partitions.items()]
        r = raw.request(codec.ApiKey.OffsetFetch, version, group_id=group, topics=topics,
                        require_stable=require_stable)
        error, topics = r.error_code, r.topics
    return error, {(t.name, p.partition_index): (p.committed_offset, p.error_code)
                   for t in topics for p in t.partitions}


def test_require_stable_answers_unstable_offset_commit_while_a_transaction_holds_the_offset(broker):
    bs = broker.bootstrap_servers
    broker.create_hub("in", 2)
    broker.create_hub("out", 1)
    c0 = _committed(bs, "G", {("in", 0): 2, ("in", 1): 5})
    tp = _pending(bs, "t-stable", c0.consumer_group_metadata(), {("in", 0): 8})
    with RawClient(bs) as raw:
        for version in (7, 8, 9):
            named = _fetch(raw, version, "G", True, {"in": [0, 1]})
            assert named == (NONE, {("in", 0): (-1, UNSTABLE), ("in", 1): (5, NONE)}), version
            # null topics: every committed partition, the pending one refused the same way
            assert _fetch(raw, version, "G", True, None) == named, version
            # without require_stable: the committed offset, as Kafka answers it
            assert _fetch(raw, version, "G", False, {"in": [0, 1]}) == (
                NONE, {("in", 0): (2, NONE), ("in", 1): (5, NONE)}), version
        assert _fetch(raw, 8, "other", True, {"in": [0]}) == (NONE, {("in", 0): (-1, NONE)})
        tp.commit_transaction(15)
        for version in (7, 8, 9):
            assert _fetch(raw, version, "G", True, {"in": [0, 1]}) == (
                NONE, {("in", 0): (8, NONE), ("in", 1): (5, NONE)}), version
    c0.close()


def test_an_aborted_transaction_leaves_the_committed_offset_stable(broker):
    bs = broker.bootstrap_servers
    broker.create_hub("in", 1)
    broker.create_hub("out", 1)
    c0 = _committed(bs, "G", {("in", 0): 2})
    tp = _pending(bs, "t-abort", c0.consumer_group_metadata(), {("in", 0): 8})
    with RawClient(bs) as raw:
        assert _fetch(raw, 9, "G", True, {"in": [0]}) == (NONE, {("in", 0): (-1, UNSTABLE)})
        tp.abort_transaction(15)
        assert _fetch(raw, 9, "G", True, {"in": [0]}) == (NONE, {("in", 0): (2, NONE)})
    c0.close()


def test_read_committed_member_joining_mid_transaction_starts_at_the_transactions_offset(broker):
    bs = broker.bootstrap_servers
    broker.create_hub("in", 1)
    broker.create_hub("out", 1)
    p = Producer({"bootstrap.servers": bs})
    for i in range(10):
        p.produce("in", b"%d" % i, partition=0)
    p.flush(10)
    c0 = _committed(bs, "G", {("in", 0): 2})
    tp = _pending(bs, "t-join", c0.consumer_group_metadata(), {("in", 0): 8})  # processed 2..7
    c0.close()
    assigned = []
    c = Consumer({"bootstrap.servers": bs, "group.id": "G", "isolation.level": "read_committed",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.subscribe(["in"], on_assign=lambda _c, parts: assigned.extend(parts))
    try:
        early = []
        deadline = time.monotonic() + 20
        while not assigned and time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is not None and not m.error():
                early.append(m.offset())
        assert assigned, "the member was never assigned the partition"
        # Assigned: librdkafka now asks for the committed offset (require_stable). It would
        # read offset 2 within milliseconds if answered; it must wait for the transaction.
        window = time.monotonic() + 2
        while time.monotonic() < window:
            m = c.poll(0.1)
            if m is not None and not m.error():
                early.append(m.offset())
        assert early == []
        tp.commit_transaction(15)
        first = None
        deadline = time.monotonic() + 20
        while first is None and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                first = m.offset()
        assert first == 8
    finally:
        c.close()


def test_pending_offsets_read_back_at_start_are_unstable_until_the_transaction_ends(broker_factory):
    b = broker_factory()
    bs = b.bootstrap_servers
    b.create_hub("in", 1)
    b.create_hub("out", 1)
    c0 = _committed(bs, "G", {("in", 0): 2})
    _pending(bs, "t-restart", c0.consumer_group_metadata(), {("in", 0): 8})
    c0.close()
    b.stop()
    b2 = broker_factory()  # the transaction is still open in the coordinator's state
    st = b2.call(lambda: b2.broker.services.default.txns.describe("t-restart"))
    assert st.state == "Ongoing"
    with RawClient(b2.bootstrap_servers) as raw:
        assert _fetch(raw, 9, "G", True, {"in": [0]}) == (NONE, {("in", 0): (-1, UNSTABLE)})
        r = raw.request(codec.ApiKey.EndTxn, 3, transactional_id="t-restart", producer_id=st.producer_id,
                        producer_epoch=st.producer_epoch, committed=True)
        assert r.error_code == NONE
        assert _fetch(raw, 9, "G", True, {"in": [0]}) == (NONE, {("in", 0): (8, NONE)})
