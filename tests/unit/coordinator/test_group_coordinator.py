"""GroupCoordinator: offsets, their checkpoints, retention, describe/list/delete."""
from __future__ import annotations

import asyncio

import kafka.errors as Errors

from kafka_wire.coordinator.checkpoints import EmbeddedCheckpointStore, MemoryCheckpointStore
from kafka_wire.coordinator.clock import VirtualClock
from kafka_wire.coordinator.config import GroupCoordinatorConfig
from kafka_wire.coordinator.group_coordinator import GroupCoordinator

from .helpers import NONE, SESSION, assign, run, sub

DAY = 24 * 3600 * 1000


def make(clock=None, store=None, **config):
    config.setdefault("group_initial_rebalance_delay_ms", 0)
    return GroupCoordinator(clock or VirtualClock(), GroupCoordinatorConfig(**config),
                            store=store if store is not None else MemoryCheckpointStore(),
                            namespace="ns1",
                            position_resolver=lambda t, p, o: o * 100)


async def stable_member(c: GroupCoordinator, group="g", topics=("t",), protocol_type="consumer"):
    """One member through JoinGroup (v9) and SyncGroup; returns (member_id, generation)."""
    first = await c.join_group(group, "", None, protocol_type, [("range", sub(*topics))],
                               SESSION, 30_000, "cli", "/h", 9)
    member = first.member_id
    fut = c.join_group(group, member, None, protocol_type, [("range", sub(*topics))],
                       SESSION, 30_000, "cli", "/h", 9)
    c.clock.advance(0)
    r = await fut
    assert r.error_code == NONE
    s = await c.sync_group(group, r.generation_id, member, None, None, None,
                           [(member, assign((topics[0], [0])))])
    assert s.error_code == NONE
    return member, r.generation_id


def commit(c, group="g", gen=-1, member="", offsets=(("t", 0, 5, 3, "m"),)):
    return [r.error_code for r in c.commit_offsets(group, gen, member, None, list(offsets))]


def test_join_and_sync_return_awaitable_futures():
    async def body():
        c = make()
        member, gen = await stable_member(c)
        assert gen == 1 and c.heartbeat("g", 1, member) == NONE
    run(body)


def test_simple_commit_creates_an_empty_group_and_fetch_returns_it():
    c = make()
    assert commit(c, offsets=[("t", 0, 5, 3, "m"), ("t", 1, 7, -1, None)]) == [NONE, NONE]
    d = c.describe_groups(["g"])[0]
    assert (d.error_code, d.state, d.protocol_type) == (NONE, "Empty", "")
    res = c.fetch_offsets("g", [("t", 0), ("t", 1), ("t", 9)])
    assert res.error_code == NONE
    assert [tuple(p) for p in res.partitions] == [
        ("t", 0, 5, 3, "m", NONE), ("t", 1, 7, -1, "", NONE), ("t", 9, -1, -1, "", NONE)]
    assert [(p.topic, p.partition) for p in c.fetch_offsets("g", None).partitions] == \
        [("t", 0), ("t", 1)]
    assert c.fetch_offsets("nope", None).partitions == []


def test_commit_checks_generation_and_member():
    async def body():
        c = make()
        member, gen = await stable_member(c)
        assert commit(c) == [Errors.UnknownMemberIdError.errno]  # admin commit, live group
        assert commit(c, gen=gen + 1, member=member) == [Errors.IllegalGenerationError.errno]
        assert commit(c, gen=gen, member="who") == [Errors.UnknownMemberIdError.errno]
        assert commit(c, gen=gen, member=member) == [NONE]
        assert commit(c, group="gone", gen=3, member="m") == [Errors.IllegalGenerationError.errno]
        assert c.describe_groups(["gone"])[0].state == "Dead"
    run(body)


def test_commit_while_completing_rebalance_is_rebalance_in_progress():
    async def body():
        c = make()
        first = await c.join_group("g", "", None, "consumer", [("range", sub("t"))],
                                   SESSION, 30_000, "cli", "/h", 9)
        fut = c.join_group("g", first.member_id, None, "consumer", [("range", sub("t"))],
                           SESSION, 30_000, "cli", "/h", 9)
        c.clock.advance(0)
        r = await fut
        assert commit(c, gen=r.generation_id, member=r.member_id) == \
            [Errors.RebalanceInProgressError.errno]
    run(body)


def test_metadata_size_and_unknown_partitions_are_checked_per_partition():
    c = GroupCoordinator(VirtualClock(), GroupCoordinatorConfig(offset_metadata_max_size=4),
                         partition_exists=lambda t, p: t == "t" and p < 2)
    assert commit(c, offsets=[("t", 0, 1, -1, "12345"), ("t", 1, 1, -1, "1234"),
                              ("t", 2, 1, -1, ""), ("x", 0, 1, -1, "")]) == [
        Errors.OffsetMetadataTooLargeError.errno, NONE,
        Errors.UnknownTopicOrPartitionError.errno, Errors.UnknownTopicOrPartitionError.errno]


def test_rejected_simple_commit_leaves_no_group_behind():
    c = GroupCoordinator(VirtualClock(), GroupCoordinatorConfig(offset_metadata_max_size=0))
    assert commit(c) == [Errors.OffsetMetadataTooLargeError.errno]
    assert c.list_groups() == []


def test_committed_offsets_become_checkpoints_and_survive_restart(tmp_path):
    store = EmbeddedCheckpointStore(tmp_path)
    c = make(store=store)
    commit(c, offsets=[("hub", 0, 42, 1, "meta"), ("hub", 1, 0, -1, None)])
    c.close()
    store.close()

    store = EmbeddedCheckpointStore(tmp_path)
    [cp0, cp1] = sorted(store.load(), key=lambda cp: cp.partition)
    assert (cp0.namespace, cp0.event_hub, cp0.consumer_group, cp0.partition) == \
        ("ns1", "hub", "g", 0)
    assert (cp0.sequence_number, cp0.offset, cp0.offset_str, cp0.metadata) == \
        (42, 4200, "4200", "meta")
    assert cp1.sequence_number == 0
    c2 = make(store=store)
    assert [tuple(p) for p in c2.fetch_offsets("g", None).partitions] == [
        ("hub", 0, 42, 1, "meta", NONE), ("hub", 1, 0, -1, "", NONE)]
    assert c2.describe_groups(["g"])[0].state == "Empty"
    # A consumer rejoins the reloaded group and carries on.
    async def body():
        member, gen = await stable_member(c2, topics=("hub",))
        assert gen == 1
    run(body)
    store.close()


def test_loading_ignores_other_namespaces():
    store = MemoryCheckpointStore()
    a = GroupCoordinator(VirtualClock(), store=store, namespace="a")
    commit(a)
    b = GroupCoordinator(VirtualClock(), store=store, namespace="b")
    assert b.list_groups() == [] and b.fetch_offsets("g", None).partitions == []


def test_offsets_of_empty_group_expire_retention_after_it_emptied():
    async def body():
        clock = VirtualClock()
        c = make(clock, offsets_retention_check_interval_ms=30_000)
        member, gen = await stable_member(c)
        assert commit(c, gen=gen, member=member) == [NONE]
        for _ in range(24):                      # the consumer lives on for two minutes
            clock.advance(5_000)
            assert c.heartbeat("g", gen, member) == NONE
        c.leave_group("g", [(member, None)])
        assert c.describe_groups(["g"])[0].state == "Empty"
        clock.advance(7 * DAY - 60_000)          # past retention counted from the commit
        assert c.fetch_offsets("g", None).partitions != []
        clock.advance(60_000)                    # retention counted from emptiness
        assert c.fetch_offsets("g", None).partitions == []
        assert c.describe_groups(["g"])[0].state == "Dead"  # nothing left: removed
    run(body)


def test_stable_consumer_group_keeps_subscribed_offsets_and_expires_others():
    async def body():
        clock = VirtualClock()
        c = make(clock, offsets_retention_check_interval_ms=DAY, group_max_session_timeout_ms=30 * DAY)
        first = await c.join_group("g", "", None, "consumer", [("range", sub("t"))],
                                   20 * DAY, 30_000, "cli", "/h", 9)
        fut = c.join_group("g", first.member_id, None, "consumer", [("range", sub("t"))],
                           20 * DAY, 30_000, "cli", "/h", 9)
        clock.advance(0)
        r = await fut
        await c.sync_group("g", 1, r.member_id, None, None, None, [])
        commit(c, gen=1, member=r.member_id,
               offsets=[("t", 0, 1, -1, ""), ("old-topic", 0, 1, -1, "")])
        clock.advance(8 * DAY)
        assert [p.topic for p in c.fetch_offsets("g", None).partitions] == ["t"]
    run(body)


def test_simple_group_offsets_expire_from_commit_time():
    clock = VirtualClock()
    c = make(clock, offsets_retention_ms=10_000, offsets_retention_check_interval_ms=1000)
    c.start()
    commit(c, offsets=[("t", 0, 1, -1, "")])
    clock.advance(5000)
    commit(c, offsets=[("t", 1, 1, -1, "")])
    clock.advance(5000)
    assert [p.partition for p in c.fetch_offsets("g", None).partitions] == [1]
    clock.advance(5000)
    assert c.list_groups() == []


def test_reloaded_offsets_get_a_full_retention_period_after_restart():
    store = MemoryCheckpointStore()
    clock = VirtualClock()
    c = make(clock, store=store, offsets_retention_ms=10_000)
    commit(c)
    clock.advance(9_000)
    c2 = make(clock, store=store, offsets_retention_ms=10_000)
    clock.advance(2_000)
    assert c2.cleanup_expired_offsets() == 0
    clock.advance(8_000)
    assert c2.cleanup_expired_offsets() == 1


def test_delete_groups():
    async def body():
        c = make()
        member, gen = await stable_member(c)
        commit(c, gen=gen, member=member)
        commit(c, group="idle")
        res = c.delete_groups(["g", "idle", "missing"])
        assert [r.error_code for r in res] == [
            Errors.NonEmptyGroupError.errno, NONE, Errors.GroupIdNotFoundError.errno]
        assert c.fetch_offsets("idle", None).partitions == []
        assert [r.group_id for r in c.list_groups()] == ["g"]
    run(body)


def test_delete_groups_removes_checkpoints(tmp_path):
    store = EmbeddedCheckpointStore(tmp_path)
    c = make(store=store)
    commit(c, group="a")
    commit(c, group="b")
    c.delete_groups(["a"])
    store.close()
    assert {cp.consumer_group for cp in EmbeddedCheckpointStore(tmp_path).load()} == {"b"}


def test_delete_offsets_refuses_subscribed_topics_of_live_consumer_group():
    async def body():
        c = make()
        member, gen = await stable_member(c, topics=("t",))
        commit(c, gen=gen, member=member, offsets=[("t", 0, 1, -1, ""), ("u", 0, 1, -1, "")])
        res = c.delete_offsets("g", [("t", 0), ("u", 0)])
        assert res.error_code == NONE
        assert [p.error_code for p in res.partitions] == [
            Errors.GroupSubscribedToTopicError.errno, NONE]
        assert [p.topic for p in c.fetch_offsets("g", None).partitions] == ["t"]
        assert c.delete_offsets("nope", [("t", 0)]).error_code == Errors.GroupIdNotFoundError.errno
        # Not the consumer protocol: Kafka cannot tell what it reads.
        other, _ = await stable_member(c, group="connect", protocol_type="connect")
        assert c.delete_offsets("connect", [("t", 0)]).error_code == \
            Errors.NonEmptyGroupError.errno
        c.leave_group("g", [(member, None)])
        res = c.delete_offsets("g", [("t", 0)])
        assert [p.error_code for p in res.partitions] == [NONE]
        assert c.describe_groups(["g"])[0].state == "Dead"
    run(body)


def test_describe_and_list_groups():
    async def body():
        c = make()
        member, _ = await stable_member(c)
        commit(c, group="simple")
        [d, missing] = c.describe_groups(["g", "missing"])
        assert (d.state, d.protocol_type, d.protocol_name) == ("Stable", "consumer", "range")
        [m] = d.members
        assert (m.member_id, m.client_id, m.client_host) == (member, "cli", "/h")
        assert m.metadata == sub("t") and m.assignment == assign(("t", [0]))
        assert (missing.error_code, missing.state) == (Errors.GroupIdNotFoundError.errno, "Dead")
        assert sorted(g.group_id for g in c.list_groups()) == ["g", "simple"]
        assert [g.group_id for g in c.list_groups(states_filter=["stable"])] == ["g"]
        assert [g.group_id for g in c.list_groups(states_filter=["Empty"])] == ["simple"]
        assert [g.group_type for g in c.list_groups(types_filter=["CLASSIC"])] == ["classic"] * 2
        assert c.list_groups(types_filter=["consumer"]) == []
    run(body)


def test_close_answers_waiting_join_and_refuses_new_work():
    async def body():
        c = make(group_initial_rebalance_delay_ms=1000)
        first = await c.join_group("g", "", None, "consumer", [("range", b"")],
                                   SESSION, 30_000, "cli", "/h", 9)
        fut = c.join_group("g", first.member_id, None, "consumer", [("range", b"")],
                           SESSION, 30_000, "cli", "/h", 9)
        c.close()
        assert (await fut).error_code == Errors.NotCoordinatorError.errno
        assert commit(c) == [Errors.CoordinatorNotAvailableError.errno]
    run(body)


def test_a_cancelled_join_does_not_break_the_group():
    async def body():
        c = make(group_initial_rebalance_delay_ms=1000)
        first = await c.join_group("g", "", None, "consumer", [("range", b"")],
                                   SESSION, 30_000, "cli", "/h", 9)
        fut = c.join_group("g", first.member_id, None, "consumer", [("range", b"")],
                           SESSION, 30_000, "cli", "/h", 9)
        fut.cancel()  # the client disconnected
        c.clock.advance(1000)
        await asyncio.sleep(0)
        assert c.describe_groups(["g"])[0].state == "CompletingRebalance"
    run(body)
