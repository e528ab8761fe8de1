"""Checkpoints and the store interface.

A checkpoint is what Event Hubs keeps per (namespace, event hub, consumer
group, partition): the **sequence number** to resume from (the committed
Kafka offset) and the Event Hubs **offset**, the byte position of that event
in the partition (a decimal string on the Event Hubs surface, an int here).
Kafka's committed leader epoch and metadata string ride along so that
OffsetFetch returns exactly what OffsetCommit stored.

Stores may also keep KIP-848 consumer groups (members, epochs, assignments:
:mod:`coordinator.consumer_group_records`), as Kafka keeps them in
``__consumer_offsets`` next to the offsets; classic group members are not kept (as
in Kafka, they rejoin after a broker restart).
"""
from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import Iterable

from kafka_wire.coordinator.consumer_group_records import GroupRecords

__all__ = ["Checkpoint", "CheckpointKey", "CheckpointStore", "MemoryCheckpointStore"]

CheckpointKey = tuple[str, str, str, int]  # namespace, event hub, consumer group, partition


@dataclass(frozen=True, slots=True)
class Checkpoint:
    namespace: str
    event_hub: str          # the Kafka topic
    consumer_group: str     # the Kafka group id
    partition: int
    sequence_number: int    # the committed Kafka offset: the next event to read
    offset: int | None      # Event Hubs byte position of that event; None if unknown
    leader_epoch: int = -1
    metadata: str | None = None
    commit_time_ms: int = 0

    def __post_init__(self) -> None:
        # Event Hubs hands offsets around as decimal strings; keep one form.
        if isinstance(self.offset, str):
            object.__setattr__(self, "offset", int(self.offset))

    @property
    def key(self) -> CheckpointKey:
        return (self.namespace, self.event_hub, self.consumer_group, self.partition)

    @property
    def offset_str(self) -> str | None:
        """The Event Hubs form of the offset (a decimal string)."""
        return None if self.offset is None else str(self.offset)

    @property
    def topic(self) -> str:
        return self.event_hub

    @property
    def group_id(self) -> str:
        return self.consumer_group


class CheckpointStore(abc.ABC):
    """Where committed offsets live. Implementations need not be thread-safe:
    the coordinator calls them from the event loop thread only."""

    @abc.abstractmethod
    def put(self, checkpoint: Checkpoint) -> None:
        """Store ``checkpoint``, replacing the one with the same key."""

    def put_many(self, checkpoints: Iterable[Checkpoint]) -> None:
        """Store several checkpoints; stores may make this one write."""
        for checkpoint in checkpoints:
            self.put(checkpoint)

    @abc.abstractmethod
    def delete(self, namespace: str, group: str, topic: str, partition: int) -> None:
        """Forget one partition's checkpoint (absent keys are fine)."""

    def delete_many(self, keys: Iterable[CheckpointKey]) -> None:
        """Forget several checkpoints ((namespace, topic, group, partition) each); stores
        may make this one write."""
        for namespace, topic, group, partition in keys:
            self.delete(namespace, group, topic, partition)

    @abc.abstractmethod
    def delete_group(self, namespace: str, group: str) -> None:
        """Forget every checkpoint of a consumer group in a namespace."""

    @abc.abstractmethod
    def load(self) -> Iterable[Checkpoint]:
        """Every live checkpoint, in no particular order."""

    @abc.abstractmethod
    def flush(self) -> None:
        """Make everything written so far durable against power loss."""

    @abc.abstractmethod
    def close(self) -> None:
        """Flush and release resources; idempotent."""

    def write_group_records(self, namespace: str, group: str, bodies: list[list]) -> None:
        """Append consumer group records (``[kind, *body]`` each, see
        :mod:`coordinator.consumer_group_records`) in one write, or raise having written
        nothing. A store that does not keep groups ignores them."""

    def write_many_group_records(self, groups: Iterable[tuple[str, str, list[list]]]) -> None:
        """:meth:`write_group_records` for several (namespace, group, bodies); stores may
        make this one write (or raise having written nothing)."""
        for namespace, group, bodies in groups:
            self.write_group_records(namespace, group, bodies)

    def group_records(self) -> dict[tuple[str, str], dict[tuple[int, str], list]]:
        """The live consumer group records, by (namespace, group id) then key."""
        return {}


class MemoryCheckpointStore(CheckpointStore):
    """Not durable: for tests and for brokers run without a data directory."""

    def __init__(self) -> None:
        self._state: dict[CheckpointKey, Checkpoint] = {}
        self._groups = GroupRecords()

    def write_group_records(self, namespace: str, group: str, bodies: list[list]) -> None:
        for body in bodies:
            self._groups.apply([body[0], namespace, group, *body[1:]])

    def group_records(self) -> dict[tuple[str, str], dict[tuple[int, str], list]]:
        return dict(self._groups.groups)

    def put(self, checkpoint: Checkpoint) -> None:
        self._state[checkpoint.key] = checkpoint

    def delete(self, namespace: str, group: str, topic: str, partition: int) -> None:
        self._state.pop((namespace, topic, group, partition), None)

    def delete_group(self, namespace: str, group: str) -> None:
        for key in [k for k in self._state if k[0] == namespace and k[2] == group]:
            del self._state[key]

    def load(self) -> list[Checkpoint]:
        return list(self._state.values())

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass
