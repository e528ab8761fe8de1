"""Gives every namespace its group coordinator and checkpoint store.

Kafka groups are namespace-wide in Event Hubs, so each namespace has its own
GroupCoordinator; committed offsets become checkpoints in an embedded store
under DATA_DIR/_checkpoints/<namespace>/.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

from kafka_wire.coordinator.checkpoints.embedded import CHECKPOINTS_DIR, EmbeddedCheckpointStore
from kafka_wire.coordinator.config import GroupCoordinatorConfig
from kafka_wire.coordinator.group_coordinator import GroupCoordinator
from kafka_wire.log.batch import event_offset
from kafka_wire.context import NamespaceRuntime, Services

log = logging.getLogger(__name__)


def _position_resolver(ns: NamespaceRuntime):
    def resolve(topic: str, partition: int, offset: int) -> int | None:
        plog = ns.topics.log(topic, partition)
        if plog is None:
            return None
        found = plog.event_position(offset)
        if found is not None:
            return found[0]
        if offset == plog.log_end_offset:
            # Caught up: the checkpoint points where the next event will be written.
            seg = plog.active_segment
            return event_offset(seg.end_position, 0)
        return None
    return resolve


def _partition_exists(ns: NamespaceRuntime):
    def exists(topic: str, partition: int) -> bool:
        view = ns.topics.get(topic)
        return view is not None and 0 <= partition < view.partitions
    return exists


def _topic_metadata(ns: NamespaceRuntime):
    def meta(topic: str):
        view = ns.topics.get(topic)
        return None if view is None else (view.topic_id, view.partitions)
    return meta


def coordinator_config(services: Services) -> GroupCoordinatorConfig:
    cfg = services.config
    return GroupCoordinatorConfig(
        group_min_session_timeout_ms=cfg.group_min_session_timeout_ms,
        group_max_session_timeout_ms=cfg.group_max_session_timeout_ms,
        group_initial_rebalance_delay_ms=cfg.group_initial_rebalance_delay_ms,
        offsets_retention_ms=cfg.offsets_retention_ms,
        # One bound for both protocols: [limits] members_per_group.
        group_max_size=cfg.bounds.members_per_group,
        consumer_group_max_size=cfg.bounds.members_per_group,
    )


def open_groups(services: Services, ns: NamespaceRuntime, data_dir: Path) -> Callable[[], None]:
    """Start one namespace's group coordinator (also for a namespace made at runtime)."""
    # Power-loss durability: one fsync per write of the store (one per OffsetCommit request).
    store = EmbeddedCheckpointStore(Path(data_dir) / CHECKPOINTS_DIR / ns.name,
                                    fsync="always" if services.config.power_loss_durable_in(
                                        services.eventhubs, ns.name) else "none")
    ns.groups = GroupCoordinator(
        services.clock, coordinator_config(services), store=store, namespace=ns.name,
        position_resolver=_position_resolver(ns), partition_exists=_partition_exists(ns),
        topic_metadata=_topic_metadata(ns), list_topics=ns.topics.names)
    ns.groups.start()
    forget = ns.groups.forget_topic
    ns.topics.on_delete.append(forget)

    def close() -> None:
        if forget in ns.topics.on_delete:
            ns.topics.on_delete.remove(forget)
        ns.groups.close()
        store.close()
    return close
