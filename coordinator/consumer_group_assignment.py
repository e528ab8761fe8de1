"""KIP-848 assignment: a group's target assignment (Kafka's TargetAssignmentBuilder) and
one member's step towards its target (Kafka's CurrentAssignmentBuilder).

Plain functions over :class:`~coordinator.consumer_group.ConsumerGroup` values; the
timers they call for are the caller's (:func:`reconcile` says which). A member first
gives up what it must lose (it stays in its epoch, ``unrevoked_partitions``, until a
heartbeat no longer lists those partitions), then takes the new epoch and whatever
partitions are free; those another member still holds wait (``unreleased_partitions``).
"""
from __future__ import annotations

import logging
import uuid
from typing import Callable

from kafka_wire.coordinator.assignors import ASSIGNORS
from kafka_wire.coordinator.consumer_group import (
    STABLE, UNRELEASED, UNREVOKED, ConsumerGroup, ConsumerGroupMember, Partitions,
)

__all__ = ["REVOKING", "SETTLED", "TopicMetadata", "refresh_topics", "compute_target",
           "reconcile", "set_epoch"]

log = logging.getLogger(__name__)

TopicMetadata = Callable[[str], "tuple[uuid.UUID, int] | None"]
# reconcile's outcomes: the member must now revoke partitions (its rebalance timeout
# runs), or it reached its target (its rebalance timeout stops).
REVOKING, SETTLED = "revoking", "settled"


def refresh_topics(group: ConsumerGroup, topic_metadata: TopicMetadata) -> bool:
    """Re-read metadata of subscribed topics; True if anything changed."""
    topics = {}
    for topic in sorted(group.subscribed_topics()):
        meta = topic_metadata(topic)
        if meta is not None:
            topics[topic] = (meta[0], meta[1])
    changed = topics != group.topics
    group.topics = topics
    return changed


def compute_target(group: ConsumerGroup, default_assignor: str) -> None:
    name = group.preferred_assignor(default_assignor)
    subscriptions = {m.member_id: set(m.subscribed) for m in group.members.values()}
    sizes = {t: n for t, (_id, n) in group.topics.items()}
    group.target = ASSIGNORS[name].assign(subscriptions, sizes, group.target)
    group.assignment_epoch = group.group_epoch
    log.info("consumer group %s: target assignment for epoch %d computed by %s",
             group.group_id, group.assignment_epoch, name)


def reconcile(group: ConsumerGroup, member: ConsumerGroupMember,
              owned: Partitions | None) -> str | None:
    """Move ``member`` one step towards its target given what it says it ``owned``:
    REVOKING, SETTLED, or None (no step taken)."""
    if member.state == UNREVOKED:
        if _owns_any(owned, member.revoking):
            return None  # still waiting for the member to give them up
        return _next_assignment(group, member, member.member_epoch + 1, owned)
    if member.state == UNRELEASED or member.member_epoch != group.assignment_epoch:
        return _next_assignment(group, member, member.member_epoch, owned)
    return None


def _owns_any(owned: Partitions | None, partitions: Partitions) -> bool:
    if owned is None:
        return True  # not told otherwise: assume it still holds them
    return any(owned.get(t, set()) & ps for t, ps in partitions.items())


def _next_assignment(group: ConsumerGroup, member: ConsumerGroupMember, epoch: int,
                     owned: Partitions | None) -> str:
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
    if revoke and _owns_any(owned, revoke):
        group.set_ownership(member, keep, revoke)
        member.state = UNREVOKED
        set_epoch(member, epoch)
        return REVOKING
    for t, ps in add.items():
        keep.setdefault(t, set()).update(ps)
    group.set_ownership(member, keep, {})
    member.state = UNRELEASED if unreleased else STABLE
    set_epoch(member, group.assignment_epoch)
    return SETTLED


def set_epoch(member: ConsumerGroupMember, epoch: int) -> None:
    if epoch != member.member_epoch:
        member.previous_member_epoch = member.member_epoch
        member.member_epoch = epoch
