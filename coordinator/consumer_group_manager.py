"""KIP-848 ConsumerGroupHeartbeat: the coordinator computes each group's
target assignment and reconciles members towards it, one heartbeat at a time.

Only the heartbeating member is reconciled, as in Kafka.

Sans-IO like the classic protocol: plain values in and out, timers on the
injected clock (session timeout per member; rebalance timeout while a member
holds partitions it must revoke).

A member may subscribe to topic names, to a regular expression matched
against the whole name of every topic (KIP-848 ``SubscribedTopicRegex``), or
both; the regex is re-resolved on each of the member's heartbeats, so topics
created later join the subscription. Kafka compiles it with RE2J; here it is
RE2 (google-re2): the same syntax, and linear time, so no client regex can
stall the event loop with backtracking.

Groups survive a restart as in Kafka: each change of a group's epochs, of a
member's metadata, epoch or assignment, or of a target assignment is written to
the coordinator's record log (``persist``; :mod:`coordinator.consumer_group_records`)
before the heartbeat is answered, and :meth:`ConsumerGroupManager.load` rebuilds
the groups at start, each member's session starting again then. A heartbeat that
changes nothing writes nothing. A group dropped as it emptied without offsets is
remembered until the next offset cleanup (Kafka keeps it Empty until then) by a
DROPPED record, so a restart in between remembers it too.

Not emulated: client-side assignors, rack-aware assignment, online migration
of a live classic group.
"""
from __future__ import annotations

import logging
import uuid
from typing import Any, Callable, Iterable

import kafka.errors as Errors

import re2

from kafka_wire.coordinator import consumer_group_records as records
from kafka_wire.coordinator.assignors import ASSIGNORS
from kafka_wire.coordinator.clock import Clock
from kafka_wire.coordinator.config import GroupCoordinatorConfig
from kafka_wire.coordinator.consumer_group import (
    LEAVE_EPOCH, STABLE, STATIC_LEAVE_EPOCH, UNRELEASED, UNREVOKED, ConsumerGroup,
    ConsumerGroupDescription, ConsumerGroupMember, ConsumerMemberDescription, HeartbeatResult,
    Partitions,
)
from kafka_wire.coordinator.results import GroupListing

__all__ = ["ConsumerGroupManager", "TopicMetadata"]

log = logging.getLogger(__name__)

NONE = Errors.NoError.errno
INVALID_REGULAR_EXPRESSION = 128  # not in kafka-python's error table
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a client's bad regex is answered, not logged to stderr by RE2
TopicMetadata = Callable[[str], "tuple[uuid.UUID, int] | None"]
_DROPPED_MAX = 10_000  # Bounds.kafka_groups_per_namespace's default
# persist(group_id, [[kind, *body], ...]) writes a group's records at once or raises.
Persist = Callable[[str, list], None]


class ConsumerGroupManager:
    def __init__(self, config: GroupCoordinatorConfig, clock: Clock,
                 topic_metadata: TopicMetadata, *,
                 has_offsets: Callable[[str], bool] = lambda group_id: False,
                 list_topics: Callable[[], Iterable[str]] = lambda: (),
                 persist: Persist | None = None) -> None:
        self.config = config
        self.persist = persist
        self._unarmed: list[str] = []  # loaded groups whose members' timers wait for arm()
        # Groups dropped as they emptied since the last offset cleanup: Kafka keeps an empty
        # group until that cleanup, so until then its old members are unknown members.
        self._dropped: dict[str, None] = {}
        self.clock = clock
        self.topic_metadata = topic_metadata
        self.has_offsets = has_offsets
        self.list_topics = list_topics
        self.groups: dict[str, ConsumerGroup] = {}
        self._patterns: dict[str, Any] = {}

    # -- queries used by the GroupCoordinator --------------------------------------------

    def has_group(self, group_id: str) -> bool:
        return group_id in self.groups

    def group_ids(self) -> list[str]:
        return list(self.groups)

    def is_empty(self, group_id: str) -> bool:
        return not self.groups[group_id].members

    def subscribed_topics(self, group_id: str) -> set[str]:
        return self.groups[group_id].subscribed_topics()

    def list_groups(self) -> list[GroupListing]:
        return [GroupListing(g.group_id, "consumer", g.state, "consumer")
                for g in self.groups.values()]

    def remove_group(self, group_id: str, *, dropped: bool = False) -> None:
        """``dropped``: it emptied (no offsets) and is remembered until the next cleanup."""
        group = self.groups.pop(group_id)
        for member in group.members.values():
            self._cancel_timers(member)
        if self.persist is None:
            return
        bodies: list[list] = []
        # group_epoch > 0: a group loaded from its DROPPED record has nothing saved yet.
        if (group.saved_head is not None or group.gone or group.group_epoch > 0
                or any(m.saved_meta for m in group.members.values())):
            bodies.append([records.GROUP_GONE])
        if dropped:
            bodies.append([records.DROPPED, group.group_epoch])
        if bodies:
            self._write_removal(group_id, bodies)

    def _write_removal(self, group_id: str, bodies: list[list]) -> None:
        try:
            self.persist(group_id, bodies)
        except Exception:
            log.exception("consumer group %s: cannot write its removal", group_id)

    # -- the record log ------------------------------------------------------------------

    def load(self, groups: dict[str, dict]) -> list[str]:
        """Rebuild groups from their records (``persist``'s); their members' sessions
        start at :meth:`arm`. Returns the ids of those left out: empty, without offsets
        (their removal was not written: the caller may write it now)."""
        stale = []
        for group_id, group_records in groups.items():
            group = records.restore(group_id, group_records)
            if not group.members and not self.has_offsets(group_id):
                if records.dropped_epoch(group_records) is not None:
                    self._remember_dropped(group_id)  # gone, known until the next cleanup
                else:
                    stale.append(group_id)
                continue
            self.groups[group_id] = group
            self._unarmed.append(group_id)
            log.info("consumer group %s loaded: epoch %d, %d members", group_id,
                     group.group_epoch, len(group.members))
        return stale

    def arm(self) -> None:
        """Start the session (and pending rebalance) timers of loaded members: they must
        heartbeat within a session of the restart, or are fenced as usual."""
        while self._unarmed:
            group = self.groups.get(self._unarmed[-1])
            if group is not None:
                for member in group.members.values():
                    if member.session_timer is None:
                        self._schedule_session(group, member)  # RuntimeError: no loop yet
                    if member.state == UNREVOKED:
                        self._schedule_rebalance_timeout(group, member)
            self._unarmed.pop()

    def _save(self, group: ConsumerGroup, *members: ConsumerGroupMember,
              described: bool = True) -> None:
        """Write what changed of ``group`` and ``members`` (nothing if nothing did;
        ``described=False``: their metadata did not). A failed write is logged and
        retried at the next change or heartbeat."""
        if self.persist is None:
            return
        if not described and len(members) == 1 and records.unchanged(group, members[0]):
            return  # the heartbeat of a member that is where it was (most of them)
        bodies, saved = records.changes(group, members, described)
        if not bodies:
            if saved is not None:
                saved()  # an equal target computed again: nothing to write
            return
        try:
            self.persist(group.group_id, bodies)
        except Exception as exc:
            log.warning("consumer group %s: state not written (kept in memory, retried at the "
                        "next heartbeat): %r", group.group_id, exc)
            return
        saved()

    def delete_group(self, group_id: str) -> int:
        group = self.groups.get(group_id)
        if group is None:
            return Errors.GroupIdNotFoundError.errno
        if group.members:
            return Errors.NonEmptyGroupError.errno
        self.remove_group(group_id)
        return NONE

    def maybe_remove_group(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None and not group.members and not self.has_offsets(group_id):
            log.info("consumer group %s is empty and has no offsets: removed", group_id)
            dropped = group.group_epoch > 0
            self.remove_group(group_id, dropped=dropped)
            if dropped:
                self._remember_dropped(group_id)

    def _remember_dropped(self, group_id: str) -> None:
        self._dropped[group_id] = None
        if len(self._dropped) > _DROPPED_MAX:
            oldest = next(iter(self._dropped))
            del self._dropped[oldest]
            if self.persist is not None:
                self._write_removal(oldest, [[records.GROUP_GONE]])

    def was_dropped(self, group_id: str) -> bool:
        """Whether ``group_id`` emptied and went since the last offset cleanup (Kafka would
        still have it, Empty)."""
        return group_id in self._dropped

    def forget_dropped(self) -> None:
        """An offset cleanup ran: Kafka would have deleted those empty groups now."""
        dropped, self._dropped = self._dropped, {}
        if self.persist is not None:
            for group_id in dropped:
                self._write_removal(group_id, [[records.GROUP_GONE]])

    def shutdown(self) -> None:
        for group in self.groups.values():
            for member in group.members.values():
                self._cancel_timers(member)

    def validate_offset_commit(self, group_id: str, member_id: str, member_epoch: int,
                               api_version: int | None = None) -> int | None:
        """Kafka's ConsumerGroup.validateOffsetCommit; None = accept."""
        group = self.groups[group_id]
        if member_epoch < 0 and not group.members:
            return None  # admin commit to an empty group
        member = group.members.get(member_id)
        if member is None:
            return Errors.UnknownMemberIdError.errno
        if api_version is not None and api_version < 9:
            # "OffsetCommit version 9 or above must be used by members using the modern
            # group protocol" (the epoch of a KIP-848 member means nothing to older ones).
            return Errors.UnsupportedVersionError.errno
        if member_epoch != member.member_epoch:
            return Errors.StaleMemberEpochError.errno
        return None

    def validate_offset_fetch(self, group_id: str, member_id: str, member_epoch: int) -> int | None:
        member = self.groups[group_id].members.get(member_id)
        if member is None:
            return Errors.UnknownMemberIdError.errno
        if member_epoch != member.member_epoch:
            return Errors.StaleMemberEpochError.errno
        return None

    # -- ConsumerGroupHeartbeat ----------------------------------------------------------

    def heartbeat(self, group_id: str, member_id: str, member_epoch: int,
                  instance_id: str | None = None, rack_id: str | None = None,
                  rebalance_timeout_ms: int = -1,
                  subscribed_topic_names: list[str] | None = None,
                  server_assignor: str | None = None,
                  topic_partitions_owned: Iterable[tuple[Any, Iterable[int]]] | None = None,
                  client_id: str = "", client_host: str = "",
                  subscribed_topic_regex: str | None = None,
                  topic_visible: Callable[[str], bool] | None = None) -> HeartbeatResult:
        invalid = Errors.InvalidRequestError.errno
        if not group_id:
            return HeartbeatResult.error(invalid, "GroupId can't be empty.")
        if member_epoch == 0:
            if rebalance_timeout_ms == -1:
                return HeartbeatResult.error(invalid, "RebalanceTimeoutMs must be provided in "
                                                      "first request.")
            if topic_partitions_owned is None or list(topic_partitions_owned):
                return HeartbeatResult.error(invalid, "TopicPartitions must be empty when "
                                                      "(re-)joining.")
            if subscribed_topic_names is None and subscribed_topic_regex is None:
                return HeartbeatResult.error(invalid, "SubscribedTopicNames or "
                                                      "SubscribedTopicRegex must be set in first "
                                                      "request.")
        elif member_epoch == STATIC_LEAVE_EPOCH and instance_id is None:
            return HeartbeatResult.error(invalid, "InstanceId can't be null for a static leave.")
        elif member_epoch not in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH) and not member_id:
            return HeartbeatResult.error(invalid, "MemberId can't be empty.")
        if server_assignor is not None and server_assignor not in self.config.consumer_group_assignors:
            return HeartbeatResult.error(Errors.UnsupportedAssignorError.errno,
                                         f"ServerAssignor {server_assignor} is not supported; "
                                         f"use one of {list(self.config.consumer_group_assignors)}.")
        if member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(group_id, member_id, member_epoch, instance_id)
        if subscribed_topic_regex:
            try:
                self._pattern(subscribed_topic_regex)
            except re2.error as exc:
                why = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(
                    exc.args[0], bytes) else str(exc)
                return HeartbeatResult.error(INVALID_REGULAR_EXPRESSION,
                                             f"SubscribedTopicRegex {subscribed_topic_regex!r} "
                                             f"is not a valid regular expression: {why}.")

        if (self.persist is not None and (member_epoch == 0 or subscribed_topic_names is not None
                                          or subscribed_topic_regex or rack_id)
                and not records.member_record_size_ok(
                    (member_id, instance_id, rack_id, client_id, client_host,
                     subscribed_topic_regex, server_assignor), subscribed_topic_names)):
            return HeartbeatResult.error(invalid, (
                f"The member's ids and subscription are over the "
                f"{records.MEMBER_RECORD_MAX} bytes the coordinator keeps for a member: "
                f"subscribe to fewer topics (or use SubscribedTopicRegex) or shorten the ids."))
        group = self.groups.get(group_id)
        if group is None:
            if member_epoch != 0:
                return self._unknown_member(group_id, member_id)
            group = self.groups[group_id] = ConsumerGroup(group_id)
        owned = None if topic_partitions_owned is None else self._names(group, topic_partitions_owned)
        member, created, error = self._member_for(group, member_id, member_epoch, instance_id,
                                                  owned)
        if error is not None:
            self.maybe_remove_group(group_id)
            return error
        assert member is not None
        joining = member_epoch == 0
        if joining and self._dropped:
            # Joined again: its first GROUP record takes its DROPPED record away.
            self._dropped.pop(group_id, None)
        bump = created
        # Whether the member's metadata may have changed (else its record is not looked at).
        described = (created or rebalance_timeout_ms != -1 or rack_id is not None
                     or subscribed_topic_names is not None or subscribed_topic_regex is not None
                     or server_assignor is not None
                     or (client_id and (client_id != member.client_id
                                        or client_host != member.client_host)))
        if rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = rebalance_timeout_ms
        if rack_id is not None:
            member.rack_id = rack_id
        if client_id:
            member.client_id, member.client_host = client_id, client_host
        if subscribed_topic_names is not None:
            member.subscribed_names = sorted(set(subscribed_topic_names))
        if subscribed_topic_regex is not None:
            member.subscribed_regex = subscribed_topic_regex or None  # "": no regex any more
        subscribed = self._resolve(member, topic_visible)
        if subscribed != member.subscribed:
            member.subscribed = subscribed
            bump = True
        if server_assignor is not None and server_assignor != member.server_assignor:
            member.server_assignor = server_assignor
            bump = True
        if self._refresh_topics(group) or bump:
            group.group_epoch += 1
            log.info("consumer group %s: epoch %d (member %s)", group_id, group.group_epoch,
                     member.member_id)
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group)
        before = {t: set(ps) for t, ps in member.assigned.items()}
        self._reconcile(group, member, owned)
        self._schedule_session(group, member)
        self._save(group, member, described=described)
        full = rebalance_timeout_ms != -1 and subscribed_topic_names is not None and owned is not None
        send = joining or full or before != member.assigned
        return HeartbeatResult(NONE, None, member.member_id, member.member_epoch,
                               self.config.consumer_group_heartbeat_interval_ms,
                               self._with_ids(group, member.assigned) if send else None)

    @staticmethod
    def _unknown_member(group_id: str, member_id: str) -> HeartbeatResult:
        """The answer to a member (epoch > 0, or leaving) of a group that is not here.

        Kafka keeps an empty group until its periodic cleanup, so there a member fenced
        after a lapsed session finds its group and gets UNKNOWN_MEMBER_ID: it drops its
        partitions and rejoins with epoch 0. Here an empty group without offsets goes with
        its last member, so the group is missing in that case; GROUP_ID_NOT_FOUND would be
        fatal to the Java client and librdkafka (they stop consuming for good).
        """
        return HeartbeatResult.error(Errors.UnknownMemberIdError.errno,
                                     f"Member {member_id} is not a member of group {group_id}.")

    def _pattern(self, regex: str):
        pattern = self._patterns.get(regex)
        if pattern is None:
            if len(self._patterns) > 1024:
                self._patterns.clear()
            pattern = self._patterns[regex] = re2.compile(regex, _RE2_OPTIONS)
        return pattern

    def _resolve(self, member: ConsumerGroupMember,
                 visible: Callable[[str], bool] | None = None) -> list[str]:
        """The topics a member's names and regex stand for now (a regex matches
        only topics the member may see)."""
        if member.subscribed_regex is None:
            return member.subscribed_names
        match = self._pattern(member.subscribed_regex).fullmatch
        topics = set(member.subscribed_names)
        topics.update(t for t in self.list_topics()
                      if match(t) and (visible is None or visible(t)))
        return sorted(topics)

    def _names(self, group: ConsumerGroup, owned: Iterable[tuple[Any, Iterable[int]]]) -> Partitions:
        """Owned partitions keyed by topic name (requests carry topic ids)."""
        by_id = {tid: name for name, (tid, _n) in group.topics.items()}
        out: Partitions = {}
        for topic, partitions in owned:
            name = topic if isinstance(topic, str) else by_id.get(topic)
            if name is not None:
                out.setdefault(name, set()).update(partitions)
        return out

    def _with_ids(self, group: ConsumerGroup, partitions: Partitions) -> list:
        return [(group.topics[t][0] if t in group.topics else None, sorted(ps))
                for t, ps in sorted(partitions.items()) if ps]

    def _member_for(self, group, member_id, member_epoch, instance_id, owned):
        fenced = Errors.FencedMemberEpochError.errno
        if member_epoch == 0:
            limit = self.config.consumer_group_max_size
            if instance_id is not None and instance_id in group.static_members:
                old = group.members[group.static_members[instance_id]]
                if old.member_epoch != STATIC_LEAVE_EPOCH and old.member_id != member_id:
                    return None, False, HeartbeatResult.error(
                        Errors.UnreleasedInstanceIdError.errno,
                        f"Static member {member_id or '<new>'} with instance id {instance_id} "
                        f"cannot join the group because the instance id is owned by "
                        f"{old.member_id}.")
                return self._replace_static(group, old, member_id or str(uuid.uuid4())), False, None
            existing = group.members.get(member_id) if member_id else None
            if existing is not None:
                # A member rejoining with epoch 0 has dropped its partitions: start it afresh.
                self._remove_member(group, existing, "rejoined with epoch 0")
            elif limit is not None and len(group.members) >= limit:
                return None, False, HeartbeatResult.error(Errors.GroupMaxSizeReachedError.errno,
                                                   f"The consumer group has reached its maximum "
                                                   f"capacity of {limit} members.")
            member = ConsumerGroupMember(member_id or str(uuid.uuid4()), instance_id)
            group.members[member.member_id] = member
            if instance_id is not None:
                group.static_members[instance_id] = member.member_id
            log.info("consumer group %s: member %s joins", group.group_id, member.member_id)
            return member, True, None
        member = group.members.get(member_id)
        if member is None:
            return None, False, HeartbeatResult.error(Errors.UnknownMemberIdError.errno,
                                               f"Member {member_id} is not a member of group "
                                               f"{group.group_id}.")
        if member.instance_id != instance_id:
            return None, False, HeartbeatResult.error(Errors.FencedInstanceIdError.errno,
                                               f"Instance id {instance_id} does not match "
                                               f"member {member_id}.")
        if member_epoch > member.member_epoch:
            return None, False, HeartbeatResult.error(fenced, (
                f"The consumer group member has a greater member epoch ({member_epoch}) than the "
                f"one known by the group coordinator ({member.member_epoch}). The member must "
                f"abandon all its partitions and rejoin."))
        if member_epoch < member.member_epoch:
            # The answer carrying the new epoch may have been lost: accept the
            # previous epoch if the member owns no more than it is assigned.
            owns = {(t, p) for t, ps in (owned or {}).items() for p in ps}
            assigned = {(t, p) for t, ps in member.assigned.items() for p in ps}
            if member_epoch != member.previous_member_epoch or not owns <= assigned:
                return None, False, HeartbeatResult.error(fenced, (
                    f"The consumer group member has a smaller member epoch ({member_epoch}) than "
                    f"the one known by the group coordinator ({member.member_epoch}). The member "
                    f"must abandon all its partitions and rejoin."))
        return member, False, None

    def _replace_static(self, group: ConsumerGroup, old: ConsumerGroupMember,
                        new_id: str) -> ConsumerGroupMember:
        """The new incarnation of a static member takes over its partitions and target."""
        self._cancel_timers(old)
        del group.members[old.member_id]
        if old.saved_meta is not None or old.member_id in group.saved_target:
            group.gone.add(old.member_id)
        member = ConsumerGroupMember(new_id, old.instance_id)
        for slot in ("rack_id", "rebalance_timeout_ms", "subscribed", "subscribed_names",
                     "subscribed_regex", "server_assignor"):
            setattr(member, slot, getattr(old, slot))
        assigned, revoking = old.assigned, old.revoking
        group.set_ownership(old, {}, {})
        group.set_ownership(member, assigned, revoking)
        # It resumes where the old incarnation was (the epoch before a static leave).
        epoch = old.previous_member_epoch if old.member_epoch == STATIC_LEAVE_EPOCH \
            else old.member_epoch
        member.member_epoch = member.previous_member_epoch = epoch
        member.state = old.state
        group.members[new_id] = member
        group.static_members[old.instance_id] = new_id
        if old.member_id in group.target:
            group.target[new_id] = group.target.pop(old.member_id)
        log.info("consumer group %s: static member %s replaces %s", group.group_id,
                 old.instance_id, old.member_id)
        return member

    def _leave(self, group_id: str, member_id: str, member_epoch: int,
               instance_id: str | None) -> HeartbeatResult:
        group = self.groups.get(group_id)
        unknown = HeartbeatResult.error(Errors.UnknownMemberIdError.errno,
                                        f"Member {member_id} is not a member of group {group_id}.")
        if group is None:
            return self._unknown_member(group_id, member_id)
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None:
                return unknown
            if member_id and current != member_id:
                return HeartbeatResult.error(Errors.FencedInstanceIdError.errno,
                                             f"Instance id {instance_id} is owned by {current}.")
            member = group.members[current]
        else:
            member = group.members.get(member_id)
            if member is None:
                return unknown
        if member_epoch == STATIC_LEAVE_EPOCH:
            # It will be back (a rolling restart): keep its partitions until its session ends.
            self._set_epoch(member, STATIC_LEAVE_EPOCH)
            log.info("consumer group %s: static member %s left temporarily", group_id,
                     member.instance_id)
            self._save(group, member)
        else:
            self._remove_member(group, member, "left the group")
            self.maybe_remove_group(group_id)
            if self.groups.get(group_id) is group:
                self._save(group)
        return HeartbeatResult(NONE, None, member.member_id, member_epoch, 0, None)

    # -- assignment ----------------------------------------------------------------------

    def _refresh_topics(self, group: ConsumerGroup) -> bool:
        """Re-read metadata of subscribed topics; True if anything changed."""
        topics = {}
        for topic in sorted(group.subscribed_topics()):
            meta = self.topic_metadata(topic)
            if meta is not None:
                topics[topic] = (meta[0], meta[1])
        changed = topics != group.topics
        group.topics = topics
        return changed

    def _compute_target(self, group: ConsumerGroup) -> None:
        name = group.preferred_assignor(self.config.consumer_group_assignors[0])
        subscriptions = {m.member_id: set(m.subscribed) for m in group.members.values()}
        sizes = {t: n for t, (_id, n) in group.topics.items()}
        group.target = ASSIGNORS[name].assign(subscriptions, sizes, group.target)
        group.assignment_epoch = group.group_epoch
        log.info("consumer group %s: target assignment for epoch %d computed by %s",
                 group.group_id, group.assignment_epoch, name)

    def _reconcile(self, group: ConsumerGroup, member: ConsumerGroupMember,
                   owned: Partitions | None) -> None:
        if member.state == UNREVOKED:
            if self._owns_any(owned, member.revoking):
                return  # still waiting for the member to give them up
            self._next_assignment(group, member, member.member_epoch + 1, owned)
        elif member.state == UNRELEASED or member.member_epoch != group.assignment_epoch:
            self._next_assignment(group, member, member.member_epoch, owned)

    @staticmethod
    def _owns_any(owned: Partitions | None, partitions: Partitions) -> bool:
        if owned is None:
            return True  # not told otherwise: assume it still holds them
        return any(owned.get(t, set()) & ps for t, ps in partitions.items())

    def _next_assignment(self, group: ConsumerGroup, member: ConsumerGroupMember,
                         epoch: int, owned: Partitions | None) -> None:
        target = group.target.get(member.member_id, {})
        keep: Partitions = {}
        revoke: Partitions = {}
        add: Partitions = {}
        unreleased = False
        for topic in set(target) | set(member.assigned):
            wanted = target.get(topic, set())
            current = member.assigned.get(topic, set())
            keep[topic] = current & wanted
            revoke[topic] = current - wanted
            free = {p for p in wanted - current
                    if group.owner.get((topic, p)) in (None, member.member_id)}
            unreleased |= len(free) < len(wanted - current)
            add[topic] = free
        revoke = {t: ps for t, ps in revoke.items() if ps}
        add = {t: ps for t, ps in add.items() if ps}
        if revoke and self._owns_any(owned, revoke):
            group.set_ownership(member, keep, revoke)
            member.state = UNREVOKED
            self._set_epoch(member, epoch)
            self._schedule_rebalance_timeout(group, member)
            return
        for t, ps in add.items():
            keep.setdefault(t, set()).update(ps)
        group.set_ownership(member, keep, {})
        member.state = UNRELEASED if unreleased else STABLE
        self._set_epoch(member, group.assignment_epoch)
        self._cancel_rebalance_timeout(member)

    @staticmethod
    def _set_epoch(member: ConsumerGroupMember, epoch: int) -> None:
        if epoch != member.member_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = epoch

    def _remove_member(self, group: ConsumerGroup, member: ConsumerGroupMember, why: str) -> None:
        self._cancel_timers(member)
        group.set_ownership(member, {}, {})
        del group.members[member.member_id]
        group.target.pop(member.member_id, None)
        if member.saved_meta is not None or member.member_id in group.saved_target:
            group.gone.add(member.member_id)  # its records are in the log: tombstone them
        if member.instance_id is not None and group.static_members.get(member.instance_id) == \
                member.member_id:
            del group.static_members[member.instance_id]
        group.group_epoch += 1
        self._refresh_topics(group)
        log.info("consumer group %s: member %s %s (group epoch %d)", group.group_id,
                 member.member_id, why, group.group_epoch)

    # -- timers --------------------------------------------------------------------------

    def _schedule_session(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        if member.session_timer is not None:
            member.session_timer.cancel()
        token = member.session_token = object()
        member.session_timer = self.clock.call_later(
            self.config.consumer_group_session_timeout_ms,
            lambda: self._expire(group, member, token, "session", "its session timed out"))

    def _schedule_rebalance_timeout(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        if member.rebalance_timer is not None:
            return  # already counting for this revocation
        token = member.rebalance_token = object()
        member.rebalance_timer = self.clock.call_later(
            member.rebalance_timeout_ms,
            lambda: self._expire(group, member, token, "rebalance",
                                 "did not revoke its partitions within the rebalance timeout"))

    def _cancel_rebalance_timeout(self, member: ConsumerGroupMember) -> None:
        if member.rebalance_timer is not None:
            member.rebalance_timer.cancel()
        member.rebalance_timer = member.rebalance_token = None

    def _cancel_timers(self, member: ConsumerGroupMember) -> None:
        if member.session_timer is not None:
            member.session_timer.cancel()
        member.session_timer = member.session_token = None
        self._cancel_rebalance_timeout(member)

    def _expire(self, group: ConsumerGroup, member: ConsumerGroupMember, token: object,
                kind: str, why: str) -> None:
        current = member.session_token if kind == "session" else member.rebalance_token
        if (current is not token or self.groups.get(group.group_id) is not group
                or group.members.get(member.member_id) is not member):
            return
        self._remove_member(group, member, f"fenced: {why}")
        self.maybe_remove_group(group.group_id)
        if self.groups.get(group.group_id) is group:
            self._save(group)

    # -- describe ------------------------------------------------------------------------

    def describe(self, group_id: str) -> ConsumerGroupDescription:
        group = self.groups.get(group_id)
        if group is None:
            return ConsumerGroupDescription(group_id, Errors.GroupIdNotFoundError.errno,
                                            f"Group {group_id} not found.", "Dead", -1, -1, "", [])

        def parts(partitions: Partitions):
            return [(group.topics.get(t, (None, 0))[0], t, sorted(ps))
                    for t, ps in sorted(partitions.items()) if ps]

        members = [ConsumerMemberDescription(
            m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
            list(m.subscribed_names), parts(m.assigned),
            parts(group.target.get(m.member_id, {})), m.subscribed_regex)
            for m in group.members.values()]
        return ConsumerGroupDescription(
            group_id, NONE, None, group.state, group.group_epoch, group.assignment_epoch,
            group.preferred_assignor(self.config.consumer_group_assignors[0]), members)
