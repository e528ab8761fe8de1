"""Checkpoints: committed offsets as Event Hubs sees them, and where they are kept."""
from kafka_wire.coordinator.checkpoints.embedded import CheckpointStoreError, EmbeddedCheckpointStore
from kafka_wire.coordinator.checkpoints.store import (
    Checkpoint, CheckpointKey, CheckpointStore, MemoryCheckpointStore,
)

__all__ = ["Checkpoint", "CheckpointKey", "CheckpointStore", "CheckpointStoreError",
           "EmbeddedCheckpointStore", "MemoryCheckpointStore"]
