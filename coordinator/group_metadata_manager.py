"""The classic group protocol: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
and the group checks of OffsetCommit, as Kafka's GroupCoordinator runs them
(rebalancing and its timers are in :mod:`coordinator.classic_rebalance`).

Sans-IO: requests arrive as Python values; JoinGroup and SyncGroup answer
through a ``respond`` callback that may run later (when the rebalance
completes, or the leader sends its assignment); time comes from the injected
clock.

``respond`` callbacks run synchronously inside coordinator calls and timer
callbacks: they must only record the result (set a future), never call back
into the coordinator.

Small departures from Kafka, all invisible to a well-behaved client:
- a JoinGroup or SyncGroup superseded by a second one for the same member is
  answered with REBALANCE_IN_PROGRESS instead of never;
- a member removed while its SyncGroup waits gets UNKNOWN_MEMBER_ID;
- an Empty group with no members and no offsets is dropped (Dead) at once,
  not at the next offset-cleanup pass.
"""
from __future__ import annotations

import logging
from typing import Callable, Iterable

import kafka.errors as Errors

from kafka_wire.coordinator.classic_group import ClassicGroup, ClassicGroupMember, ClassicGroupState as S
from kafka_wire.coordinator.classic_rebalance import ClassicRebalance
from kafka_wire.coordinator.results import (
    GroupDescription, JoinResult, LeaveMember, LeaveResult, MemberDescription, SyncResult,
)

__all__ = ["GroupMetadataManager"]

log = logging.getLogger(__name__)

NONE = Errors.NoError.errno
JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]


class GroupMetadataManager(ClassicRebalance):
    """Owns every classic group and answers its members' requests."""

    # -- groups --------------------------------------------------------------------------

    def delete_group(self, group_id: str) -> int:
        """DeleteGroups for one classic group (its offsets are the caller's)."""
        group = self.groups.get(group_id)
        if group is None:
            return Errors.GroupIdNotFoundError.errno
        if not group.is_(S.EMPTY):
            return Errors.NonEmptyGroupError.errno
        self._mark_dead(group)
        log.info("group %s deleted", group_id)
        return NONE

    def shutdown(self) -> None:
        """Answer every waiting request with NOT_COORDINATOR and stop all timers."""
        self.active = False
        not_coordinator = Errors.NotCoordinatorError.errno
        for group in list(self.groups.values()):
            for member in group.members.values():
                group.invoke_join_callback(member, JoinResult.error(not_coordinator, member.member_id))
                group.invoke_sync_callback(member, SyncResult.error(not_coordinator))
                self._cancel_heartbeat(member)
            self._cancel_join_timer(group)
            self._cancel_sync_timer(group)
            for _token, handle in group.pending_member_timers.values():
                handle.cancel()

    # -- JoinGroup -----------------------------------------------------------------------

    def join_group(self, group_id: str, member_id: str, group_instance_id: str | None,
                   protocol_type: str, protocols: list[tuple[str, bytes]],
                   session_timeout_ms: int, rebalance_timeout_ms: int, client_id: str,
                   client_host: str, version: int, respond: JoinCallback,
                   reason: str | None = None) -> None:
        protocols = [(name, bytes(meta)) for name, meta in protocols]
        if not self.active:
            return respond(JoinResult.error(Errors.CoordinatorNotAvailableError.errno, member_id))
        if not group_id:
            return respond(JoinResult.error(Errors.InvalidGroupIdError.errno, member_id))
        if not (self.config.group_min_session_timeout_ms <= session_timeout_ms
                <= self.config.group_max_session_timeout_ms):
            return respond(JoinResult.error(Errors.InvalidSessionTimeoutError.errno, member_id))
        is_unknown = member_id == ""
        group = self.groups.get(group_id)
        if group is None:
            # Only a member without an id may create a group (Kafka).
            if not is_unknown:
                return respond(JoinResult.error(Errors.UnknownMemberIdError.errno, member_id))
            group = self.get_or_create_group(group_id)
        args = (group_instance_id, protocol_type, protocols, session_timeout_ms,
                rebalance_timeout_ms, client_id, client_host)
        if not self._accept_joining_member(group, member_id, group_instance_id):
            if group.has(member_id):
                self._remove_member_and_update_group(group, group.get(member_id), "group is full")
            respond(JoinResult.error(Errors.GroupMaxSizeReachedError.errno))
        elif is_unknown:
            self._new_member_join(group, *args, version, respond, reason)
        else:
            self._current_member_join(group, member_id, *args, respond, reason)
        if group.is_(S.PREPARING_REBALANCE):
            self._try_complete_join(group)
        self.maybe_remove_group(group)

    def _accept_joining_member(self, group: ClassicGroup, member_id: str,
                               instance_id: str | None) -> bool:
        limit = self.config.group_max_size
        if limit is None:
            return True
        if (not member_id and (instance_id is None or group.static_member_id(instance_id) is None)
                and group.size() + len(group.pending_members) >= limit):
            # A member new to the group. Pending members (KIP-394) count too, unlike in Kafka:
            # else JoinGroups with empty ids pile up one each until their session timeouts,
            # in any state (an Empty group accepts everyone below). A static member's
            # new incarnation replaces its old one, so it adds nobody.
            return False
        if group.state in (S.EMPTY, S.DEAD):
            return True
        if group.is_(S.PREPARING_REBALANCE):
            # Counting awaiting members: static members may not have rejoined yet.
            return ((group.has(member_id) and group.get(member_id).is_awaiting_join)
                    or group.awaiting_join_count() < limit)
        return group.has(member_id) or group.size() < limit

    def _new_member_join(self, group, instance_id, protocol_type, protocols, session_timeout_ms,
                         rebalance_timeout_ms, client_id, client_host, version, respond, reason):
        if not group.supports_protocols(protocol_type, {name for name, _ in protocols}):
            return respond(JoinResult.error(Errors.InconsistentGroupProtocolError.errno))
        new_id = ClassicGroup.generate_member_id(client_id, instance_id)
        if instance_id is not None:
            old_id = group.static_member_id(instance_id)
            if old_id is None:
                log.info("group %s: static member %s joins as %s", group.group_id, instance_id, new_id)
                self._add_member_and_rebalance(group, new_id, instance_id, protocol_type, protocols,
                                               session_timeout_ms, rebalance_timeout_ms, client_id,
                                               client_host, respond, reason)
            else:
                self._update_static_member_and_rebalance(
                    group, old_id, new_id, instance_id, protocols, session_timeout_ms,
                    rebalance_timeout_ms, respond, supports_skip_assignment=version >= 9)
        elif version >= 4:
            # KIP-394: hand out the id first, so that a client that times out
            # and retries does not leave a defunct member behind.
            group.pending_members.add(new_id)
            self._schedule_pending_member_expiration(group, new_id, session_timeout_ms)
            respond(JoinResult.error(Errors.MemberIdRequiredError.errno, new_id))
        else:
            self._add_member_and_rebalance(group, new_id, None, protocol_type, protocols,
                                           session_timeout_ms, rebalance_timeout_ms, client_id,
                                           client_host, respond, reason)

    def _current_member_join(self, group, member_id, instance_id, protocol_type, protocols,
                             session_timeout_ms, rebalance_timeout_ms, client_id, client_host,
                             respond, reason):
        if not group.supports_protocols(protocol_type, {name for name, _ in protocols}):
            return respond(JoinResult.error(Errors.InconsistentGroupProtocolError.errno, member_id))
        if member_id in group.pending_members:
            if instance_id is not None:  # pending ids are only ever given to dynamic members
                return respond(JoinResult.error(Errors.UnknownMemberIdError.errno, member_id))
            return self._add_member_and_rebalance(
                group, member_id, None, protocol_type, protocols, session_timeout_ms,
                rebalance_timeout_ms, client_id, client_host, respond, reason)
        if group.is_static_member_fenced(instance_id, member_id):
            log.info("group %s: member %s with instance id %s is fenced by %s", group.group_id,
                     member_id, instance_id, group.static_member_id(instance_id))
            return respond(JoinResult.error(Errors.FencedInstanceIdError.errno, member_id))
        if not group.has(member_id) or (instance_id is not None
                                        and group.static_member_id(instance_id) is None):
            return respond(JoinResult.error(Errors.UnknownMemberIdError.errno, member_id))
        member = group.get(member_id)
        why = f"member {member_id} rejoins during {group.state}" + (f" ({reason})" if reason else "")
        if group.is_(S.PREPARING_REBALANCE):
            self._update_member_and_rebalance(group, member, protocols, session_timeout_ms,
                                              rebalance_timeout_ms, respond, why)
        elif group.is_(S.COMPLETING_REBALANCE):
            if member.matches(protocols):
                # It lost the JoinGroup response: repeat this generation's answer.
                respond(self._join_result(group, member.member_id,
                                          with_members=group.is_leader(member_id)))
            else:
                self._update_member_and_rebalance(group, member, protocols, session_timeout_ms,
                                                  rebalance_timeout_ms, respond, why)
        elif group.is_(S.STABLE):
            # A rejoining leader forces a rebalance: it may have seen a metadata
            # change (new partitions) that no member's subscription shows.
            if group.is_leader(member_id) or not member.matches(protocols):
                self._update_member_and_rebalance(group, member, protocols, session_timeout_ms,
                                                  rebalance_timeout_ms, respond, why)
            else:
                respond(self._join_result(group, member_id, with_members=False))
        else:
            log.warning("group %s: member %s joins while the group is %s", group.group_id,
                        member_id, group.state)
            respond(JoinResult.error(Errors.UnknownMemberIdError.errno, member_id))

    def _add_member_and_rebalance(self, group, member_id, instance_id, protocol_type, protocols,
                                  session_timeout_ms, rebalance_timeout_ms, client_id,
                                  client_host, respond, reason):
        member = ClassicGroupMember(member_id, instance_id, client_id, client_host,
                                    rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                    protocols)
        member.is_new = True
        if group.is_(S.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True  # extends the initial rebalance delay
        self._cancel_pending_member_timer(group, member_id)
        group.add(member, respond)
        # A new member cannot heartbeat before its JoinGroup returns; bound how
        # long it may wait so that abandoned joins do not pile up.
        self._schedule_heartbeat(group, member, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance(
            group, f"adding new member {member_id}" + (f" ({reason})" if reason else ""))

    def _update_member_and_rebalance(self, group, member, protocols, session_timeout_ms,
                                     rebalance_timeout_ms, respond, reason):
        if member.is_awaiting_join:
            group.invoke_join_callback(member, JoinResult.error(
                Errors.RebalanceInProgressError.errno, member.member_id))
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, respond)
        self._maybe_prepare_rebalance(group, reason)

    def _update_static_member_and_rebalance(self, group, old_id, new_id, instance_id, protocols,
                                            session_timeout_ms, rebalance_timeout_ms, respond, *,
                                            supports_skip_assignment):
        current_leader = group.leader_id
        member = group.replace_static_member(instance_id, old_id, new_id)
        log.info("group %s: static member %s rejoins as %s, replacing %s (now fenced)",
                 group.group_id, instance_id, new_id, old_id)
        # The old id's session timer would expire harmlessly; restart it for the new id.
        self._schedule_heartbeat(group, member)
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, respond)
        if group.is_(S.STABLE):
            if group.protocol_name == group.select_protocol():
                # Nothing the assignment depends on changed: hand the slot over
                # without a rebalance; SyncGroup returns the old assignment.
                if supports_skip_assignment:
                    is_leader = group.is_leader(new_id)
                    result = self._join_result(group, new_id, with_members=is_leader,
                                               skip_assignment=is_leader)
                else:
                    # Report the old leader id so that a rejoining leader does
                    # not compute an assignment a Stable group would not send.
                    result = self._join_result(group, new_id, with_members=False,
                                               leader=current_leader or "")
                group.invoke_join_callback(member, result)
            else:
                self._maybe_prepare_rebalance(
                    group, f"static member {instance_id} rejoined with other protocols")
        elif group.is_(S.COMPLETING_REBALANCE):
            # The leader may be assigning to the old member id: start over.
            self._prepare_rebalance(group, f"static member {instance_id} rejoined as {new_id}")
        # PreparingRebalance: the member simply waits with the others.

    # -- SyncGroup -----------------------------------------------------------------------

    def sync_group(self, group_id: str, generation_id: int, member_id: str,
                   group_instance_id: str | None, protocol_type: str | None,
                   protocol_name: str | None, assignments: Iterable[tuple[str, bytes]],
                   respond: SyncCallback) -> None:
        if not self.active:
            return respond(SyncResult.error(Errors.CoordinatorNotAvailableError.errno))
        if not group_id:
            return respond(SyncResult.error(Errors.InvalidGroupIdError.errno))
        group = self.groups.get(group_id)
        if group is None:
            return respond(SyncResult.error(Errors.UnknownMemberIdError.errno))
        error = self._validate_current_member(group, member_id, group_instance_id)
        if error is None and generation_id != group.generation_id:
            error = Errors.IllegalGenerationError.errno
        if error is None and ((protocol_type is not None and protocol_type != group.protocol_type)
                              or (protocol_name is not None
                                  and protocol_name != group.protocol_name)):
            error = Errors.InconsistentGroupProtocolError.errno
        if error is not None:
            return respond(SyncResult.error(error))
        if group.is_(S.EMPTY):
            return respond(SyncResult.error(Errors.UnknownMemberIdError.errno))
        if group.is_(S.PREPARING_REBALANCE):
            return respond(SyncResult.error(Errors.RebalanceInProgressError.errno))
        member = group.get(member_id)
        if group.is_(S.STABLE):
            self._sync_received(group, member_id)
            respond(SyncResult(NONE, group.protocol_type, group.protocol_name, member.assignment))
            self._schedule_heartbeat(group, member)
            return
        # CompletingRebalance: followers wait for the leader's assignment.
        group.invoke_sync_callback(member, SyncResult.error(Errors.RebalanceInProgressError.errno))
        member.sync_callback = respond
        self._sync_received(group, member_id)
        if group.is_leader(member_id):
            assignment = {mid: bytes(data) for mid, data in assignments}
            missing = [mid for mid in group.members if mid not in assignment]
            if missing:
                log.warning("group %s: leader %s sent no assignment for %s; they get none",
                            group.group_id, member_id, missing)
            log.info("group %s: assignment received from leader %s for generation %d",
                     group.group_id, member_id, group.generation_id)
            for m in group.members.values():
                m.assignment = assignment.get(m.member_id, b"")
                m.assignment_generation = group.generation_id
            self._propagate_assignment(group, NONE)
            group.transition_to(S.STABLE, self.clock.now_ms())

    # -- Heartbeat, LeaveGroup -----------------------------------------------------------

    def heartbeat(self, group_id: str, generation_id: int, member_id: str,
                  group_instance_id: str | None) -> int:
        if not self.active:
            return Errors.CoordinatorNotAvailableError.errno
        if not group_id:
            return Errors.InvalidGroupIdError.errno
        group = self.groups.get(group_id)
        if group is None:
            return Errors.UnknownMemberIdError.errno
        error = self._validate_current_member(group, member_id, group_instance_id)
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return Errors.IllegalGenerationError.errno
        if group.is_(S.EMPTY):
            return Errors.UnknownMemberIdError.errno
        self._schedule_heartbeat(group, group.get(member_id))
        if group.is_(S.PREPARING_REBALANCE):
            return Errors.RebalanceInProgressError.errno
        return NONE

    def leave_group(self, group_id: str,
                    members: Iterable[tuple[str, str | None]]) -> LeaveResult:
        members = list(members)
        if not self.active:
            return LeaveResult(Errors.CoordinatorNotAvailableError.errno, [])
        if not group_id:
            return LeaveResult(Errors.InvalidGroupIdError.errno, [])
        group = self.groups.get(group_id)
        unknown = Errors.UnknownMemberIdError.errno
        if group is None:
            return LeaveResult(NONE, [LeaveMember(m, i, unknown) for m, i in members])
        out = []
        for member_id, instance_id in members:
            if member_id == "":
                # Administrative removal of a static member by instance id (KIP-345).
                current = group.static_member_id(instance_id)
                if current is None:
                    out.append(LeaveMember(member_id, instance_id, unknown))
                    continue
                self._remove_member_and_update_group(group, group.get(current),
                                                     f"static member {instance_id} removed")
                out.append(LeaveMember(member_id, instance_id, NONE))
            elif member_id in group.pending_members:
                self._remove_pending_member(group, member_id)
                out.append(LeaveMember(member_id, instance_id, NONE))
            else:
                error = self._validate_current_member(group, member_id, instance_id)
                if error is None:
                    self._remove_member_and_update_group(group, group.get(member_id),
                                                         f"member {member_id} left")
                out.append(LeaveMember(member_id, instance_id, NONE if error is None else error))
        if group.is_(S.PREPARING_REBALANCE):
            self._try_complete_join(group)
        self.maybe_remove_group(group)
        return LeaveResult(NONE, out)

    def _validate_current_member(self, group: ClassicGroup, member_id: str,
                                 instance_id: str | None) -> int | None:
        if instance_id is not None:
            current = group.static_member_id(instance_id)
            if current is None:
                return Errors.UnknownMemberIdError.errno
            if current != member_id:
                log.info("group %s: request from %s fenced: instance id %s belongs to %s",
                         group.group_id, member_id, instance_id, current)
                return Errors.FencedInstanceIdError.errno
            return None
        return None if group.has(member_id) else Errors.UnknownMemberIdError.errno

    # -- offset commit checks ------------------------------------------------------------

    def validate_offset_commit(self, group: ClassicGroup, generation_id: int, member_id: str,
                               instance_id: str | None) -> int | None:
        """Kafka's checks for OffsetCommit against a classic group; None = accept."""
        if generation_id >= 0 or member_id or instance_id is not None:
            error = self._validate_current_member(group, member_id, instance_id)
            if error is None and generation_id != group.generation_id:
                error = Errors.IllegalGenerationError.errno
            if error is not None:
                return error
        elif not group.is_(S.EMPTY):
            # Only members may commit for a group that has members.
            return Errors.UnknownMemberIdError.errno
        if group.is_(S.COMPLETING_REBALANCE):
            # It holds this generation but not yet its assignment.
            return Errors.RebalanceInProgressError.errno
        if group.state in (S.STABLE, S.PREPARING_REBALANCE):
            # A commit counts as a sign of life (Kafka).
            self._schedule_heartbeat(group, group.get(member_id))
        return None

    def validate_txn_offset_commit(self, group: ClassicGroup, generation_id: int, member_id: str,
                                   instance_id: str | None) -> int | None:
        """Kafka's ClassicGroup.validateOffsetCommit for a TxnOffsetCommit; None = accept.
        No generation and an Empty group: a producer outside group management. Else a
        member id, instance id or generation given is checked, as for OffsetCommit; with
        none given the commit is taken whatever the state (only OffsetCommit wants Empty)."""
        if generation_id < 0 and group.is_(S.EMPTY):
            return None
        if generation_id >= 0 or member_id or instance_id is not None:
            error = self._validate_current_member(group, member_id, instance_id)
            if error is None and generation_id != group.generation_id:
                error = Errors.IllegalGenerationError.errno
            return error
        return None

    # -- describe ------------------------------------------------------------------------

    def describe_group(self, group_id: str) -> GroupDescription:
        group = self.groups.get(group_id)
        if group is None:
            return GroupDescription(group_id, Errors.GroupIdNotFoundError.errno, "Dead", "", "", [])
        stable = group.is_(S.STABLE)
        members = [MemberDescription(
            m.member_id, m.group_instance_id, m.client_id, m.client_host,
            m.metadata(group.protocol_name) if stable else b"",
            m.assignment if stable else b"") for m in group.members.values()]
        return GroupDescription(group_id, NONE, str(group.state), group.protocol_type or "",
                                (group.protocol_name or "") if stable else "", members)
