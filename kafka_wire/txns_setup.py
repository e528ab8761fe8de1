"""Gives every namespace its transaction coordinator (transactional ids are
namespace-wide, like groups), persisted under DATA_DIR/_transactions/<ns>/."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

from kafka_wire.coordinator.transactions import COORDINATOR_EPOCH, TransactionCoordinator, TransactionStore
from kafka_wire.context import NamespaceRuntime, Services

log = logging.getLogger(__name__)


def _marker_writer(services: Services, ns: NamespaceRuntime):
    def write(topic: str, partition: int, producer_id: int, producer_epoch: int, commit: bool) -> None:
        ns.topics.append_control(topic, partition, producer_id, producer_epoch, commit,
                                 COORDINATOR_EPOCH, services.clock.now_ms())
    return write


def _offset_committer(ns: NamespaceRuntime):
    def commit(group_id: str, offsets: list) -> None:
        ns.groups.offsets.commit(group_id, offsets)
    return commit


def open_transactions(services: Services, ns: NamespaceRuntime, data_dir: Path) -> Callable[[], None]:
    """Start one namespace's transaction coordinator (also for one made at runtime)."""
    def exists(topic: str, partition: int) -> bool:
        view = ns.topics.get(topic)
        return view is not None and 0 <= partition < view.partitions
    ns.txns = TransactionCoordinator(
        services.clock, TransactionStore(Path(data_dir) / "_transactions" / ns.name),
        allocate_producer_id=services.producer_ids.next_id, write_marker=_marker_writer(services, ns),
        commit_offsets=_offset_committer(ns), partition_exists=exists)
    ns.txns.start()
    return ns.txns.close
