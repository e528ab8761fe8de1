"""Gives every namespace its transaction coordinator (transactional ids are
namespace-wide, like groups), persisted under DATA_DIR/_transactions/<ns>/,
and the sweep that aborts hanging transactions (KIP-664): every
HANGING_CHECK_MS (or sooner, see hanging_check_ms) the open transactions of the namespace's loaded partitions
are checked against the coordinator, and one it does not know as open there
is aborted (an ABORT marker written, the last stable offset moves on) once its
timeout has passed. That is how a partition left with a transaction's records
but not its marker nor its coordinator state (a power loss in crash
durability) is freed, as Kafka's timeout would have freed it."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

from kafka_wire.coordinator.transactions import COORDINATOR_EPOCH, TransactionCoordinator, TransactionStore
from kafka_wire.context import NamespaceRuntime, Services

log = logging.getLogger(__name__)

# Kafka's transaction.abort.timed.out.transaction.cleanup.interval.ms: 10 s, or a
# tenth of transaction.max.timeout.ms when that is shorter (tests use a short one).
HANGING_CHECK_MS = 10_000


def hanging_check_ms(max_timeout_ms: int) -> int:
    return max(100, min(HANGING_CHECK_MS, max_timeout_ms // 10))


def _marker_writer(services: Services, ns: NamespaceRuntime):
    def write(topic: str, partition: int, producer_id: int, producer_epoch: int, commit: bool) -> None:
        ns.topics.append_control(topic, partition, producer_id, producer_epoch, commit,
                                 COORDINATOR_EPOCH, services.clock.now_ms())
    return write


def _offset_committer(ns: NamespaceRuntime):
    def commit(group_id: str, offsets: list) -> None:
        ns.groups.offsets.commit(group_id, offsets)
    return commit


def open_transactions_of(ns: NamespaceRuntime) -> list[tuple[str, int, int, int, int, int]]:
    """(topic, partition, producer id, epoch, first offset, first append ms) of every
    transaction open in the namespace's loaded partitions (a partition not
    loaded since the start is checked once something opens it)."""
    out = []
    for (topic, partition), plog in sorted(ns.topics.logs.logs().items()):
        if plog.closed or not plog.loaded:
            continue
        out.extend((topic, partition, *txn) for txn in plog.open_transactions())
    return out


def abort_hanging(services: Services, ns: NamespaceRuntime, *, max_timeout_ms: int | None = None,
                  only: Callable[[tuple], bool] | None = None) -> list[tuple[str, int, int, int, int, int]]:
    """Abort the namespace's hanging transactions; returns those aborted."""
    aborted = []
    for txn in ns.txns.hanging(open_transactions_of(ns), max_timeout_ms=max_timeout_ms):
        if only is not None and not only(txn):
            continue
        topic, partition, pid, epoch, first, _ = txn
        log.warning("namespace %s: aborting the hanging transaction of producer %d (epoch %d) in %s-%d, "
                    "open since offset %d, which its coordinator does not know as open", ns.name, pid, epoch,
                    topic, partition, first)
        try:
            ns.topics.append_control(topic, partition, pid, epoch, False, COORDINATOR_EPOCH,
                                     services.clock.now_ms())
        except Exception as exc:  # a deleted topic, a full disk: tried again next time
            log.error("cannot abort the hanging transaction in %s-%d: %s", topic, partition, exc)
            continue
        aborted.append(txn)
    return aborted


def open_transactions(services: Services, ns: NamespaceRuntime, data_dir: Path) -> Callable[[], None]:
    """Start one namespace's transaction coordinator (also for one made at runtime)."""
    def exists(topic: str, partition: int) -> bool:
        view = ns.topics.get(topic)
        return view is not None and 0 <= partition < view.partitions
    def open_txn_start(topic: str, partition: int, producer_id: int) -> int | None:
        plog = ns.topics.logs.get_log(topic, partition)
        if plog is None:
            return None
        return next((first_ms for pid, _epoch, _first, first_ms in plog.open_transactions(load=True)
                     if pid == producer_id), None)

    cfg = services.config
    ns.txns = TransactionCoordinator(
        services.clock, TransactionStore(Path(data_dir) / "_transactions" / ns.name,
                                         fsync=cfg.power_loss_durable_in(services.eventhubs, ns.name)),
        allocate_producer_id=services.producer_ids.next_id, write_marker=_marker_writer(services, ns),
        commit_offsets=_offset_committer(ns), partition_exists=exists, open_txn_start=open_txn_start,
        max_timeout_ms=cfg.transaction_max_timeout_ms)
    ns.txns.start()
    timer = None
    closed = False
    interval = hanging_check_ms(cfg.transaction_max_timeout_ms)

    def sweep() -> None:
        nonlocal timer
        timer = None
        if closed:
            return
        try:
            abort_hanging(services, ns)
        except Exception:
            log.exception("namespace %s: hanging-transaction check failed", ns.name)
        if not closed:
            timer = services.clock.call_later(interval, sweep)

    timer = services.clock.call_later(interval, sweep)

    def close() -> None:
        nonlocal closed
        closed = True
        if timer is not None:
            timer.cancel()
        ns.txns.close()
    return close
