"""An event hub's consumer groups as Event Hubs shows them.

``$Default`` always exists (plus any groups configured for the hub); every
Kafka group that has committed offsets for the hub or whose members
subscribe to it is listed too, with its members, who owns which partition
(decoded from consumer-protocol assignments, or KIP-848 member state), the
checkpoint per partition and the lag behind the end of the log.

Read-only: it is built from the snapshot the coordinator offers
(:mod:`kafka_wire.coordinator.group_snapshot`) and changes nothing.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterable

from kafka_wire.coordinator.group_snapshot import committed as committed_offsets
from kafka_wire.coordinator.group_snapshot import snapshot
from kafka_wire.eventhubs.model import DEFAULT_CONSUMER_GROUP

if TYPE_CHECKING:
    from kafka_wire.coordinator.group_coordinator import GroupCoordinator

__all__ = ["DEFAULT_CONSUMER_GROUP", "PartitionView", "MemberView", "ConsumerGroupView",
           "consumer_groups", "checkpoint_blobs"]


@dataclass(frozen=True, slots=True)
class PartitionView:
    partition: int
    sequence_number: int | None   # checkpoint: the next event to read; None = no checkpoint
    offset: str | None            # Event Hubs offset (byte position) of that event
    last_sequence_number: int     # of the last event in the partition; -1 when empty
    lag: int | None               # events between the checkpoint and the end
    owner: str | None             # member id reading the partition now


@dataclass(frozen=True, slots=True)
class MemberView:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    partitions: list[int]


@dataclass(frozen=True, slots=True)
class ConsumerGroupView:
    name: str
    kafka_group: bool   # False for Event Hubs groups no Kafka client has used
    state: str          # the Kafka group state ("" when not a Kafka group)
    group_type: str     # "classic", "consumer" (KIP-848) or "" for Event Hubs-only groups
    members: list[MemberView]
    partitions: list[PartitionView]


def consumer_groups(coordinator: "GroupCoordinator", event_hub: str,
                    log_end_offset: Callable[[str, int], int], *,
                    partition_count: int | None = None,
                    configured: Iterable[str] = ()) -> list[ConsumerGroupView]:
    """The consumer groups of ``event_hub``, ``$Default`` first, then by name.

    ``log_end_offset(topic, partition)`` is the next sequence number the
    partition will assign. ``partition_count`` lists every partition; without
    it only partitions with a checkpoint or an owner are shown.
    """
    found: dict[str, tuple[str, str, list[MemberView]]] = {}
    groups = snapshot(coordinator)
    for group in groups.values():
        members = [MemberView(m.member_id, m.instance_id, m.client_id, m.client_host,
                              list(m.assigned.get(event_hub, ())))
                   for m in group.members if event_hub in m.topics]
        if members or any(t == event_hub for t, _p in group.committed):
            found[group.group_id] = (group.state, group.group_type, members)

    names = [DEFAULT_CONSUMER_GROUP, *sorted(set(configured) - {DEFAULT_CONSUMER_GROUP})]
    names += sorted(set(found) - set(names))
    out = []
    for name in names:
        state, group_type, members = found.get(name, ("", "", []))
        owners = {p: m.member_id for m in members for p in m.partitions}
        group = groups.get(name)
        committed = {p: om for (t, p), om in (group.committed if group else {}).items()
                     if t == event_hub}
        if partition_count is not None:
            partitions = range(partition_count)
        else:
            partitions = sorted(set(committed) | set(owners))
        views = []
        for p in partitions:
            end = log_end_offset(event_hub, p)
            om = committed.get(p)
            views.append(PartitionView(
                p, None if om is None else om.offset,
                None if om is None or om.position is None else str(om.position),
                end - 1, None if om is None else max(end - om.offset, 0), owners.get(p)))
        out.append(ConsumerGroupView(name, name in found, state, group_type, members, views))
    return out


def _iso(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def checkpoint_blobs(coordinator: "GroupCoordinator", namespace_host: str, event_hub: str,
                     groups: Iterable[ConsumerGroupView],
                     batch_position: Callable[[str, int, int], int | None]) -> list[dict]:
    """The Kafka groups' checkpoints and owners of ``event_hub`` as an Azure SDK
    event processor's blob checkpoint store (azure-eventhub-checkpointstoreblob) holds them:
    ``<namespace host>/<hub>/<group>/checkpoint/<partition>`` with metadata
    ``sequencenumber``/``offset`` of the last event *processed* (a Kafka commit
    names the next one to read), and ``…/ownership/<partition>`` with
    ``ownerid``; names lower-cased, each with its last-modified time.
    ``batch_position(hub, partition, offset)`` is the Event Hubs offset of an
    event, or None when retention removed it (then the blob has no offset)."""
    prefix = f"{namespace_host}/{event_hub}".lower()
    blobs = []
    for g in groups:
        if not g.kafka_group:
            continue
        group = g.name.lower()
        committed = {p: om for (t, p), om in committed_offsets(coordinator, g.name).items()
                     if t == event_hub}
        for p, om in sorted(committed.items()):
            if om.offset <= 0:
                continue  # nothing processed yet: an SDK writes no checkpoint
            metadata = {"sequencenumber": str(om.offset - 1)}
            position = batch_position(event_hub, p, om.offset - 1)
            if position is not None:
                metadata["offset"] = str(position)
            blobs.append({"name": f"{prefix}/{group}/checkpoint/{p}", "metadata": metadata,
                          "last_modified": _iso(om.commit_time_ms)})
        for pv in g.partitions:
            if pv.owner is not None:
                blobs.append({"name": f"{prefix}/{group}/ownership/{pv.partition}",
                              "metadata": {"ownerid": pv.owner}, "last_modified": None})
    return blobs
