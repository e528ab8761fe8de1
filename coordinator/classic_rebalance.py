"""Rebalancing in the classic group protocol: how a group moves through
PreparingRebalance and CompletingRebalance to Stable, and the timers that
bound each step, as Kafka's GroupCoordinator runs them.

Kafka's purgatories become clock timers guarded by tokens: a timer that
fires after its operation was superseded (the group moved on, the member
heartbeated again) finds a different token and does nothing.

- the delayed join: the initial delay of a starting group (extended while
  new members arrive, up to the rebalance timeout), else the rebalance
  timeout, cut short once every known member has rejoined;
- the pending sync: members of a new generation that do not send SyncGroup
  within the rebalance timeout are removed and the group rebalances again;
- sessions: a member that neither heartbeats nor waits in a rebalance for
  its session timeout is removed (so is a new member whose first JoinGroup
  waits too long); a member told MEMBER_ID_REQUIRED must rejoin within its
  session timeout.

The request handlers (JoinGroup, SyncGroup, ...) are in
:mod:`coordinator.group_metadata_manager`, which builds on this class.
"""
from __future__ import annotations

import logging
from typing import Callable

import kafka.errors as Errors

from kafka_wire.coordinator.classic_group import ClassicGroup, ClassicGroupMember, ClassicGroupState as S
from kafka_wire.coordinator.clock import Clock
from kafka_wire.coordinator.config import GroupCoordinatorConfig
from kafka_wire.coordinator.results import JoinResult, SyncResult

__all__ = ["ClassicRebalance"]

log = logging.getLogger(__name__)

NONE = Errors.NoError.errno


class ClassicRebalance:
    """Every classic group, and the rebalance state machine that moves them."""

    def __init__(self, config: GroupCoordinatorConfig, clock: Clock, *,
                 has_offsets: Callable[[str], bool] = lambda group_id: False) -> None:
        self.config = config
        self.clock = clock
        self.groups: dict[str, ClassicGroup] = {}
        self._has_offsets = has_offsets
        self.active = True

    # -- groups ----------------------------------------------------------------------------

    def get_group(self, group_id: str) -> ClassicGroup | None:
        return self.groups.get(group_id)

    def get_or_create_group(self, group_id: str) -> ClassicGroup:
        group = self.groups.get(group_id)
        if group is None:
            group = self.groups[group_id] = ClassicGroup(group_id, self.clock.now_ms())
            log.debug("created group %s", group_id)
        return group

    def maybe_remove_group(self, group: ClassicGroup) -> bool:
        """Drop an Empty group that has nothing left: no members, no offsets."""
        if (group.is_(S.EMPTY) and not group.members and not group.pending_members
                and not self._has_offsets(group.group_id)
                and self.groups.get(group.group_id) is group):
            self._mark_dead(group)
            log.info("group %s is empty and has no committed offsets: removed", group.group_id)
            return True
        return False

    def _mark_dead(self, group: ClassicGroup) -> None:
        group.transition_to(S.DEAD, self.clock.now_ms())
        self._cancel_join_timer(group)
        self._cancel_sync_timer(group)
        for _token, handle in group.pending_member_timers.values():
            handle.cancel()
        group.pending_member_timers.clear()
        group.pending_members.clear()
        del self.groups[group.group_id]

    # -- rebalance -------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.is_(S.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, Errors.RebalanceInProgressError.errno)
        self._cancel_sync_timer(group)
        was_empty = group.is_(S.EMPTY)
        rebalance_timeout = group.rebalance_timeout_ms()
        group.transition_to(S.PREPARING_REBALANCE, self.clock.now_ms())
        log.info("group %s: preparing to rebalance (generation %d): %s",
                 group.group_id, group.generation_id, reason)
        if was_empty:
            # Give other members of a starting group a moment to join the same generation.
            delay = self.config.group_initial_rebalance_delay_ms
            if delay == 0:
                # No delay: complete now rather than on a zero timer, so that a
                # broker on a VirtualClock answers a first JoinGroup unprompted.
                self._on_complete_join(group)
                return
            self._schedule_join(group, delay, initial=(delay, max(rebalance_timeout - delay, 0)))
        else:
            self._schedule_join(group, rebalance_timeout)
            self._try_complete_join(group)

    def _schedule_join(self, group: ClassicGroup, delay_ms: int,
                       initial: tuple[int, int] | None = None) -> None:
        self._cancel_join_timer(group)
        token = group.join_token = object()
        group.join_is_initial = initial is not None
        group.join_timer = self.clock.call_later(
            delay_ms, lambda: self._on_join_timer(group, token, initial))

    def _on_join_timer(self, group: ClassicGroup, token: object,
                       initial: tuple[int, int] | None) -> None:
        if group.join_token is not token or self.groups.get(group.group_id) is not group:
            return
        group.join_timer = group.join_token = None
        if initial is not None:
            delay, remaining = initial
            if group.new_member_added and remaining != 0:
                group.new_member_added = False
                next_delay = min(self.config.group_initial_rebalance_delay_ms, remaining)
                self._schedule_join(group, next_delay,
                                    initial=(next_delay, max(remaining - delay, 0)))
                return
        else:
            log.info("group %s: rebalance timeout expired", group.group_id)
        self._on_complete_join(group)

    def _try_complete_join(self, group: ClassicGroup) -> None:
        if (group.is_(S.PREPARING_REBALANCE) and group.join_token is not None
                and not group.join_is_initial and group.has_all_members_joined()):
            self._on_complete_join(group)

    def _on_complete_join(self, group: ClassicGroup) -> None:
        self._cancel_join_timer(group)
        for member in group.not_yet_rejoined():
            # Static members keep their slot until their session times out.
            if not member.is_static:
                log.info("group %s: removing member %s, which did not rejoin in time",
                         group.group_id, member.member_id)
                self._cancel_heartbeat(member)
                group.remove(member.member_id)
        if not group.maybe_elect_new_joined_leader() and group.members:
            log.error("group %s could not complete rebalance because no members rejoined; "
                      "waiting for their sessions to expire", group.group_id)
            self._schedule_join(group, group.rebalance_timeout_ms())
            return
        group.init_next_generation(self.clock.now_ms())
        if group.is_(S.EMPTY):
            log.info("group %s with generation %d is now empty", group.group_id,
                     group.generation_id)
            self.maybe_remove_group(group)
            return
        log.info("group %s: stabilized generation %d with %d members (protocol %s, leader %s)",
                 group.group_id, group.generation_id, group.size(), group.protocol_name,
                 group.leader_id)
        for member in list(group.members.values()):
            group.invoke_join_callback(member, self._join_result(
                group, member.member_id, with_members=group.is_leader(member.member_id)))
            self._schedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self._schedule_pending_sync(group)

    def _join_result(self, group: ClassicGroup, member_id: str, *, with_members: bool,
                     leader: str | None = None, skip_assignment: bool = False) -> JoinResult:
        return JoinResult(
            NONE, group.generation_id, group.protocol_type, group.protocol_name,
            leader if leader is not None else (group.leader_id or ""), member_id,
            group.current_member_metadata() if with_members else [], skip_assignment)

    # -- assignment ------------------------------------------------------------------------

    def _schedule_pending_sync(self, group: ClassicGroup) -> None:
        self._cancel_sync_timer(group)
        token = group.sync_token = object()
        generation = group.generation_id
        group.sync_timer = self.clock.call_later(
            group.rebalance_timeout_ms(),
            lambda: self._on_pending_sync_expired(group, token, generation))

    def _on_pending_sync_expired(self, group: ClassicGroup, token: object, generation: int) -> None:
        if group.sync_token is not token or self.groups.get(group.group_id) is not group:
            return
        group.sync_timer = group.sync_token = None
        if generation != group.generation_id or not group.pending_sync_members:
            return
        if group.state not in (S.COMPLETING_REBALANCE, S.STABLE):
            return
        missing = sorted(group.pending_sync_members)
        log.info("group %s: removing members %s, which did not send SyncGroup in time",
                 group.group_id, missing)
        for member_id in missing:
            member = group.members.get(member_id)
            if member is not None:
                self._cancel_heartbeat(member)
            group.remove(member_id)
        self._prepare_rebalance(group, f"members {missing} did not sync")

    def _sync_received(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            self._cancel_sync_timer(group)

    def _propagate_assignment(self, group: ClassicGroup, error: int) -> None:
        ok = error == NONE
        for member in list(group.members.values()):
            result = SyncResult(error, group.protocol_type if ok else None,
                                group.protocol_name if ok else None, member.assignment)
            if group.invoke_sync_callback(member, result):
                # Its session may have lapsed while it waited: start a fresh one.
                self._schedule_heartbeat(group, member)

    def _reset_and_propagate_assignment_error(self, group: ClassicGroup, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
            member.assignment_generation = -1
        self._propagate_assignment(group, error)

    # -- members leaving -------------------------------------------------------------------

    def _remove_member_and_update_group(self, group: ClassicGroup, member: ClassicGroupMember,
                                        reason: str) -> None:
        # A new member may still wait on JoinGroup: tell it to start over.
        group.invoke_join_callback(member, JoinResult.error(Errors.UnknownMemberIdError.errno))
        group.invoke_sync_callback(member, SyncResult.error(Errors.UnknownMemberIdError.errno))
        self._cancel_heartbeat(member)
        group.remove(member.member_id)
        log.info("group %s: %s", group.group_id, reason)
        if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group, reason)
        elif group.is_(S.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _remove_pending_member(self, group: ClassicGroup, member_id: str) -> None:
        self._cancel_pending_member_timer(group, member_id)
        group.remove(member_id)
        if group.is_(S.PREPARING_REBALANCE):
            self._try_complete_join(group)

    # -- timers ----------------------------------------------------------------------------

    def _schedule_heartbeat(self, group: ClassicGroup, member: ClassicGroupMember,
                            timeout_ms: int | None = None) -> None:
        self._cancel_heartbeat(member)
        token = member.heartbeat_token = object()
        member.heartbeat_timer = self.clock.call_later(
            member.session_timeout_ms if timeout_ms is None else timeout_ms,
            lambda: self._on_heartbeat_expired(group, member, token))

    def _cancel_heartbeat(self, member: ClassicGroupMember) -> None:
        if member.heartbeat_timer is not None:
            member.heartbeat_timer.cancel()
        member.heartbeat_timer = member.heartbeat_token = None

    def _on_heartbeat_expired(self, group: ClassicGroup, member: ClassicGroupMember,
                              token: object) -> None:
        if member.heartbeat_token is not token:
            return
        member.heartbeat_timer = member.heartbeat_token = None
        if (self.groups.get(group.group_id) is not group
                or group.members.get(member.member_id) is not member):
            return
        # Members waiting in a rebalance count as alive, unless they are new
        # (their JoinGroup has waited too long: they will retry).
        if member.is_new or not (member.is_awaiting_join or member.is_awaiting_sync):
            self._remove_member_and_update_group(
                group, member, f"member {member.member_id} removed: session timed out")
            self.maybe_remove_group(group)

    def _schedule_pending_member_expiration(self, group: ClassicGroup, member_id: str,
                                            timeout_ms: int) -> None:
        self._cancel_pending_member_timer(group, member_id)
        token = object()
        handle = self.clock.call_later(
            timeout_ms, lambda: self._on_pending_member_expired(group, member_id, token))
        group.pending_member_timers[member_id] = (token, handle)

    def _on_pending_member_expired(self, group: ClassicGroup, member_id: str,
                                   token: object) -> None:
        entry = group.pending_member_timers.get(member_id)
        if entry is None or entry[0] is not token or self.groups.get(group.group_id) is not group:
            return
        del group.pending_member_timers[member_id]
        if member_id in group.pending_members:
            log.info("group %s: pending member %s did not rejoin in time", group.group_id, member_id)
            self._remove_pending_member(group, member_id)
            self.maybe_remove_group(group)

    @staticmethod
    def _cancel_pending_member_timer(group: ClassicGroup, member_id: str) -> None:
        entry = group.pending_member_timers.pop(member_id, None)
        if entry is not None:
            entry[1].cancel()

    @staticmethod
    def _cancel_join_timer(group: ClassicGroup) -> None:
        if group.join_timer is not None:
            group.join_timer.cancel()
        group.join_timer = group.join_token = None
        group.join_is_initial = False

    @staticmethod
    def _cancel_sync_timer(group: ClassicGroup) -> None:
        if group.sync_timer is not None:
            group.sync_timer.cancel()
        group.sync_timer = group.sync_token = None
