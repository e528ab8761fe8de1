"""A transaction coordinator state older than the partitions' (crash durability,
then a power loss): a PrepareCommit read back at start commits its own
transaction, never a later one the same producer left open in a partition."""
from __future__ import annotations

import os

from kafka_wire.coordinator.clock import VirtualClock
from kafka_wire.coordinator.transactions import PREPARE_COMMIT, TransactionCoordinator, TransactionStore, TxnState


def _restart(tmp_path, open_since: dict[tuple[str, int], int]) -> list[tuple]:
    store = TransactionStore(tmp_path)
    store.load()
    store.put(TxnState("tx", producer_id=7, producer_epoch=0, timeout_ms=60_000, state=PREPARE_COMMIT,
                       partitions={("t", 0), ("t", 1)}, start_ms=900, update_ms=1_000))
    store.close()
    markers: list[tuple] = []
    coordinator = TransactionCoordinator(
        VirtualClock(start_ms=5_000), TransactionStore(tmp_path), allocate_producer_id=lambda: 8,
        write_marker=lambda *m: markers.append(m), commit_offsets=lambda *a: None,
        partition_exists=lambda t, p: True,
        open_txn_start=lambda t, p, pid: open_since.get((t, p)) if pid == 7 else None)
    coordinator.start()
    coordinator.close()
    return markers


def test_a_recovered_prepare_commit_commits_its_own_transaction(tmp_path):
    markers = _restart(tmp_path, {("t", 0): 950, ("t", 1): 990})
    assert markers == [("t", 0, 7, 0, True), ("t", 1, 7, 0, True)]


def test_a_recovered_prepare_commit_leaves_a_later_open_transaction_alone(tmp_path):
    # Partition 1's open transaction began after the commit was prepared: a later one.
    markers = _restart(tmp_path, {("t", 0): 950, ("t", 1): 1_500})
    assert markers == [("t", 0, 7, 0, True)]


def test_a_recovered_prepare_commit_writes_its_marker_where_nothing_is_open(tmp_path):
    assert _restart(tmp_path, {}) == [("t", 0, 7, 0, True), ("t", 1, 7, 0, True)]


def _coordinator(tmp_path, fsync: bool) -> TransactionCoordinator:
    return TransactionCoordinator(
        VirtualClock(start_ms=5_000), TransactionStore(tmp_path, fsync=fsync), allocate_producer_id=lambda: 8,
        write_marker=lambda *m: None, commit_offsets=lambda *a: None, partition_exists=lambda t, p: True)


def test_after_an_unclean_stop_without_fsync_a_transactional_id_gets_a_new_producer_id(tmp_path):
    # The partitions may hold this producer's sequences under an epoch the lost state never
    # bumped past: a new producer id starts clean.
    store = TransactionStore(tmp_path)
    store.load()
    store.put(TxnState("tx", producer_id=7, producer_epoch=3, timeout_ms=60_000))
    os.close(store._fd)  # killed: no clean close
    coordinator = _coordinator(tmp_path, fsync=False)
    assert coordinator.init_producer_id("tx", 60_000) == (0, 8, 0)


def test_a_clean_stop_or_fsynced_state_keeps_the_producer_id_and_bumps_the_epoch(tmp_path):
    first = _coordinator(tmp_path / "clean", fsync=False)
    first.store.put(TxnState("tx", producer_id=7, producer_epoch=3, timeout_ms=60_000))
    first.close()
    assert _coordinator(tmp_path / "clean", fsync=False).init_producer_id("tx", 60_000) == (0, 7, 4)
    durable = _coordinator(tmp_path / "durable", fsync=True)
    durable.store.put(TxnState("tx", producer_id=7, producer_epoch=3, timeout_ms=60_000))
    os.close(durable.store._fd)  # killed, but every record was fsynced
    assert _coordinator(tmp_path / "durable", fsync=True).init_producer_id("tx", 60_000) == (0, 7, 4)
