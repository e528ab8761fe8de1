"""KIP-848 groups are kept in the coordinator's record log (checkpoints.log), as Kafka
keeps them in __consumer_offsets: members, epochs and assignments come back after a
restart, sessions start again at load, and leaves, fencing and deletions stay done."""
from __future__ import annotations

import os
import uuid

import kafka.errors as Errors
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire.coordinator import consumer_group_records as records
from kafka_wire.coordinator.checkpoints.embedded import EmbeddedCheckpointStore
from kafka_wire.coordinator.clock import VirtualClock
from kafka_wire.coordinator.config import GroupCoordinatorConfig
from kafka_wire.coordinator.group_coordinator import GroupCoordinator
from kafka_wire.coordinator.record_log import scan

NONE = Errors.NoError.errno
T_ID = uuid.UUID(int=1)
SESSION = GroupCoordinatorConfig().consumer_group_session_timeout_ms


class Broker:
    """A coordinator on a store in ``directory``, restarted at will on the same clock."""

    def __init__(self, directory, partitions=6):
        self.directory = directory
        self.clock = VirtualClock()
        self.sizes = {"t": partitions}
        self.store = self.c = None
        self.start()

    def meta(self, topic):
        return (T_ID, self.sizes[topic]) if topic in self.sizes else None

    def start(self):
        self.store = EmbeddedCheckpointStore(self.directory, background_compaction=False)
        self.c = GroupCoordinator(self.clock, GroupCoordinatorConfig(), store=self.store,
                                  namespace="ns", topic_metadata=self.meta,
                                  partition_exists=lambda t, p: p < self.sizes.get(t, 0))
        self.c.start()

    def restart(self):
        self.c.close()
        self.store.close()
        self.start()

    def hb(self, member_id="", epoch=0, owned=None, topics=("t",), group="g", instance=None):
        if epoch == 0:
            return self.c.consumer_group_heartbeat(group, member_id, 0, instance, None, 30_000,
                                                   list(topics), None, [])
        return self.c.consumer_group_heartbeat(group, member_id, epoch, instance, None, -1,
                                               None, None, owned)

    def stable(self, n=2):
        """n members, reconciled: {member id: (epoch, owned)}."""
        members = {}
        for _ in range(n):
            r = self.hb()
            members[r.member_id] = (r.member_epoch, r.assignment or [])
        for _ in range(4):
            for mid, (epoch, owned) in list(members.items()):
                r = self.hb(mid, epoch, owned)
                assert r.error_code == NONE, r
                members[mid] = (r.member_epoch, owned if r.assignment is None else r.assignment)
        return members

    def commit(self, mid, epoch, offset=5, version=9, group="g"):
        return [r.error_code for r in self.c.commit_offsets(
            group, epoch, mid, None, [("t", 0, offset, -1, "")], api_version=version)]

    def described(self, group="g"):
        d = self.c.describe_consumer_groups([group])[0]
        return (d.error_code, d.group_epoch, d.assignment_epoch,
                sorted((m.member_id, m.member_epoch, m.assignment, m.target_assignment,
                        m.subscribed_topic_names) for m in d.members))

    def log_size(self):
        return os.path.getsize(self.store.path)


@pytest.fixture
def broker(tmp_path):
    b = Broker(tmp_path / "ckpt")
    yield b
    b.c.close()
    b.store.close()


def test_members_epochs_and_assignments_come_back_after_a_restart(broker):
    members = broker.stable(2)
    before = broker.described()
    assert before[0] == NONE and len(before[3]) == 2
    broker.restart()
    assert broker.described() == before
    for mid, (epoch, owned) in members.items():
        # A commit between the restart and the member's next heartbeat is accepted...
        assert broker.commit(mid, epoch) == [NONE]
        # ...and so is its heartbeat with the epoch it had: nothing to change.
        r = broker.hb(mid, epoch, owned)
        assert (r.error_code, r.member_epoch, r.assignment) == (NONE, epoch, None), r
    assert broker.described() == before


def test_a_heartbeat_that_changes_nothing_writes_nothing(broker):
    members = broker.stable(2)
    size = broker.log_size()
    for _ in range(3):
        for mid, (epoch, owned) in members.items():
            assert broker.hb(mid, epoch, owned).error_code == NONE
    assert broker.log_size() == size


def test_a_member_that_does_not_come_back_is_fenced_a_session_after_the_restart(broker):
    members = broker.stable(2)
    (a, (ea, oa)), (b, _) = members.items()
    broker.restart()
    broker.clock.advance(SESSION - 1)
    assert broker.hb(a, ea, oa).error_code == NONE  # a's session starts again
    broker.clock.advance(SESSION - 1)
    assert broker.hb(a, ea, oa).error_code == NONE
    # b's session started at the restart and lapsed: fenced, as without a restart.
    assert [m for m, *_ in broker.described()[3]] == [a]
    broker.restart()
    assert [m for m, *_ in broker.described()[3]] == [a]  # the fencing was written
    r = broker.hb(b, 1, [])
    assert r.error_code == Errors.UnknownMemberIdError.errno


def test_leaves_and_deletions_are_not_brought_back(broker):
    members = broker.stable(2)
    (a, (ea, _)), (b, (eb, _)) = members.items()
    assert broker.c.consumer_group_heartbeat("g", a, -1).error_code == NONE
    broker.restart()
    assert [m for m, *_ in broker.described()[3]] == [b]
    assert broker.c.consumer_group_heartbeat("g", b, -1).error_code == NONE
    broker.restart()
    # The group had no offsets: it went with its last member, and stays gone.
    assert broker.described()[0] == Errors.GroupIdNotFoundError.errno
    # With offsets it stays (Empty) until deleted; deleted, it stays deleted.
    m = broker.hb()
    assert broker.commit(m.member_id, m.member_epoch) == [NONE]
    assert broker.c.consumer_group_heartbeat("g", m.member_id, -1).error_code == NONE
    broker.restart()
    assert broker.c.list_groups()[0][2] == "Empty"
    assert [d.error_code for d in broker.c.delete_groups(["g"])] == [NONE]
    broker.restart()
    assert broker.c.list_groups() == []


def test_a_static_member_replaced_while_away_stays_replaced(broker):
    r = broker.hb(instance="i1")
    old = r.member_id
    assert broker.c.consumer_group_heartbeat("g", old, -2, "i1").error_code == NONE
    new = broker.hb(instance="i1")
    assert new.error_code == NONE and new.member_id != old
    broker.restart()
    assert [m for m, *_ in broker.described()[3]] == [new.member_id]
    r = broker.c.consumer_group_heartbeat("g", new.member_id, new.member_epoch, "i1", None, -1,
                                          None, None, new.assignment)
    assert (r.error_code, r.member_epoch) == (NONE, new.member_epoch)


def test_offset_commit_answers_as_kafka_4(broker):
    members = broker.stable(1)
    (mid, (epoch, _)), = members.items()
    assert broker.commit("who", epoch) == [Errors.UnknownMemberIdError.errno]
    assert broker.commit(mid, epoch + 1) == [Errors.StaleMemberEpochError.errno]
    assert broker.commit(mid, epoch - 1) == [Errors.StaleMemberEpochError.errno]
    # A KIP-848 member must use v9+ (OffsetMetadataManager: UNSUPPORTED_VERSION).
    assert broker.commit(mid, epoch, version=8) == [Errors.UnsupportedVersionError.errno]
    assert broker.commit(mid, epoch) == [NONE]
    # A group that is not there: GROUP_ID_NOT_FOUND from v9 on, ILLEGAL_GENERATION before.
    assert broker.commit(mid, 3, group="gone") == [Errors.GroupIdNotFoundError.errno]
    assert broker.commit(mid, 3, group="gone", version=8) == [Errors.IllegalGenerationError.errno]
    assert broker.commit("", -1, group="simple") == [NONE]


def test_a_member_of_a_group_that_went_empty_is_unknown_until_the_next_cleanup(broker):
    # No offsets: the group goes with its last member here, where Kafka keeps it (Empty)
    # until its next cleanup and answers its fenced member UNKNOWN_MEMBER_ID (Java:
    # CommitFailedException, which applications handle), not GROUP_ID_NOT_FOUND.
    m = broker.hb()
    broker.clock.advance(SESSION + 1)
    assert broker.described()[0] == Errors.GroupIdNotFoundError.errno
    assert broker.commit(m.member_id, m.member_epoch) == [Errors.UnknownMemberIdError.errno]
    assert broker.commit(m.member_id, m.member_epoch, version=8) == \
        [Errors.UnknownMemberIdError.errno]
    broker.c.cleanup_expired_offsets()  # Kafka's cleanup would have deleted it now
    assert broker.commit(m.member_id, m.member_epoch) == [Errors.GroupIdNotFoundError.errno]
    # Deleted by DeleteGroups, a group is gone at once, as in Kafka.
    m = broker.hb(group="h")
    assert broker.commit(m.member_id, m.member_epoch, group="h") == [NONE]
    assert broker.c.consumer_group_heartbeat("h", m.member_id, -1).error_code == NONE
    assert [d.error_code for d in broker.c.delete_groups(["h"])] == [NONE]
    assert broker.commit(m.member_id, m.member_epoch, group="h") == \
        [Errors.GroupIdNotFoundError.errno]


def test_member_ids_and_subscriptions_past_the_record_bound_are_refused_unwritten(broker):
    size = broker.log_size()
    huge = "m" * (records.MEMBER_RECORD_MAX + 1)
    r = broker.c.consumer_group_heartbeat("g", huge, 0, None, None, 30_000, ["t"], None, [])
    assert r.error_code == Errors.InvalidRequestError.errno
    many = [f"topic-{i:06d}-" + "x" * 40 for i in range(20_000)]  # ~1 MB of names
    r = broker.c.consumer_group_heartbeat("g", "", 0, None, None, 30_000, many, None, [])
    assert r.error_code == Errors.InvalidRequestError.errno
    assert broker.log_size() == size and broker.c.list_groups() == []
    # Within the bound (20,000 short names) a member is kept whole.
    names = [f"t{i}" for i in range(20_000)] + ["t"]
    r = broker.c.consumer_group_heartbeat("g", "", 0, None, None, 30_000, names, None, [])
    assert r.error_code == NONE
    broker.restart()
    assert len(broker.described()[3][0][4]) == 20_001


def test_an_assignment_over_one_record_is_written_in_pieces_and_read_back(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "MAX_RECORD", 2_000)
    monkeypatch.setattr(records, "_PIECE_BYTES", 500)
    b = Broker(tmp_path / "ckpt", partitions=3_000)
    try:
        members = b.stable(1)
        before = b.described()
        b.restart()
        assert b.described() == before
        (mid, (epoch, owned)), = members.items()
        assert len(owned[0][1]) == 3_000
        r = b.hb(mid, epoch, owned)
        assert (r.error_code, r.member_epoch, r.assignment) == (NONE, epoch, None)
    finally:
        b.c.close()
        b.store.close()


def test_an_empty_group_without_offsets_whose_removal_was_lost_is_removed_at_load(broker):
    broker.store.write_group_records("ns", "stale", [[records.GROUP, 3, 3, []]])
    broker.restart()
    assert broker.c.list_groups() == []
    assert ("ns", "stale") not in broker.store.group_records()  # its removal written now


def test_a_read_only_store_shows_the_members_without_a_running_loop(broker):
    members = broker.stable(2)
    reader = EmbeddedCheckpointStore(broker.store.directory, read_only=True)
    try:
        # kafka-wire groups --data-dir: a SystemClock and no event loop; nothing written.
        from kafka_wire.coordinator.clock import SystemClock
        offline = GroupCoordinator(SystemClock(), store=reader, namespace="ns")
        assert set(offline.consumer.groups["g"].members) == set(members)
        offline.close()
    finally:
        reader.close()


def test_compaction_keeps_the_groups(tmp_path):
    b = Broker(tmp_path / "ckpt")
    try:
        b.store._compact_min_dead = 5
        for _ in range(10):  # members come and go: superseded records and tombstones
            m = b.hb()
            assert b.c.consumer_group_heartbeat("g", m.member_id, -1).error_code == NONE
        b.stable(3)
        before = b.described()
        b.store.compact()
        assert b.store.compactions >= 1 and b.store.dead_records == 0
        b.restart()
        assert b.described() == before
    finally:
        b.c.close()
        b.store.close()


# -- the records themselves ------------------------------------------------------------

_name = st.text(min_size=0, max_size=12)
_parts = st.lists(st.tuples(_name, st.lists(st.integers(0, 5000), max_size=30)), max_size=6)


def _body():
    member = st.text(min_size=1, max_size=8)
    return st.one_of(
        st.builds(lambda e, a, ts: [records.GROUP, e, a,
                                    [[t, uuid.UUID(int=i).bytes, n] for i, (t, n) in
                                     enumerate(ts)]],
                  st.integers(0, 2**31), st.integers(0, 2**31),
                  st.lists(st.tuples(_name, st.integers(1, 1024)), max_size=4)),
        st.just([records.GROUP_GONE]),
        st.builds(lambda m, i, names, rx: [records.MEMBER, m, i, None, "c", "/h", 30_000,
                                           names, rx, None, names if rx else None],
                  member, st.none() | _name, st.lists(_name, max_size=5), st.none() | _name),
        st.builds(lambda m: [records.MEMBER_GONE, m], member),
        st.builds(lambda m, e, a, r: [records.CURRENT, m, e, e - 1, "stable",
                                      [[t, sorted(set(ps))] for t, ps in a],
                                      [[t, sorted(set(ps))] for t, ps in r]],
                  member, st.integers(1, 1000), _parts, _parts),
        st.builds(lambda m, a: [records.TARGET, m, [[t, sorted(set(ps))] for t, ps in a]],
                  member, _parts),
    )


def _frames(bodies):
    return b"".join(blob for body in bodies
                    for blob in records.encode([body[0], "ns", "g", *body[1:]]))


def _expected(bodies):
    model = records.GroupRecords()
    model.apply_all([body[0], "ns", "g", *body[1:]] for body in bodies)
    return model.groups


def _read(data):
    got = records.GroupRecords()
    result, items = scan(data, 0, records.validate)
    for fields in items:
        got.apply(fields, result.end)
    return got, result


@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.lists(_body(), max_size=12), st.integers(40, 400))
def test_every_group_record_written_reads_back_the_same(bodies, max_record):
    # A small record bound so that assignments are split into pieces too.
    saved = records.MAX_RECORD, records._PIECE_BYTES
    records.MAX_RECORD, records._PIECE_BYTES = max_record, max_record // 4
    try:
        try:
            data = _frames(bodies)
        except ValueError:  # one item alone over the bound: refused, nothing to read
            return
    finally:
        records.MAX_RECORD, records._PIECE_BYTES = saved
    got, result = _read(data)
    assert result.problem is None and got.pending_since is None
    assert got.groups == _expected(bodies)


@settings(max_examples=150, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(_body(), min_size=1, max_size=3), min_size=1, max_size=6),
       st.data())
def test_a_torn_tail_leaves_every_whole_record_before_it(tmp_path_factory, writes, data):
    """Cut anywhere, the log reopens with the records wholly before the cut (an
    assignment's pieces only with their own record) and is cut back to their end."""
    directory = tmp_path_factory.mktemp("torn")
    store = EmbeddedCheckpointStore(directory, background_compaction=False)
    saved = records.MAX_RECORD, records._PIECE_BYTES
    records.MAX_RECORD, records._PIECE_BYTES = 200, 50  # pieces in some writes
    ends = []  # (where a record and its pieces end, the record)
    start = os.path.getsize(store.path)  # the header
    try:
        for bodies in writes:
            position = os.path.getsize(store.path)
            try:
                store.write_group_records("ns", "g", bodies)
            except ValueError:
                continue
            for body in bodies:
                position += len(b"".join(records.encode([body[0], "ns", "g", *body[1:]])))
                ends.append((position, body))
    finally:
        records.MAX_RECORD, records._PIECE_BYTES = saved
        store.close()
    cut = data.draw(st.integers(start, os.path.getsize(store.path)))
    os.truncate(store.path, cut)
    reopened = EmbeddedCheckpointStore(directory, background_compaction=False)
    try:
        whole = [(end, body) for end, body in ends if end <= cut]
        assert reopened.group_records() == _expected([body for _end, body in whole])
        assert os.path.getsize(reopened.path) == (whole[-1][0] if whole else start)
    finally:
        reopened.close()
