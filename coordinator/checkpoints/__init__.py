"""Checkpoints: committed offsets as Event Hubs sees them, and where they are kept."""
from coordinator.checkpoints.embedded import CheckpointStoreError, EmbeddedCheckpointStore
from coordinator.checkpoints.store import (
    Checkpoint, CheckpointKey, CheckpointStore, MemoryCheckpointStore,
)

__all__ = ["Checkpoint", "CheckpointKey", "CheckpointStore", "CheckpointStoreError",
           "EmbeddedCheckpointStore", "MemoryCheckpointStore"]
