"""KIP-848 consumer groups: epochs, reconciliation, timeouts, static members."""
from __future__ import annotations

import random
import uuid

import kafka.errors as Errors
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.coordinator.assignors import RangeAssignor, UniformAssignor
from kafka_wire.coordinator.clock import VirtualClock
from kafka_wire.coordinator.config import GroupCoordinatorConfig
from kafka_wire.coordinator.group_coordinator import GroupCoordinator

NONE = Errors.NoError.errno
T_ID = uuid.UUID(int=1)
U_ID = uuid.UUID(int=2)


class World:
    def __init__(self, partitions=6, **config):
        self.sizes = {"t": partitions, "u": 2}
        self.ids = {"t": T_ID, "u": U_ID}
        self.clock = VirtualClock()
        self.c = GroupCoordinator(self.clock, GroupCoordinatorConfig(**config),
                                  topic_metadata=self.meta)

    def meta(self, topic):
        return (self.ids[topic], self.sizes[topic]) if topic in self.sizes else None

    def hb(self, member_id="", epoch=0, owned=None, topics=None, instance=None,
           assignor=None, group="g", timeout=None):
        if epoch == 0:
            owned = [] if owned is None else owned
            topics = ["t"] if topics is None else topics
            timeout = 30_000 if timeout is None else timeout
        return self.c.consumer_group_heartbeat(
            group, member_id, epoch, instance, None, -1 if timeout is None else timeout,
            topics, assignor, owned)

    def owners(self, group="g"):
        return dict(self.c.consumer.groups[group].owner)


def parts(assignment):
    return {p for _tid, ps in assignment for p in ps}


def test_first_member_gets_every_partition_and_a_member_id():
    w = World()
    r = w.hb()
    assert r.error_code == NONE and r.member_epoch == 1 and uuid.UUID(r.member_id)
    assert r.assignment == [(T_ID, [0, 1, 2, 3, 4, 5])]
    again = w.hb(r.member_id, 1, owned=r.assignment)
    assert again.error_code == NONE and again.member_epoch == 1 and again.assignment is None
    assert w.c.describe_consumer_groups(["g"])[0].state == "Stable"


def test_second_member_waits_for_revocation_before_taking_partitions():
    w = World()
    a = w.hb("a")
    b = w.hb("b")
    assert (b.member_epoch, parts(b.assignment)) == (2, set())  # all held by a
    assert w.c.describe_consumer_groups(["g"])[0].state == "Reconciling"
    # a is asked to revoke: it keeps its epoch and gets its reduced assignment.
    a1 = w.hb("a", 1, owned=a.assignment)
    assert a1.member_epoch == 1 and len(parts(a1.assignment)) == 3
    # no partition is ever owned by two members
    assert len(set(w.owners().values())) == 1
    b1 = w.hb("b", 2, owned=[])
    assert b1.assignment is None  # nothing released yet
    a2 = w.hb("a", 1, owned=a1.assignment)  # revoked: moves to epoch 2
    assert a2.member_epoch == 2
    b2 = w.hb("b", 2, owned=[])
    assert parts(b2.assignment) == set(range(6)) - parts(a1.assignment)
    assert w.c.describe_consumer_groups(["g"])[0].state == "Stable"


def test_member_that_already_dropped_partitions_skips_revocation():
    w = World()
    w.hb("a")
    w.hb("b")
    a1 = w.hb("a", 1, owned=[])  # it reports owning nothing
    assert a1.member_epoch == 2


def test_lost_response_with_previous_epoch_is_accepted():
    w = World()
    a = w.hb("a")
    w.hb("b")
    a1 = w.hb("a", 1, owned=a.assignment)
    a2 = w.hb("a", 1, owned=a1.assignment)
    assert a2.member_epoch == 2
    # The answer with epoch 2 was lost: a heartbeats again with epoch 1.
    again = w.hb("a", 1, owned=a1.assignment)
    assert again.error_code == NONE and again.member_epoch == 2


def test_epoch_and_membership_errors():
    w = World()
    a = w.hb("a")
    assert w.hb("a", 5, owned=a.assignment).error_code == Errors.FencedMemberEpochError.errno
    assert w.hb("zz", 1).error_code == Errors.UnknownMemberIdError.errno
    # A group that is not here (gone with its last member, or a restart) is a member Kafka
    # no longer knows: rejoin, not a fatal GROUP_ID_NOT_FOUND.
    assert w.hb("a", 1, group="none").error_code == Errors.UnknownMemberIdError.errno
    assert w.hb("a", 0, topics=None, owned=[]).error_code == NONE  # rejoin afresh
    bad = w.c.consumer_group_heartbeat("g", "x", 0, None, None, 1000, None, None, [])
    assert bad.error_code == Errors.InvalidRequestError.errno and "SubscribedTopicNames" in \
        bad.error_message
    assert w.hb("x", assignor="sticky").error_code == Errors.UnsupportedAssignorError.errno
    assert w.hb("", 3).error_code == Errors.InvalidRequestError.errno


def test_leave_gives_partitions_to_the_others():
    w = World()
    a = w.hb("a")
    b = w.hb("b")
    a1 = w.hb("a", 1, owned=a.assignment)
    w.hb("a", 1, owned=a1.assignment)
    r = w.hb("b", -1)
    assert (r.error_code, r.member_epoch) == (NONE, -1)
    a3 = w.hb("a", 2, owned=a1.assignment)
    assert parts(a3.assignment) == set(range(6))
    del b


def test_session_timeout_fences_a_silent_member():
    w = World(consumer_group_session_timeout_ms=45_000)
    w.hb("a")
    b = w.hb("b")
    epoch, owned = b.member_epoch, b.assignment
    for _ in range(10):
        w.clock.advance(5_000)
        r = w.hb("b", epoch, owned=owned)
        epoch, owned = r.member_epoch, r.assignment if r.assignment is not None else owned
    assert "a" not in w.c.consumer.groups["g"].members
    assert w.hb("a", 1).error_code == Errors.UnknownMemberIdError.errno
    assert parts(owned) == set(range(6))


def test_rebalance_timeout_fences_a_member_that_keeps_partitions():
    w = World()
    a = w.hb("a", timeout=10_000)
    w.hb("b")
    a1 = w.hb("a", 1, owned=a.assignment)   # told to revoke
    for _ in range(3):
        w.clock.advance(4_000)
        r = w.hb("a", 1, owned=a.assignment)  # still claims everything
    assert r.error_code == Errors.UnknownMemberIdError.errno
    del a1


def test_static_member_leaves_temporarily_and_its_successor_takes_over():
    w = World()
    a = w.hb("a1", instance="ia")
    epoch_before = w.c.consumer.groups["g"].group_epoch
    left = w.hb("a1", -2, instance="ia")
    assert left.member_epoch == -2
    assert set(w.owners().values()) == {"a1"}  # partitions kept for the successor
    r = w.hb("a2", instance="ia")
    assert r.error_code == NONE and r.member_id == "a2"
    assert parts(r.assignment) == parts(a.assignment)
    assert w.c.consumer.groups["g"].group_epoch == epoch_before  # no rebalance
    dup = w.hb("a3", instance="ia")
    assert dup.error_code == Errors.UnreleasedInstanceIdError.errno
    assert w.hb("a1", 1, instance="ia").error_code == Errors.UnknownMemberIdError.errno


def test_new_partitions_bump_the_epoch_and_get_assigned():
    w = World(partitions=2)
    a = w.hb("a")
    w.sizes["t"] = 4
    r = w.hb("a", 1, owned=a.assignment)
    assert r.member_epoch == 2 and parts(r.assignment) == {0, 1, 2, 3}


def test_offset_commit_and_fetch_check_member_epoch():
    w = World()
    a = w.hb("a")
    ok = w.c.commit_offsets("g", a.member_epoch, "a", None, [("t", 0, 10, -1, "")])
    stale = w.c.commit_offsets("g", a.member_epoch + 1, "a", None, [("t", 0, 11, -1, "")])
    assert [r.error_code for r in ok + stale] == [NONE, Errors.StaleMemberEpochError.errno]
    assert w.c.fetch_offsets("g", [("t", 0)], member_id="a", member_epoch=1).partitions[0].offset == 10
    assert w.c.fetch_offsets("g", None, member_id="a", member_epoch=9).error_code == \
        Errors.StaleMemberEpochError.errno
    # A classic JoinGroup cannot take over a live consumer group.
    assert w.c.delete_groups(["g"])[0].error_code == Errors.NonEmptyGroupError.errno
    w.hb("a", -1)
    assert [(g.group_id, g.group_type, g.state) for g in w.c.list_groups()] == \
        [("g", "consumer", "Empty")]  # kept for its offsets
    assert w.c.delete_groups(["g"])[0].error_code == NONE
    assert w.c.list_groups() == []


def test_describe_consumer_group():
    w = World()
    a = w.hb("a", assignor="range")
    [d, missing] = w.c.describe_consumer_groups(["g", "nope"])
    assert (d.state, d.group_epoch, d.assignment_epoch, d.assignor_name) == \
        ("Stable", 1, 1, "range")
    [m] = d.members
    assert m.assignment == [(T_ID, "t", [0, 1, 2, 3, 4, 5])] == m.target_assignment
    assert missing.error_code == Errors.GroupIdNotFoundError.errno
    del a


def test_range_assignor_gives_contiguous_ranges():
    out = RangeAssignor().assign({"b": {"t"}, "a": {"t", "u"}}, {"t": 5, "u": 2}, {})
    assert out == {"a": {"t": {0, 1, 2}, "u": {0, 1}}, "b": {"t": {3, 4}}}


@settings(max_examples=60, deadline=None)
@given(members=st.dictionaries(st.sampled_from("abcdef"),
                               st.sets(st.sampled_from(["x", "y", "z"]), min_size=1),
                               min_size=1),
       sizes=st.fixed_dictionaries({"x": st.integers(0, 8), "y": st.integers(0, 8),
                                    "z": st.integers(0, 8)}),
       seed=st.integers(0, 1000))
def test_uniform_assignor_assigns_everything_once_balanced_and_sticky(members, sizes, seed):
    assignor = UniformAssignor()
    first = assignor.assign(members, sizes, {})
    owners = [(t, p) for m in first.values() for t, ps in m.items() for p in ps]
    assert len(owners) == len(set(owners))
    expected = {(t, p) for t, n in sizes.items() for p in range(n)
                if any(t in s for s in members.values())}
    assert set(owners) == expected
    for m, topics in first.items():
        assert set(topics) <= members[m]
    homogeneous = len({frozenset(s) for s in members.values()}) == 1
    if homogeneous:
        counts = [sum(len(ps) for ps in first[m].values()) for m in members]
        assert max(counts) - min(counts) <= 1
    # Unchanged input: nothing moves.
    assert assignor.assign(members, sizes, first) == first
    # One member leaves: the others keep what they had.
    rng = random.Random(seed)
    gone = rng.choice(sorted(members))
    rest = {m: s for m, s in members.items() if m != gone}
    second = assignor.assign(rest, sizes, first)
    if homogeneous:
        for m in rest:
            for t, ps in first[m].items():
                assert ps <= second[m].get(t, set())


def test_random_heartbeats_never_give_a_partition_to_two_members():
    rng = random.Random(7)
    w = World(partitions=8)
    state = {}  # member -> (epoch, owned assignment as returned)
    for step in range(600):
        m = rng.choice("abcd")
        if m not in state or rng.random() < 0.05:
            r = w.hb(m)
        elif rng.random() < 0.05:
            w.hb(m, -1)
            state.pop(m, None)
            continue
        else:
            epoch, owned = state[m]
            r = w.hb(m, epoch, owned=owned)
        if r.error_code != NONE:
            state.pop(m, None)
            continue
        owned = r.assignment if r.assignment is not None else state.get(m, (0, []))[1]
        state[m] = (r.member_epoch, owned)
        held = [(tid, p) for _e, o in state.values() for tid, ps in o for p in ps]
        assert len(held) == len(set(held)), (step, state)
        if rng.random() < 0.1:
            w.clock.advance(1_000)
    # Quiet down: everyone heartbeats until the group is Stable with all partitions.
    for _ in range(10):
        for m in list(state):
            epoch, owned = state[m]
            r = w.hb(m, epoch, owned=owned)
            state[m] = (r.member_epoch, r.assignment if r.assignment is not None else owned)
    assert w.c.describe_consumer_groups(["g"])[0].state == "Stable"
    held = sorted(p for _e, o in state.values() for _t, ps in o for p in ps)
    assert held == list(range(8))
