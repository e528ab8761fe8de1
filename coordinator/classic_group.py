"""A classic consumer group (JoinGroup/SyncGroup protocol): members, generation,
leader, the protocol they agreed on, and the state machine of Kafka's
ClassicGroup:

    Empty ──join──▶ PreparingRebalance ──all joined / timeout──▶ CompletingRebalance
      ▲                  ▲      │                                     │ leader syncs
      │                  │      └──no members──▶ Empty                ▼
      │                  └───────────── member change ─────────── Stable
    any ──deleted / expired──▶ Dead

This module is bookkeeping only: no timers, no I/O. The rules that move a
group between states live in :mod:`coordinator.classic_rebalance` and
:mod:`coordinator.group_metadata_manager`.
"""
from __future__ import annotations

import enum
import logging
import uuid
from collections import Counter
from typing import Any, Callable

import kafka.errors as Errors

from kafka_wire.coordinator import consumer_protocol
from kafka_wire.coordinator.results import JoinMember, JoinResult, SyncResult

__all__ = ["ClassicGroupState", "ClassicGroupMember", "ClassicGroup", "IllegalGroupTransition"]

log = logging.getLogger(__name__)


class ClassicGroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


S = ClassicGroupState

# Kafka's ClassicGroupState.validPreviousStates.
_VALID_PREVIOUS = {
    S.EMPTY: {S.PREPARING_REBALANCE},
    S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
    S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
    S.STABLE: {S.COMPLETING_REBALANCE},
    S.DEAD: {S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD},
}


class IllegalGroupTransition(RuntimeError):
    """A bug: the coordinator tried a transition Kafka's state machine forbids."""


class ClassicGroupMember:
    """One member: its protocols, timeouts, assignment and pending responses."""

    __slots__ = (
        "member_id", "group_instance_id", "client_id", "client_host", "rebalance_timeout_ms",
        "session_timeout_ms", "protocol_type", "protocols", "assignment", "assignment_generation",
        "join_callback", "sync_callback", "is_new", "heartbeat_timer", "heartbeat_token",
    )

    def __init__(self, member_id: str, group_instance_id: str | None, client_id: str,
                 client_host: str, rebalance_timeout_ms: int, session_timeout_ms: int,
                 protocol_type: str, protocols: list[tuple[str, bytes]]) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.client_host = client_host
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = list(protocols)
        self.assignment = b""
        # The generation whose leader produced ``assignment`` (-1: none yet).
        self.assignment_generation = -1
        self.join_callback: Callable[[JoinResult], None] | None = None
        self.sync_callback: Callable[[SyncResult], None] | None = None
        # A member that has not yet completed its first JoinGroup.
        self.is_new = False
        self.heartbeat_timer: Any = None
        self.heartbeat_token: object | None = None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.join_callback is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.sync_callback is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        raise KeyError(f"member {self.member_id} does not support protocol {protocol!r}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same protocols, same order, same metadata (Kafka's MemberMetadata.matches)."""
        return [(n, bytes(m)) for n, m in protocols] == [(n, bytes(m)) for n, m in self.protocols]

    def vote(self, candidates: set[str]) -> str:
        """The first of this member's protocols (in its preference order) among candidates."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def __repr__(self) -> str:
        return (f"<ClassicGroupMember {self.member_id} instance={self.group_instance_id} "
                f"join={self.is_awaiting_join} sync={self.is_awaiting_sync}>")


class ClassicGroup:
    """Membership and generation state of one classic group."""

    group_type = "classic"

    def __init__(self, group_id: str, now_ms: int,
                 state: ClassicGroupState = ClassicGroupState.EMPTY) -> None:
        self.group_id = group_id
        self.state = state
        # When the group entered its current state (offset expiry counts from Empty).
        self.state_timestamp_ms = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, ClassicGroupMember] = {}
        # Members told MEMBER_ID_REQUIRED that have not rejoined yet.
        self.pending_members: set[str] = set()
        # Members of the current generation that have not sent SyncGroup yet.
        self.pending_sync_members: set[str] = set()
        self.static_members: dict[str, str] = {}  # group_instance_id -> member_id
        self._supported_protocols: Counter[str] = Counter()
        # Set when a member joins during the initial delay, which then extends it.
        self.new_member_added = False
        self.subscribed_topics: set[str] | None = None
        # Timers: the delayed join (rebalance), and the wait for SyncGroups.
        self.join_timer: Any = None
        self.join_token: object | None = None
        self.join_is_initial = False
        self.sync_timer: Any = None
        self.sync_token: object | None = None
        self.pending_member_timers: dict[str, Any] = {}
        # Set for groups recreated from the checkpoint store after a restart.
        self.loaded_at_ms: int | None = None

    # -- state ---------------------------------------------------------------------------

    def is_(self, state: ClassicGroupState) -> bool:
        return self.state is state

    def transition_to(self, target: ClassicGroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[target]:
            raise IllegalGroupTransition(
                f"group {self.group_id!r} cannot go from {self.state} to {target}")
        log.debug("group %s: %s -> %s", self.group_id, self.state, target)
        self.state = target
        self.state_timestamp_ms = now_ms

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[S.PREPARING_REBALANCE]

    # -- members -------------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> ClassicGroupMember:
        return self.members[member_id]

    def size(self) -> int:
        return len(self.members)

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: ClassicGroupMember,
            join_callback: Callable[[JoinResult], None] | None) -> None:
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._supported_protocols.update(set(member.protocol_names()))
        member.join_callback = join_callback
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> ClassicGroupMember | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._supported_protocols.subtract(set(member.protocol_names()))
            self._supported_protocols += Counter()  # drop zero counts
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)
        return member

    def update_member(self, member: ClassicGroupMember, protocols: list[tuple[str, bytes]],
                      rebalance_timeout_ms: int, session_timeout_ms: int,
                      join_callback: Callable[[JoinResult], None] | None) -> None:
        self._supported_protocols.subtract(set(member.protocol_names()))
        member.protocols = list(protocols)
        self._supported_protocols.update(set(member.protocol_names()))
        self._supported_protocols += Counter()
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.join_callback = join_callback

    def replace_static_member(self, instance_id: str, old_member_id: str,
                              new_member_id: str) -> ClassicGroupMember:
        """Give a static member's slot (and assignment) to its new member id.

        Whoever still waits on the old id is fenced at once.
        """
        member = self.members.pop(old_member_id)
        fenced = Errors.FencedInstanceIdError.errno
        self.invoke_join_callback(member, JoinResult.error(fenced, old_member_id))
        self.invoke_sync_callback(member, SyncResult.error(fenced))
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        if old_member_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)
        self.static_members[instance_id] = new_member_id
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def is_static_member_fenced(self, instance_id: str | None, member_id: str) -> bool:
        current = self.static_member_id(instance_id)
        return current is not None and current != member_id

    def awaiting_join_count(self) -> int:
        return sum(1 for m in self.members.values() if m.is_awaiting_join)

    def has_all_members_joined(self) -> bool:
        return (all(m.is_awaiting_join for m in self.members.values())
                and not self.pending_members)

    def not_yet_rejoined(self) -> list[ClassicGroupMember]:
        return [m for m in self.members.values() if not m.is_awaiting_join]

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Make sure the leader is a member that rejoined; False if none did."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        for member in self.members.values():
            if member.is_awaiting_join:
                log.info("group %s: leader %s did not rejoin, %s leads now",
                         self.group_id, self.leader_id, member.member_id)
                self.leader_id = member.member_id
                return True
        return False

    @staticmethod
    def generate_member_id(client_id: str, group_instance_id: str | None) -> str:
        # Kafka: groupInstanceId (or clientId) + "-" + UUID.
        prefix = group_instance_id if group_instance_id is not None else client_id
        return f"{prefix}-{uuid.uuid4()}"

    # -- protocols -----------------------------------------------------------------------

    def supports_protocols(self, protocol_type: str, protocol_names: set[str]) -> bool:
        if self.is_(S.EMPTY) or not self.members:
            return bool(protocol_type) and bool(protocol_names)
        n = len(self.members)
        return (self.protocol_type == protocol_type
                and any(self._supported_protocols[p] == n for p in protocol_names))

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {p for p, count in self._supported_protocols.items() if count == n}

    def select_protocol(self) -> str:
        """Each member votes for its most preferred candidate; most votes wins.

        Kafka breaks ties arbitrarily (hash order); we take the tied protocol
        that got its first vote earliest in member join order, so that runs
        are reproducible.
        """
        if not self.members:
            raise IllegalGroupTransition(f"cannot select a protocol for empty group {self.group_id!r}")
        candidates = self.candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        return max(votes, key=lambda p: votes[p])  # max keeps the first of equals

    def compute_subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to, if the group speaks the consumer protocol."""
        if (self.protocol_type != consumer_protocol.PROTOCOL_TYPE or self.protocol_name is None
                or not self.members):
            return None
        topics: set[str] = set()
        try:
            for member in self.members.values():
                topics.update(consumer_protocol.decode_subscription(
                    member.metadata(self.protocol_name)).topics)
        except (consumer_protocol.ConsumerProtocolError, KeyError) as exc:
            log.warning("group %s: cannot read the subscriptions of its members (%s); "
                        "treating every topic as subscribed", self.group_id, exc)
            return None
        return topics

    def is_subscribed_to_topic(self, topic: str) -> bool:
        # Unknown subscriptions count as subscribed to everything (Kafka).
        return self.subscribed_topics is None or topic in self.subscribed_topics

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(S.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = None
            self.transition_to(S.EMPTY, now_ms)
        self.pending_sync_members.clear()

    def current_member_metadata(self) -> list[JoinMember]:
        assert self.protocol_name is not None
        return [JoinMember(m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
                for m in self.members.values()]

    # -- pending responses ---------------------------------------------------------------

    @staticmethod
    def invoke_join_callback(member: ClassicGroupMember, result: JoinResult) -> bool:
        callback, member.join_callback = member.join_callback, None
        if callback is None:
            return False
        callback(result)
        return True

    @staticmethod
    def invoke_sync_callback(member: ClassicGroupMember, result: SyncResult) -> bool:
        callback, member.sync_callback = member.sync_callback, None
        if callback is None:
            return False
        callback(result)
        return True

    def __repr__(self) -> str:
        return (f"<ClassicGroup {self.group_id!r} {self.state} gen={self.generation_id} "
                f"members={list(self.members)} leader={self.leader_id}>")
