"""A read-only snapshot of a coordinator's groups, for views outside it (the
console, `kafka-wire groups`): members with their subscriptions and assigned
partitions (decoded from the consumer protocol for classic groups, from member
state for KIP-848 groups), and each group's committed offsets. Nothing here
can change the coordinator."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_wire.coordinator import consumer_protocol
from kafka_wire.coordinator.classic_group import ClassicGroup

if TYPE_CHECKING:
    from kafka_wire.coordinator.group_coordinator import GroupCoordinator

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class MemberSnapshot:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    topics: frozenset[str]                     # subscribed
    assigned: dict[str, tuple[int, ...]]       # topic -> partitions owned now


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    group_id: str
    state: str
    group_type: str                            # "classic" or "consumer" (KIP-848)
    members: tuple[MemberSnapshot, ...]
    committed: dict[tuple[str, int], object]   # (topic, partition) -> OffsetAndMetadata


def _classic_members(group: ClassicGroup) -> tuple[MemberSnapshot, ...]:
    if group.protocol_type != consumer_protocol.PROTOCOL_TYPE:
        return ()
    out = []
    for m in group.members.values():
        protocol = group.protocol_name or (m.protocols[0][0] if m.protocols else None)
        try:
            topics = consumer_protocol.decode_subscription(m.metadata(protocol)).topics
            current = m.assignment_generation == group.generation_id
            assigned = consumer_protocol.decode_assignment(m.assignment) if current else []
        except (consumer_protocol.ConsumerProtocolError, KeyError) as exc:
            log.debug("group %s member %s: unreadable consumer protocol data: %s",
                      group.group_id, m.member_id, exc)
            continue
        owned: dict[str, set[int]] = {}
        for topic, partitions in assigned:
            owned.setdefault(topic, set()).update(partitions)
        out.append(MemberSnapshot(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                  frozenset(topics),
                                  {t: tuple(sorted(ps)) for t, ps in owned.items()}))
    return tuple(out)


def snapshot(coordinator: GroupCoordinator) -> dict[str, GroupSnapshot]:
    """Every group the coordinator knows, live or with committed offsets only."""
    out: dict[str, GroupSnapshot] = {}
    for group in coordinator.classic.groups.values():
        out[group.group_id] = GroupSnapshot(group.group_id, str(group.state), "classic",
                                            _classic_members(group),
                                            dict(coordinator.offsets.get(group.group_id)))
    for group in coordinator.consumer.groups.values():
        members = tuple(MemberSnapshot(m.member_id, m.instance_id, m.client_id, m.client_host,
                                       frozenset(m.subscribed),
                                       {t: tuple(sorted(ps)) for t, ps in m.assigned.items()})
                        for m in group.members.values())
        out[group.group_id] = GroupSnapshot(group.group_id, group.state, "consumer", members,
                                            dict(coordinator.offsets.get(group.group_id)))
    return out


def committed(coordinator: GroupCoordinator, group_id: str) -> dict:
    """(topic, partition) -> OffsetAndMetadata of one group (an Event Hubs group
    no Kafka client used has none)."""
    return dict(coordinator.offsets.get(group_id))
