"""The classic group protocol, transition by transition, on a virtual clock."""
from __future__ import annotations

import kafka.errors as Errors
import pytest

from kafka_wire.coordinator.classic_group import ClassicGroupState as S

from .helpers import NONE, REBALANCE, SESSION, Harness, assign, sub


def test_single_member_gets_member_id_then_leads_generation_one():
    h = Harness()
    first = h.join("", client="app")
    assert first.result.error_code == Errors.MemberIdRequiredError.errno
    member_id = first.result.member_id
    assert member_id.startswith("app-") and len(member_id) == len("app-") + 36
    assert h.group().is_(S.EMPTY)

    rejoin = h.join(member_id, client="app")
    assert not rejoin.done and h.group().is_(S.PREPARING_REBALANCE)
    h.clock.advance(99)
    assert not rejoin.done  # the initial rebalance delay
    h.clock.advance(1)
    r = rejoin.result
    assert (r.error_code, r.generation_id, r.leader, r.member_id) == (NONE, 1, member_id, member_id)
    assert (r.protocol_type, r.protocol_name) == ("consumer", "range")
    assert [(m.member_id, m.metadata) for m in r.members] == [(member_id, sub("t"))]
    assert h.group().is_(S.COMPLETING_REBALANCE)

    s = h.sync(member_id, 1, assignments=[(member_id, assign(("t", [0])))])
    assert s.result == (NONE, "consumer", "range", assign(("t", [0])))
    assert h.group().is_(S.STABLE)
    assert h.heartbeat(member_id, 1) == NONE


def test_three_members_join_one_generation_and_followers_wait_for_the_leader():
    h = Harness()
    joins = [h.join_new(client=f"c{i}") for i in range(3)]
    h.clock.advance(100)
    assert not any(p.done for _, p in joins)  # members came during the delay: one more
    h.clock.advance(100)
    results = [p.result for _, p in joins]
    assert {r.generation_id for r in results} == {1}
    leaders = {r.leader for r in results}
    assert len(leaders) == 1
    leader = leaders.pop()
    for r in results:
        assert len(r.members) == (3 if r.member_id == leader else 0)
    followers = [r.member_id for r in results if r.member_id != leader]

    waiting = [h.sync(f, 1) for f in followers]
    assert not any(p.done for p in waiting)
    plan = {mid: assign(("t", [i])) for i, mid in enumerate([leader, *followers])}
    s = h.sync(leader, 1, assignments=list(plan.items()))
    assert s.result.assignment == plan[leader]
    assert [p.result.assignment for p in waiting] == [plan[f] for f in followers]
    assert h.group().is_(S.STABLE)


def test_join_before_v4_gets_a_member_id_without_a_round_trip():
    h = Harness()
    p = h.join("", version=3, client="old")
    h.clock.advance(100)
    assert p.result.error_code == NONE and p.result.member_id.startswith("old-")


def test_pending_member_that_never_rejoins_expires_and_the_group_goes():
    h = Harness()
    first = h.join("")
    assert h.group().pending_members == {first.result.member_id}
    h.clock.advance(SESSION)
    assert h.group() is None
    late = h.join(first.result.member_id)
    assert late.result.error_code == Errors.UnknownMemberIdError.errno


def test_known_member_joining_a_missing_group_is_unknown():
    h = Harness()
    assert h.join("ghost").result.error_code == Errors.UnknownMemberIdError.errno


def test_initial_delay_extends_while_new_members_keep_arriving():
    h = Harness(group_initial_rebalance_delay_ms=100)
    a, pa = h.join_new(client="a")
    h.clock.advance(90)
    b, pb = h.join_new(client="b")
    h.clock.advance(10)   # first delay over, but b arrived: wait another delay
    assert not pa.done
    h.clock.advance(100)
    assert pa.result.generation_id == pb.result.generation_id == 1


def test_new_member_triggers_rebalance_and_existing_member_rejoins():
    h = Harness()
    [a] = h.stable_group(1)
    b, pb = h.join_new(client="b")
    assert h.group().is_(S.PREPARING_REBALANCE)
    assert h.heartbeat(a, 1) == Errors.RebalanceInProgressError.errno
    pa = h.join(a)
    # Everyone known has rejoined: no need to wait for the rebalance timeout.
    assert pa.result.generation_id == pb.result.generation_id == 2
    assert pa.result.leader == a and len(pa.result.members) == 2


def test_follower_rejoining_stable_group_unchanged_gets_current_generation():
    h = Harness()
    leader, follower = h.stable_group(2)
    p = h.join(follower, client="c1")
    assert p.result.error_code == NONE and p.result.generation_id == 1
    assert p.result.members == [] and h.group().is_(S.STABLE)


def test_leader_rejoining_stable_group_forces_rebalance():
    h = Harness()
    leader, follower = h.stable_group(2)
    p = h.join(leader)
    assert not p.done and h.group().is_(S.PREPARING_REBALANCE)


def test_member_with_changed_subscription_triggers_rebalance():
    h = Harness()
    leader, follower = h.stable_group(2)
    p = h.join(follower, protocols=[("range", sub("t", "u"))])
    assert not p.done and h.group().is_(S.PREPARING_REBALANCE)
    h.join(leader)
    assert p.result.generation_id == 2


def test_session_timeout_removes_silent_member_and_rebalances():
    h = Harness()
    a, b = h.stable_group(2)
    for _ in range(3):
        h.clock.advance(SESSION // 3)
        assert h.heartbeat(a, 1) == NONE
    h.clock.advance(SESSION - 3 * (SESSION // 3))  # b's session is over
    assert not h.group().has(b)
    assert h.group().is_(S.PREPARING_REBALANCE)
    assert h.heartbeat(b, 1) == Errors.UnknownMemberIdError.errno
    assert h.heartbeat(a, 1) == Errors.RebalanceInProgressError.errno
    p = h.join(a)
    assert p.result.generation_id == 2 and [m.member_id for m in p.result.members] == [a]


def test_rebalance_timeout_removes_member_that_does_not_rejoin():
    h = Harness()
    a, b = h.stable_group(2)
    pa = h.join(a)  # the leader rejoins: rebalance
    for _ in range(REBALANCE // 3000 - 1):
        h.clock.advance(3000)
        # b heartbeats (so its session holds) but never rejoins
        assert h.heartbeat(b, 1) == Errors.RebalanceInProgressError.errno
    assert not pa.done
    h.clock.advance(3000)
    r = pa.result
    assert r.generation_id == 2 and [m.member_id for m in r.members] == [a]
    assert h.heartbeat(b, 1) == Errors.UnknownMemberIdError.errno


def test_session_timeout_does_not_remove_member_waiting_in_join():
    h = Harness()
    a, b = h.stable_group(2)
    pb = h.join(b, protocols=[("range", sub("x"))])  # b rejoins and waits for a
    h.clock.advance(SESSION + 1)   # neither heartbeats; a is silent, b waits
    assert not h.group().has(a) and h.group().has(b)
    assert pb.result.generation_id == 2 and pb.result.leader == b


def test_heartbeat_and_sync_errors():
    h = Harness()
    a, b = h.stable_group(2)
    assert h.heartbeat(a, 7) == Errors.IllegalGenerationError.errno
    assert h.heartbeat("nobody", 1) == Errors.UnknownMemberIdError.errno
    assert h.heartbeat(a, 1, group_id="other") == Errors.UnknownMemberIdError.errno
    assert h.heartbeat(a, 1, group_id="") == Errors.InvalidGroupIdError.errno
    assert h.sync(a, 0).result.error_code == Errors.IllegalGenerationError.errno
    assert h.sync("nobody", 1).result.error_code == Errors.UnknownMemberIdError.errno
    h.join(a)  # rebalance
    assert h.sync(b, 1).result.error_code == Errors.RebalanceInProgressError.errno


def test_sync_with_wrong_protocol_name_is_inconsistent():
    h = Harness()
    [a] = h.stable_group(1)
    results: list = []
    h.mgr.sync_group("g", 1, a, None, "consumer", "roundrobin", [], results.append)
    h.mgr.sync_group("g", 1, a, None, "connect", "range", [], results.append)
    h.mgr.sync_group("g", 1, a, None, "consumer", "range", [], results.append)
    assert [r.error_code for r in results] == [Errors.InconsistentGroupProtocolError.errno] * 2 \
        + [NONE]


def test_follower_waiting_for_sync_is_told_to_rejoin_when_a_member_arrives():
    h = Harness()
    pa, pb = h.join_new(client="a")[1], h.join_new(client="b")[1]
    h.settle(pa, pb)
    follower = next(r.member_id for r in (pa.result, pb.result) if r.member_id != r.leader)
    waiting = h.sync(follower, 1)
    h.join_new(client="c")
    assert waiting.result.error_code == Errors.RebalanceInProgressError.errno
    assert h.group().is_(S.PREPARING_REBALANCE)


def test_member_that_never_syncs_is_removed_after_rebalance_timeout():
    h = Harness()
    pa, pb = h.join_new(client="a")[1], h.join_new(client="b")[1]
    h.settle(pa, pb)
    leader = pa.result.leader
    follower = next(r.member_id for r in (pa.result, pb.result) if r.member_id != leader)
    h.sync(leader, 1, assignments=[(leader, b"x"), (follower, b"y")])
    assert h.group().is_(S.STABLE)
    for _ in range(REBALANCE // 3000):  # the follower heartbeats but never syncs
        h.clock.advance(3000)
        h.heartbeat(leader, 1)
        h.heartbeat(follower, 1)
    assert not h.group().has(follower) and h.group().is_(S.PREPARING_REBALANCE)


def test_lost_join_response_in_completing_rebalance_is_repeated():
    h = Harness()
    a, pa = h.join_new()
    h.clock.advance(100)
    again = h.join(a)
    assert again.result == pa.result


def test_static_member_rejoin_keeps_assignment_without_rebalance_and_fences_old_id():
    h = Harness()
    ja = h.join("", instance="ia", client="a")
    jb = h.join("", instance="ib", client="b")
    h.settle(ja, jb)
    a, b = ja.result.member_id, jb.result.member_id
    assert a.startswith("ia-")  # static members get an id from their instance id
    leader = ja.result.leader
    plan = [(a, assign(("t", [0]))), (b, assign(("t", [1])))]
    h.sync(leader, 1, instance="ia" if leader == a else "ib", assignments=plan)
    follower_instance = "ib" if leader == a else "ia"
    old = b if leader == a else a
    # The follower restarts and rejoins with no member id, same protocols.
    rejoin = h.join("", instance=follower_instance, client="restarted", version=5)
    r = rejoin.result
    assert r.error_code == NONE and r.member_id != old
    assert r.generation_id == 1 and r.leader == leader and r.members == []
    assert h.group().is_(S.STABLE)
    s = h.sync(r.member_id, 1, instance=follower_instance)
    assert s.result.assignment == dict(plan)[old]
    assert h.heartbeat(old, 1, instance=follower_instance) == Errors.FencedInstanceIdError.errno
    assert h.heartbeat(r.member_id, 1, instance=follower_instance) == NONE
    fenced = h.join(old, instance=follower_instance)
    assert fenced.result.error_code == Errors.FencedInstanceIdError.errno


def test_static_leader_rejoin_v9_learns_it_leads_but_skips_assignment():
    h = Harness()
    ja = h.join("", instance="ia")
    h.clock.advance(100)
    a = ja.result.member_id
    h.sync(a, 1, instance="ia", assignments=[(a, b"x")])
    r = h.join("", instance="ia", version=9).result
    assert r.leader == r.member_id != a and r.skip_assignment
    assert [m.member_id for m in r.members] == [r.member_id]
    r8 = h.join("", instance="ia", version=8).result
    # Before v9 the old leader id comes back so the client does not assign.
    assert r8.leader == r.member_id != r8.member_id and not r8.skip_assignment


def test_static_member_rejoin_with_new_protocols_triggers_rebalance():
    h = Harness()
    ja = h.join("", instance="ia")
    h.clock.advance(100)
    a = ja.result.member_id
    h.sync(a, 1, instance="ia", assignments=[(a, b"x")])
    # Every member must support the new choice, so the old one stays listed.
    p = h.join("", instance="ia", protocols=[("roundrobin", sub("t")), ("range", sub("t"))])
    assert p.result.generation_id == 2 and p.result.protocol_name == "roundrobin"


def test_static_member_keeps_its_slot_through_a_rebalance_it_misses():
    h = Harness()
    ja, jb = h.join("", instance="ia"), h.join("", instance="ib")
    h.settle(ja, jb)
    a, b = ja.result.member_id, jb.result.member_id
    leader = ja.result.leader
    leader_instance = "ia" if leader == a else "ib"
    h.sync(leader, 1, instance=leader_instance, assignments=[(a, b"a"), (b, b"b")])
    pl = h.join(leader, instance=leader_instance)
    other, other_instance = (b, "ib") if leader == a else (a, "ia")
    for _ in range(REBALANCE // 3000):  # alive (heartbeats) but does not rejoin
        h.clock.advance(3000)
        h.heartbeat(other, 1, instance=other_instance)
    # The static member that did not rejoin stays and is handed to the leader.
    assert pl.result.generation_id == 2 and len(pl.result.members) == 2
    assert h.group().has(a) and h.group().has(b)


def test_leave_group_rebalances_and_last_leave_removes_group():
    h = Harness()
    a, b = h.stable_group(2)
    res = h.mgr.leave_group("g", [(b, None), ("nobody", None)])
    assert res.error_code == NONE
    assert [m.error_code for m in res.members] == [NONE, Errors.UnknownMemberIdError.errno]
    assert h.group().is_(S.PREPARING_REBALANCE)
    pa = h.join(a)
    assert pa.result.generation_id == 2
    h.mgr.leave_group("g", [(a, None)])
    assert h.group() is None  # Empty, no offsets: gone
    missing = h.mgr.leave_group("g", [(a, None)])
    assert missing.members[0].error_code == Errors.UnknownMemberIdError.errno


def test_leave_by_instance_id_only_removes_the_static_member():
    h = Harness()
    ja = h.join("", instance="ia")
    h.clock.advance(100)
    res = h.mgr.leave_group("g", [("", "ia"), ("", "nope")])
    assert [m.error_code for m in res.members] == [NONE, Errors.UnknownMemberIdError.errno]
    assert h.group() is None
    del ja


def test_leaving_member_waiting_in_join_is_answered():
    h = Harness()
    a, b = h.stable_group(2)
    pb = h.join(b, protocols=[("range", sub("z"))])
    h.mgr.leave_group("g", [(b, None)])
    assert pb.result.error_code == Errors.UnknownMemberIdError.errno


def test_protocol_type_and_protocol_overlap_are_enforced():
    h = Harness()
    h.stable_group(1)
    assert h.join("", protocol_type="connect").result.error_code == \
        Errors.InconsistentGroupProtocolError.errno
    assert h.join("", protocols=[("sticky", b"")]).result.error_code == \
        Errors.InconsistentGroupProtocolError.errno
    assert h.join("", group_id="e", protocols=[]).result.error_code == \
        Errors.InconsistentGroupProtocolError.errno
    assert h.group("e") is None


def test_any_protocol_type_works():
    h = Harness()
    p = h.join("", protocol_type="connect", protocols=[("sessioned", b"\x01")], version=3)
    h.clock.advance(100)
    assert p.result.protocol_type == "connect" and p.result.protocol_name == "sessioned"


def test_protocol_is_chosen_by_member_votes():
    h = Harness()
    prefs = [["range", "roundrobin"], ["roundrobin", "range"], ["roundrobin", "range", "x"]]
    ps = [h.join("", version=3, protocols=[(n, b"") for n in pref]) for pref in prefs]
    h.settle(*ps)
    assert {p.result.protocol_name for p in ps} == {"roundrobin"}


def test_session_timeout_bounds_and_group_id_are_checked():
    h = Harness()
    assert h.join("", session=5_999).result.error_code == Errors.InvalidSessionTimeoutError.errno
    assert h.join("", session=1_800_001).result.error_code == \
        Errors.InvalidSessionTimeoutError.errno
    assert h.join("", group_id="").result.error_code == Errors.InvalidGroupIdError.errno
    assert h.group() is None


def test_group_max_size_rejects_extra_members():
    h = Harness(group_max_size=1)
    h.stable_group(1)
    assert h.join("", version=3).result.error_code == Errors.GroupMaxSizeReachedError.errno


def test_new_member_join_that_waits_too_long_is_dropped():
    h = Harness(new_member_join_timeout_ms=20_000)
    a, b = h.stable_group(2)
    pc = h.join_new(client="c")[1]      # waits for a and b, which never rejoin...
    for _ in range(6):                  # ...but keep heartbeating
        h.clock.advance(3000)
        h.heartbeat(a, 1)
        h.heartbeat(b, 1)
    h.clock.advance(2000)
    assert pc.result.error_code == Errors.UnknownMemberIdError.errno


def test_duplicate_join_answers_the_superseded_request():
    h = Harness()
    a, b = h.stable_group(2)
    first = h.join(b, protocols=[("range", sub("z"))])
    second = h.join(b, protocols=[("range", sub("z"))])
    assert first.result.error_code == Errors.RebalanceInProgressError.errno
    assert not second.done


def test_shutdown_answers_waiting_requests():
    h = Harness()
    p = h.join_new()[1]
    h.mgr.shutdown()
    assert p.result.error_code == Errors.NotCoordinatorError.errno
    assert h.heartbeat("x", 1) == Errors.CoordinatorNotAvailableError.errno


@pytest.mark.parametrize("delay", [0, 3000])
def test_initial_delay_is_configurable(delay):
    h = Harness(group_initial_rebalance_delay_ms=delay)
    p = h.join_new()[1]
    h.clock.advance(max(delay - 1, 0))
    assert p.done == (delay == 0)
    h.clock.advance(1)
    assert p.result.generation_id == 1
