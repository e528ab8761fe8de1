"""Consumer groups and committed offsets (as Event Hubs checkpoints).

Sans-IO: plain Python values in, plain results out, time from an injected
:class:`~coordinator.clock.Clock`. Never imports ``kafka_wire`` and never sees
wire frames; error codes are ``kafka.errors`` classes' ``errno``.

- :class:`GroupCoordinator`: what API handlers call (classic JoinGroup/SyncGroup
  protocol, KIP-848 ConsumerGroupHeartbeat, offsets, describe/list/delete).
- :mod:`coordinator.checkpoints`: where committed offsets are kept.
- :mod:`coordinator.group_snapshot`: a read-only snapshot of the groups, for views outside (the Event Hubs view is kafka_wire.eventhubs.groups_view).
"""
from kafka_wire.coordinator.checkpoints import (
    Checkpoint, CheckpointStore, EmbeddedCheckpointStore, MemoryCheckpointStore,
)
from kafka_wire.coordinator.clock import Clock, SystemClock, VirtualClock
from kafka_wire.coordinator.config import GroupCoordinatorConfig
from kafka_wire.coordinator.group_coordinator import GroupCoordinator

__all__ = [
    "Checkpoint", "CheckpointStore", "Clock", "EmbeddedCheckpointStore", "GroupCoordinator",
    "GroupCoordinatorConfig", "MemoryCheckpointStore", "SystemClock", "VirtualClock",
]
