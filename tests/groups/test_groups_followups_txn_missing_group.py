"""TxnOffsetCommit (v3+) with a generation >= 0 to a group that does not exist is
ILLEGAL_GENERATION and creates nothing, as Kafka's
OffsetMetadataManager.validateTransactionalOffsetCommit answers a missing group; with
generation -1 (a member id or not) a simple group is made and the commit accepted.

A classic group's members are not kept across a restart here (Kafka keeps them in
__consumer_offsets): after one, a group without committed offsets is gone and one with
offsets is Empty. A member's commit in the middle of a transaction is refused either way
(ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID: the member has to rejoin, as its next heartbeat
is told); what the transaction had before the restart still commits."""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from tests.rawclient import RawClient

K = codec.ApiKey
ILLEGAL_GENERATION = Errors.IllegalGenerationError.errno
UNKNOWN_MEMBER = Errors.UnknownMemberIdError.errno


class _Txn:
    def __init__(self, client, tid: str, group: str) -> None:
        self.c, self.tid, self.group = client, tid, group
        r = client.request(K.InitProducerId, 1, transactional_id=tid, transaction_timeout_ms=60_000)
        assert r.error_code == 0, r
        self.pid, self.epoch = r.producer_id, r.producer_epoch
        self.add_offsets()

    def add_offsets(self) -> None:
        r = self.c.request(K.AddOffsetsToTxn, 1, transactional_id=self.tid, producer_id=self.pid,
                           producer_epoch=self.epoch, group_id=self.group)
        assert r.error_code == 0, r

    def commit_offset(self, generation: int, member: str, offset: int = 5) -> int:
        r = self.c.request(K.TxnOffsetCommit, 3, transactional_id=self.tid, group_id=self.group,
                           producer_id=self.pid, producer_epoch=self.epoch,
                           generation_id=generation, member_id=member, group_instance_id=None,
                           topics=[("in", [(0, offset, -1, "")])])
        return r.topics[0].partitions[0].error_code

    def end(self, commit: bool = True) -> None:
        r = self.c.request(K.EndTxn, 1, transactional_id=self.tid, producer_id=self.pid,
                           producer_epoch=self.epoch, committed=commit)
        assert r.error_code == 0, r


def _groups(client) -> set[str]:
    return {g.group_id for g in client.request(K.ListGroups, 4, states_filter=[]).groups}


def _committed(client, group: str) -> int:
    r = client.request(K.OffsetFetch, 7, group_id=group, topics=[("in", [0])], require_stable=True)
    return r.topics[0].partitions[0].committed_offset


def test_a_generation_of_a_group_that_never_existed_is_illegal(broker):
    broker.create_hub("in", 1)
    with RawClient(broker.bootstrap_servers) as c:
        txn = _Txn(c, "tx", "never")
        assert txn.commit_offset(1, "m-1") == ILLEGAL_GENERATION
        assert txn.commit_offset(0, "") == ILLEGAL_GENERATION
        assert "never" not in _groups(c)  # nothing made
        assert txn.commit_offset(-1, "m-1") == 0  # a simple group, as Kafka makes it
        assert "never" in _groups(c)
        txn.end()
        assert _committed(c, "never") == 5
        other = _Txn(c, "tx2", "simple")
        assert other.commit_offset(-1, "", offset=3) == 0
        other.end()
        assert _committed(c, "simple") == 3


def _join(client, group: str) -> tuple[str, int]:
    def join(member: str):
        return client.request(K.JoinGroup, 5, group_id=group, session_timeout_ms=30_000,
                              rebalance_timeout_ms=200, member_id=member, group_instance_id=None,
                              protocol_type="consumer", protocols=[("range", b"")])
    r = join("")
    if r.error_code == Errors.MemberIdRequiredError.errno:
        r = join(r.member_id)
    assert r.error_code == 0, r
    s = client.request(K.SyncGroup, 3, group_id=group, generation_id=r.generation_id,
                       member_id=r.member_id, group_instance_id=None,
                       assignments=[(r.member_id, b"")])
    assert s.error_code == 0, s
    return r.member_id, r.generation_id


def test_a_classic_members_commit_after_a_restart_mid_transaction(broker_factory):
    first = broker_factory()
    port = first.port
    first.create_hub("in", 1)
    with RawClient(first.bootstrap_servers) as c:
        member, generation = _join(c, "g")
        txn = _Txn(c, "tx", "g")
        assert txn.commit_offset(generation, member, offset=4) == 0
        h_member, h_generation = _join(c, "h")
        r = c.request(K.OffsetCommit, 7, group_id="h", generation_id_or_member_epoch=h_generation,
                      member_id=h_member, group_instance_id=None, topics=[("in", [(0, 1, -1, "")])])
        assert r.topics[0].partitions[0].error_code == 0, r
        h_txn = _Txn(c, "tx-h", "h")
        assert h_txn.commit_offset(h_generation, h_member, offset=2) == 0
    first.stop()
    second = broker_factory(listen_port=port)
    with RawClient(second.bootstrap_servers) as c:
        r = c.request(K.Heartbeat, 4, group_id="g", generation_id=generation, member_id=member,
                      group_instance_id=None)
        assert r.error_code == UNKNOWN_MEMBER, r  # the member must rejoin
        # No offsets: the group did not come back; its generation is no group's now.
        txn.c = h_txn.c = c
        assert txn.commit_offset(generation, member, offset=6) == ILLEGAL_GENERATION
        assert "g" not in _groups(c)
        txn.end()  # what the transaction got before the restart commits
        assert _committed(c, "g") == 4
        # With offsets the group is loaded Empty: its old member is unknown (as before).
        assert h_txn.commit_offset(h_generation, h_member, offset=6) == UNKNOWN_MEMBER
        new_member, new_generation = _join(c, "h")
        assert h_txn.commit_offset(new_generation, new_member, offset=6) == 0
        h_txn.end()
        assert _committed(c, "h") == 6


def test_a_classic_groups_members_are_checked_whatever_the_generation(broker):
    """ClassicGroup.validateOffsetCommit: with generation -1 a member id or instance id is
    still checked while the group has members (the generation then cannot match); only a
    commit naming no member is taken, and any once the group is Empty."""
    broker.create_hub("in", 1)
    with RawClient(broker.bootstrap_servers) as c:
        member, generation = _join(c, "cg")
        txn = _Txn(c, "tx-cg", "cg")
        assert txn.commit_offset(-1, "no-such-member") == UNKNOWN_MEMBER
        assert txn.commit_offset(-1, member) == ILLEGAL_GENERATION
        assert txn.commit_offset(generation + 1, member) == ILLEGAL_GENERATION
        assert txn.commit_offset(generation, "no-such-member") == UNKNOWN_MEMBER
        assert txn.commit_offset(-1, "", offset=3) == 0  # no group metadata: nothing to fence
        assert txn.commit_offset(generation, member, offset=4) == 0
        txn.end()
        assert _committed(c, "cg") == 4
        r = c.request(K.LeaveGroup, 3, group_id="cg", members=[(member, None)])
        assert r.error_code == 0, r
        later = _Txn(c, "tx-cg2", "cg")
        assert later.commit_offset(-1, member, offset=7) == 0  # Empty: a tool's commit
        later.end()
        assert _committed(c, "cg") == 7
