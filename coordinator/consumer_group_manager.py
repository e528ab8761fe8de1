"""KIP-848 ConsumerGroupHeartbeat: the coordinator computes each group's
target assignment and reconciles members towards it, one heartbeat at a time.

Only the heartbeating member is reconciled, as in Kafka.

Sans-IO like the classic protocol: plain values in and out, timers on the
injected clock (session timeout per member; rebalance timeout while a member
holds partitions it must revoke).

A member may subscribe to topic names, to a regular expression matched
against the whole name of every topic (KIP-848 ``SubscribedTopicRegex``), or
both (:mod:`coordinator.consumer_group_subscriptions`). Targets and each
member's steps towards its own are :mod:`coordinator.consumer_group_assignment`'s.

Groups survive a restart as in Kafka: their changes are written to the
coordinator's record log before the heartbeat is answered
(:mod:`coordinator.consumer_group_persistence`), and :meth:`ConsumerGroupManager.load`
rebuilds the groups at start, each member's session starting again then.

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
from kafka_wire.coordinator.clock import Clock
from kafka_wire.coordinator.config import GroupCoordinatorConfig
from kafka_wire.coordinator.consumer_group import (
    LEAVE_EPOCH, STATIC_LEAVE_EPOCH, UNREVOKED, ConsumerGroup, ConsumerGroupDescription,
    ConsumerGroupMember, ConsumerMemberDescription, HeartbeatResult, Partitions,
)
from kafka_wire.coordinator.consumer_group_assignment import (
    REVOKING, SETTLED, TopicMetadata, compute_target, reconcile, refresh_topics, set_epoch,
)
from kafka_wire.coordinator.consumer_group_persistence import (
    ConsumerGroupPersistence, Persist, PersistMany,
)
from kafka_wire.coordinator.consumer_group_subscriptions import (
    INVALID_REGULAR_EXPRESSION, TopicRegexes, regex_error,
)
from kafka_wire.coordinator.results import GroupListing

__all__ = ["ConsumerGroupManager", "TopicMetadata", "INVALID_REGULAR_EXPRESSION"]

log = logging.getLogger(__name__)

NONE = Errors.NoError.errno


class ConsumerGroupManager:
    def __init__(self, config: GroupCoordinatorConfig, clock: Clock,
                 topic_metadata: TopicMetadata, *,
                 has_offsets: Callable[[str], bool] = lambda group_id: False,
                 list_topics: Callable[[], Iterable[str]] = lambda: (),
                 persist: Persist | None = None,
                 persist_many: PersistMany | None = None) -> None:
        self.config = config
        self.persistence = ConsumerGroupPersistence(persist, has_offsets, persist_many)
        self._unarmed: list[str] = []  # loaded groups whose members' timers wait for arm()
        self.clock = clock
        self.topic_metadata = topic_metadata
        self.has_offsets = has_offsets
        self.regexes = TopicRegexes(list_topics)
        self.groups: dict[str, ConsumerGroup] = {}

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
        self.persistence.removed(group, dropped)

    # -- the record log ------------------------------------------------------------------

    def load(self, groups: dict[str, dict]) -> list[str]:
        """Rebuild groups from their records (``persist``'s); their members' sessions
        start at :meth:`arm`. Returns the ids of those left out: empty, without offsets
        (their removal was not written: the caller may write it now)."""
        loaded, stale = self.persistence.load(groups)
        for group in loaded:
            self.groups[group.group_id] = group
            self._unarmed.append(group.group_id)
            log.info("consumer group %s loaded: epoch %d, %d members", group.group_id,
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
            self.remove_group(group_id, dropped=group.group_epoch > 0)

    def was_dropped(self, group_id: str) -> bool:
        """Whether ``group_id`` emptied and went since the last offset cleanup (Kafka would
        still have it, Empty)."""
        return self.persistence.was_dropped(group_id)

    def delete_dropped(self, group_id: str) -> bool:
        """DeleteGroups of a group dropped as it emptied: it goes now (Kafka deletes the
        Empty group); False if it was not one."""
        return self.persistence.delete_dropped(group_id)

    def forget_dropped(self) -> None:
        """An offset cleanup ran: Kafka would have deleted those empty groups now."""
        self.persistence.forget_dropped()

    def shutdown(self) -> None:
        for group in self.groups.values():
            for member in group.members.values():
                self._cancel_timers(member)

    def validate_offset_commit(self, group_id: str, member_id: str, member_epoch: int,
                               api_version: int | None = None) -> int | None:
        """Kafka's ConsumerGroup.validateOffsetCommit; None = accept."""
        return self.groups[group_id].validate_offset_commit(member_id, member_epoch,
                                                            api_version)

    def validate_offset_fetch(self, group_id: str, member_id: str, member_epoch: int) -> int | None:
        return self.groups[group_id].validate_offset_fetch(member_id, member_epoch)

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
                self.regexes.compile(subscribed_topic_regex)
            except re2.error as exc:
                return HeartbeatResult.error(INVALID_REGULAR_EXPRESSION,
                                             f"SubscribedTopicRegex {subscribed_topic_regex!r} "
                                             f"is not a valid regular expression: "
                                             f"{regex_error(exc)}.")

        if (self.persistence.persist is not None and (member_epoch == 0 or subscribed_topic_names is not None
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
        if joining:
            self.persistence.rejoined(group_id)
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
        subscribed = self.regexes.resolve(member, topic_visible)
        if subscribed != member.subscribed:
            member.subscribed = subscribed
            bump = True
        if server_assignor is not None and server_assignor != member.server_assignor:
            member.server_assignor = server_assignor
            bump = True
        if refresh_topics(group, self.topic_metadata) or bump:
            group.group_epoch += 1
            log.info("consumer group %s: epoch %d (member %s)", group_id, group.group_epoch,
                     member.member_id)
        if group.group_epoch > group.assignment_epoch:
            compute_target(group, self.config.consumer_group_assignors[0])
        before = {t: set(ps) for t, ps in member.assigned.items()}
        step = reconcile(group, member, owned)
        if step == REVOKING:
            self._schedule_rebalance_timeout(group, member)
        elif step == SETTLED:
            self._cancel_rebalance_timeout(member)
        self._schedule_session(group, member)
        self.persistence.save(group, member, described=described)
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
            set_epoch(member, STATIC_LEAVE_EPOCH)
            log.info("consumer group %s: static member %s left temporarily", group_id,
                     member.instance_id)
            self.persistence.save(group, member)
        else:
            self._remove_member(group, member, "left the group")
            self.maybe_remove_group(group_id)
            if self.groups.get(group_id) is group:
                self.persistence.save(group)
        return HeartbeatResult(NONE, None, member.member_id, member_epoch, 0, None)

    # -- membership ----------------------------------------------------------------------

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
        refresh_topics(group, self.topic_metadata)
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
            self.persistence.save(group)

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
