"""KIP-848 consumer groups: the state of a group and its members, the checks of
OffsetCommit and OffsetFetch against them, and the results of
ConsumerGroupHeartbeat (the rules are in :mod:`coordinator.consumer_group_manager`
and :mod:`coordinator.consumer_group_assignment`). In this protocol the coordinator
computes assignments and members reconcile towards them.

Epochs: the **group epoch** rises whenever membership, subscriptions or the
subscribed topics' partition counts change; the **assignment epoch** is the
group epoch the target assignment was computed for; a **member epoch** says
which target a member has reconciled to. A member moving to a new target
first gives up partitions it must lose (it stays in its epoch, state
``unrevoked_partitions``, until a heartbeat no longer lists them), then gets
the new epoch and whatever partitions are free; partitions still held by
another member wait (``unreleased_partitions``) until that member lets go.
"""
from __future__ import annotations

import uuid
from collections import Counter
from typing import Any, NamedTuple

import kafka.errors as Errors

__all__ = ["ConsumerGroup", "ConsumerGroupMember", "HeartbeatResult",
           "ConsumerGroupDescription", "ConsumerMemberDescription", "LEAVE_EPOCH",
           "STATIC_LEAVE_EPOCH", "STABLE", "UNREVOKED", "UNRELEASED", "Partitions"]

LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2
STABLE, UNREVOKED, UNRELEASED = "stable", "unrevoked_partitions", "unreleased_partitions"
Partitions = dict[str, set[int]]  # topic name -> partitions


class HeartbeatResult(NamedTuple):
    error_code: int
    error_message: str | None
    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int
    # [(topic_id, [partitions])]; None when the assignment did not change.
    assignment: list[tuple[uuid.UUID, list[int]]] | None

    @classmethod
    def error(cls, error_code: int, message: str | None = None) -> "HeartbeatResult":
        return cls(error_code, message, None, -1, 0, None)


class ConsumerMemberDescription(NamedTuple):
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    assignment: list[tuple[uuid.UUID | None, str, list[int]]]
    target_assignment: list[tuple[uuid.UUID | None, str, list[int]]]
    subscribed_topic_regex: str | None = None


class ConsumerGroupDescription(NamedTuple):
    group_id: str
    error_code: int
    error_message: str | None
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: list[ConsumerMemberDescription]


class ConsumerGroupMember:
    __slots__ = ("member_id", "instance_id", "rack_id", "client_id", "client_host",
                 "rebalance_timeout_ms", "subscribed", "subscribed_names", "subscribed_regex",
                 "server_assignor", "member_epoch",
                 "previous_member_epoch", "state", "assigned", "revoking", "session_timer",
                 "session_token", "rebalance_timer", "rebalance_token", "saved_meta",
                 "saved_current")

    def __init__(self, member_id: str, instance_id: str | None) -> None:
        self.member_id = member_id
        self.instance_id = instance_id
        self.rack_id: str | None = None
        self.client_id = ""
        self.client_host = ""
        self.rebalance_timeout_ms = 300_000
        # What the member asked for (names and an RE2J-style regex) and what
        # that resolves to in the namespace's topics (the assignors' input).
        self.subscribed_names: list[str] = []
        self.subscribed_regex: str | None = None
        self.subscribed: list[str] = []
        self.server_assignor: str | None = None
        self.member_epoch = 0
        self.previous_member_epoch = 0
        self.state = STABLE
        self.assigned: Partitions = {}
        self.revoking: Partitions = {}
        self.session_timer: Any = None
        self.session_token: object | None = None
        self.rebalance_timer: Any = None
        self.rebalance_token: object | None = None
        # What the record log holds of this member (None: nothing yet), to write only changes.
        self.saved_meta: tuple | None = None
        self.saved_current: tuple | None = None

    def meta(self) -> tuple:
        """The member's metadata as its MEMBER record keeps it."""
        return (self.member_id, self.instance_id, self.rack_id, self.client_id, self.client_host,
                self.rebalance_timeout_ms, self.subscribed_names, self.subscribed_regex,
                self.server_assignor, self.subscribed if self.subscribed_regex else None)

    def owned(self) -> set[tuple[str, int]]:
        return ({(t, p) for t, ps in self.assigned.items() for p in ps}
                | {(t, p) for t, ps in self.revoking.items() for p in ps})

    def __repr__(self) -> str:
        return (f"<ConsumerGroupMember {self.member_id} epoch={self.member_epoch} "
                f"{self.state} assigned={self.assigned} revoking={self.revoking}>")


class ConsumerGroup:
    group_type = "consumer"
    protocol_type = "consumer"

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.target: dict[str, Partitions] = {}
        self.owner: dict[tuple[str, int], str] = {}  # partition -> member holding it
        self.topics: dict[str, tuple[uuid.UUID, int]] = {}  # subscribed topic metadata
        # What the record log holds (see ConsumerGroupManager._save): the epochs written,
        # the target dict last compared and each member's target written, and members
        # removed since (their tombstones are due).
        self.saved_head: tuple[int, int] | None = None
        self.saved_target_of: dict | None = None
        self.saved_target: dict[str, Partitions] = {}
        self.gone: set[str] = set()

    @property
    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.assignment_epoch < self.group_epoch:
            return "Assigning"
        if any(m.member_epoch != self.assignment_epoch or m.state != STABLE
               for m in self.members.values() if m.member_epoch != STATIC_LEAVE_EPOCH):
            return "Reconciling"
        return "Stable"

    def validate_offset_commit(self, member_id: str, member_epoch: int,
                               api_version: int | None = None) -> int | None:
        """Kafka's ConsumerGroup.validateOffsetCommit: an error code, None = accept."""
        if member_epoch < 0 and not self.members:
            return None  # admin commit to an empty group
        member = self.members.get(member_id)
        if member is None:
            return Errors.UnknownMemberIdError.errno
        if api_version is not None and api_version < 9:
            # "OffsetCommit version 9 or above must be used by members using the modern
            # group protocol" (the epoch of a KIP-848 member means nothing to older ones).
            return Errors.UnsupportedVersionError.errno
        if member_epoch != member.member_epoch:
            return Errors.StaleMemberEpochError.errno
        return None

    def validate_offset_fetch(self, member_id: str, member_epoch: int) -> int | None:
        """Kafka's ConsumerGroup.validateOffsetFetch: an error code, None = accept."""
        member = self.members.get(member_id)
        if member is None:
            return Errors.UnknownMemberIdError.errno
        if member_epoch != member.member_epoch:
            return Errors.StaleMemberEpochError.errno
        return None

    def subscribed_topics(self) -> set[str]:
        return {t for m in self.members.values() for t in m.subscribed}

    def preferred_assignor(self, default: str) -> str:
        votes = Counter(m.server_assignor for m in self.members.values() if m.server_assignor)
        return votes.most_common(1)[0][0] if votes else default

    def set_ownership(self, member: ConsumerGroupMember, assigned: Partitions,
                      revoking: Partitions) -> None:
        for tp in member.owned():
            if self.owner.get(tp) == member.member_id:
                del self.owner[tp]
        member.assigned = {t: set(ps) for t, ps in assigned.items() if ps}
        member.revoking = {t: set(ps) for t, ps in revoking.items() if ps}
        for tp in member.owned():
            self.owner[tp] = member.member_id
