"""Hypothesis drives the classic group protocol with random joins, syncs,
heartbeats, leaves and clock jumps from four clients (two static), and checks
it against a small model of what the coordinator has told them:

- at most one leader per generation, and every member of a generation hears
  the same protocol;
- generations only increase (while the group lives);
- a Stable group's members all hold an assignment from the current
  generation, and SyncGroup hands out exactly what that generation's leader
  sent (or nothing for members it left out);
- no member is in two states (pending and joined, waiting to join and to
  sync, waiting in a state where nobody waits);
- every request is answered at most once, and all are answered once time
  has run on long enough (liveness).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import kafka.errors as Errors
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kafka_wire.coordinator.classic_group import ClassicGroupState as S

from .helpers import Harness, Pending, sub

NONE = Errors.NoError.errno
RESET = {Errors.UnknownMemberIdError.errno, Errors.FencedInstanceIdError.errno}
PROTOCOLS = [
    [("range", sub("t"))],
    [("range", sub("t", "u"))],
    [("roundrobin", b"rr"), ("range", sub("t"))],
    [("roundrobin", b"rr")],
]


@dataclass
class Client:
    index: int
    instance: str | None
    member_id: str = ""
    generation: int = -1
    join: Pending | None = None
    sync: Pending | None = None
    seen_join: int = 0
    seen_sync: int = 0
    members: list = field(default_factory=list)
    leader: bool = False
    skip_assignment: bool = False
    phase: str = "idle"  # idle (must join) -> joined (must sync) -> stable (heartbeats)

    @property
    def identity(self) -> str:
        return self.instance or self.member_id

    def reset(self) -> None:
        self.member_id, self.generation, self.leader, self.members = "", -1, False, []
        self.phase = "idle"


class ClassicGroupMachine(RuleBasedStateMachine):
    initial_delay_ms = 100

    def __init__(self) -> None:
        super().__init__()
        self.h = Harness(group_initial_rebalance_delay_ms=self.initial_delay_ms,
                         new_member_join_timeout_ms=60_000)
        self.clients = [Client(i, f"static-{i}" if i >= 2 else None) for i in range(4)]
        self.pendings: list[Pending] = []
        self.incarnation = 0
        self.group_obj = None
        self.last_generation = 0
        # (incarnation, generation) -> facts told to clients
        self.leaders: dict[tuple[int, int], set[str]] = {}
        self.protocols: dict[tuple[int, int], str] = {}
        self.plans: dict[tuple[int, int], dict[str, bytes]] = {}

    # -- driving ---------------------------------------------------------------------------

    def _track_group(self) -> None:
        group = self.h.group()
        if group is not None and group is not self.group_obj:
            self.incarnation += 1
            self.group_obj = group
            self.last_generation = group.generation_id

    def _key(self, generation: int) -> tuple[int, int]:
        return (self.incarnation, generation)

    def _pending(self) -> Pending:
        p = Pending()
        self.pendings.append(p)
        return p

    def _process(self) -> None:
        self._track_group()
        for c in self.clients:
            if c.join is not None and len(c.join.results) > c.seen_join:
                c.seen_join += 1
                self._on_join(c, c.join.results[-1])
            if c.sync is not None and len(c.sync.results) > c.seen_sync:
                c.seen_sync += 1
                self._on_sync(c, c.sync.results[-1])

    def _on_join(self, c: Client, r) -> None:
        event(f"join answered {Errors.for_code(r.error_code).__name__}")
        if r.error_code == NONE:
            if c.instance and r.generation_id == c.generation and r.member_id != c.member_id:
                event("static member rejoined without rebalance")
            group = self.h.group()
            if c.instance and group is not None and group.is_(S.STABLE):
                event("static member rejoined a Stable group without rebalance")
            c.member_id, c.generation, c.members = r.member_id, r.generation_id, r.members
            c.phase = "joined"
            c.leader, c.skip_assignment = r.leader == r.member_id, r.skip_assignment
            key = self._key(r.generation_id)
            if c.leader:
                self.leaders.setdefault(key, set()).add(c.identity)
            assert self.protocols.setdefault(key, r.protocol_name) == r.protocol_name
        elif r.error_code == Errors.MemberIdRequiredError.errno:
            c.member_id = r.member_id
        elif r.error_code in RESET:
            c.reset()

    def _on_sync(self, c: Client, r) -> None:
        event(f"sync answered {Errors.for_code(r.error_code).__name__}")
        if r.error_code == NONE:
            plan = self.plans.get(self._key(c.generation))
            if plan is not None:
                assert r.assignment == plan.get(c.identity, b""), (c, r, plan)
            c.phase = "stable"
        elif r.error_code in RESET:
            c.reset()
        elif r.error_code == Errors.RebalanceInProgressError.errno:
            c.phase = "idle"

    @staticmethod
    def _busy(p: Pending | None) -> bool:
        return p is not None and not p.done

    # -- rules -----------------------------------------------------------------------------

    @rule(i=st.integers(0, 3), protocols=st.sampled_from(PROTOCOLS),
          version=st.sampled_from([3, 5, 9]), rebalance=st.sampled_from([10_000, 30_000]),
          retry=st.booleans())
    def join(self, i, protocols, version, rebalance, retry):
        c = self.clients[i]
        if self._busy(c.join) and not (retry and c.member_id):
            return  # clients do not send a second JoinGroup while one waits
        c.join, c.seen_join = self._pending(), 0
        self.h.mgr.join_group("g", c.member_id, c.instance, "consumer", protocols, 10_000,
                              rebalance, f"client{i}", "/h", version, c.join)
        self._process()

    @rule(i=st.integers(0, 3), leave_out=st.booleans())
    def sync(self, i, leave_out):
        c = self.clients[i]
        if c.generation < 0 or self._busy(c.sync):
            return
        assignments = []
        if c.leader and not c.skip_assignment:
            ids = [(m.group_instance_id or m.member_id, m.member_id) for m in c.members]
            if leave_out and len(ids) > 1:
                ids = ids[:-1]
            plan = {ident: f"{c.generation}:{ident}".encode() for ident, _ in ids}
            assignments = [(mid, plan[ident]) for ident, mid in ids]
            group = self.h.group()
            if (group is not None and group.is_(S.COMPLETING_REBALANCE)
                    and group.generation_id == c.generation and group.is_leader(c.member_id)):
                self.plans[self._key(c.generation)] = plan
        c.sync, c.seen_sync = self._pending(), 0
        self.h.mgr.sync_group("g", c.generation, c.member_id, c.instance, None, None,
                              assignments, c.sync)
        self._process()

    @rule(i=st.integers(0, 3))
    def heartbeat(self, i):
        c = self.clients[i]
        if not c.member_id:
            return
        error = self.h.mgr.heartbeat("g", c.generation, c.member_id, c.instance)
        if error in RESET:
            c.reset()
        self._process()

    @rule(i=st.integers(0, 3), by_instance=st.booleans())
    def leave(self, i, by_instance):
        c = self.clients[i]
        member_id = "" if (by_instance and c.instance) else c.member_id
        if not member_id and not c.instance:
            return
        self.h.mgr.leave_group("g", [(member_id, c.instance)])
        c.reset()
        self._process()

    @rule(i=st.integers(0, 3), version=st.sampled_from([3, 5, 9]))
    def act(self, i, version):
        """What a client does next on its own: join, sync, or heartbeat."""
        c = self.clients[i]
        if self._busy(c.join) or self._busy(c.sync):
            return
        if c.phase == "idle":
            self.join(i, PROTOCOLS[0], version, 30_000, False)
        elif c.phase == "joined":
            self.sync(i, False)
        else:
            error = self.h.mgr.heartbeat("g", c.generation, c.member_id, c.instance)
            if error in RESET:
                c.reset()
            elif error == Errors.RebalanceInProgressError.errno:
                c.phase = "idle"
            self._process()

    @rule(ms=st.sampled_from([0, 100, 3_000]), who=st.sets(st.integers(0, 3), min_size=1))
    def round(self, ms, who):
        """Some clients each take their next step, then a little time passes."""
        for i in sorted(who):
            self.act(i, 9)
        self.advance(ms)

    @rule(i=st.integers(0, 3))
    def restart(self, i):
        """The client process restarts: it forgets its member id (not its instance id)."""
        c = self.clients[i]
        if c.instance and c.generation >= 0:
            event("static member restarted")
        c.reset()
        self.clients[i].join = self.clients[i].sync = None

    @rule(ms=st.sampled_from([0, 50, 100, 1_000, 3_000, 6_000, 10_000, 30_000, 60_000]))
    def advance(self, ms):
        self.h.clock.advance(ms)
        self._process()

    # -- invariants ------------------------------------------------------------------------

    @invariant()
    def answered_at_most_once(self):
        assert all(len(p.results) <= 1 or p.results[0].error_code != NONE
                   for p in self.pendings)
        assert all(len(p.results) <= 1 for p in self.pendings), \
            [p.results for p in self.pendings if len(p.results) > 1]

    @invariant()
    def one_leader_per_generation(self):
        assert all(len(ids) <= 1 for ids in self.leaders.values()), self.leaders

    @invariant()
    def group_is_consistent(self):
        group = self.h.group()
        if group is None:
            return
        if group is self.group_obj:
            assert group.generation_id >= self.last_generation
            self.last_generation = group.generation_id
        members = group.members
        assert (group.leader_id is None) == (not members)
        assert group.leader_id is None or group.leader_id in members
        assert not (group.pending_members & set(members))
        assert group.pending_sync_members <= set(members)
        assert {i: m for i, m in group.static_members.items()} == {
            m.group_instance_id: mid for mid, m in members.items() if m.group_instance_id}
        for m in members.values():
            assert not (m.is_awaiting_join and m.is_awaiting_sync), m
        state = group.state
        event(f"group reached {state}")
        assert state is not S.DEAD
        if state is S.EMPTY:
            assert not members
        if state is S.PREPARING_REBALANCE:
            assert not any(m.is_awaiting_sync for m in members.values())
        if state in (S.COMPLETING_REBALANCE, S.STABLE):
            assert not any(m.is_awaiting_join for m in members.values())
            assert members and group.protocol_name is not None
        if state is S.STABLE:
            assert not any(m.is_awaiting_sync for m in members.values())
            for m in members.values():
                assert m.assignment_generation == group.generation_id, (m, group)

    def teardown(self):
        # Liveness: with time, every waiting request gets its answer.
        for _ in range(6):
            self.h.clock.advance(60_000)
        self._process()
        assert all(p.done for p in self.pendings), [p for p in self.pendings if not p.done]


ClassicGroupMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
test_classic_group_state_machine = ClassicGroupMachine.TestCase


class NoInitialDelayMachine(ClassicGroupMachine):
    """The same, with group_initial_rebalance_delay_ms=0 (first joins answer at once)."""
    initial_delay_ms = 0


NoInitialDelayMachine.TestCase.settings = settings(
    max_examples=100, stateful_step_count=50, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
test_classic_group_state_machine_without_initial_delay = NoInitialDelayMachine.TestCase
