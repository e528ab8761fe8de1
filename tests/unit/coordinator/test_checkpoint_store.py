"""The embedded checkpoint store: durability, torn tails, compaction."""
from __future__ import annotations

import logging
import os
import threading

import pytest

from kafka_wire.coordinator.checkpoints import (
    Checkpoint, CheckpointStoreError, EmbeddedCheckpointStore, MemoryCheckpointStore,
)
from kafka_wire.coordinator.checkpoints.embedded import FILE_NAME


def cp(partition=0, seq=1, *, group="g", hub="hub", ns="ns", offset=100, **kw):
    return Checkpoint(ns, hub, group, partition, seq, offset, **kw)


def state(store):
    return sorted(store.load(), key=lambda c: c.key)


def test_write_reopen_values_equal(tmp_path):
    s = EmbeddedCheckpointStore(tmp_path)
    written = [cp(0, 5, offset="1234", leader_epoch=2, metadata="m", commit_time_ms=99),
               cp(1, 0, offset=None), cp(0, 7, group="other", metadata=None)]
    s.put_many(written)
    s.close()
    s2 = EmbeddedCheckpointStore(tmp_path)
    assert state(s2) == sorted(written, key=lambda c: c.key)
    first = s2.get("ns", "g", "hub", 0)
    assert first.offset == 1234 and first.offset_str == "1234" and first.topic == "hub"
    s2.close()


def test_a_write_survives_a_crash_without_close(tmp_path):
    s = EmbeddedCheckpointStore(tmp_path)
    s.put(cp(0, 9))
    # no close(): the process "dies"; the page cache has the bytes
    assert state(EmbeddedCheckpointStore(tmp_path)) == [cp(0, 9)]
    s.close()


@pytest.mark.parametrize("cut", [1, 4, 9, 20])
def test_torn_tail_is_truncated_with_one_warning(tmp_path, caplog, cut):
    s = EmbeddedCheckpointStore(tmp_path)
    s.put(cp(0, 1))
    good_size = os.path.getsize(tmp_path / FILE_NAME)
    s.put(cp(1, 2, metadata="x" * 40))
    s.close()
    path = tmp_path / FILE_NAME
    with open(path, "r+b") as f:
        f.truncate(good_size + cut)  # the second record was half written
    with caplog.at_level(logging.WARNING):
        s2 = EmbeddedCheckpointStore(tmp_path)
    assert state(s2) == [cp(0, 1)]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and f"dropped {cut} bytes" in warnings[0].getMessage()
    assert os.path.getsize(path) == good_size
    s2.put(cp(2, 3))  # appends continue from the repaired end
    s2.close()
    assert state(EmbeddedCheckpointStore(tmp_path)) == [cp(0, 1), cp(2, 3)]


def test_corrupt_record_ends_the_log(tmp_path, caplog):
    s = EmbeddedCheckpointStore(tmp_path)
    s.put(cp(0, 1))
    size = os.path.getsize(tmp_path / FILE_NAME)
    s.put(cp(1, 2))
    s.put(cp(2, 3))
    s.close()
    with open(tmp_path / FILE_NAME, "r+b") as f:
        f.seek(size + 12)
        byte = f.read(1)
        f.seek(size + 12)
        f.write(bytes([byte[0] ^ 0xFF]))
    with caplog.at_level(logging.WARNING):
        s2 = EmbeddedCheckpointStore(tmp_path)
    assert state(s2) == [cp(0, 1)]
    assert "CRC-32C mismatch" in caplog.text
    s2.close()


def test_foreign_file_is_refused(tmp_path):
    (tmp_path / FILE_NAME).write_bytes(b"not a checkpoint log at all")
    with pytest.raises(CheckpointStoreError, match="not a kafka-wire checkpoint log"):
        EmbeddedCheckpointStore(tmp_path)


def test_deletes_are_durable(tmp_path):
    s = EmbeddedCheckpointStore(tmp_path)
    s.put_many([cp(0), cp(1), cp(0, group="h"), cp(0, ns="other")])
    s.delete("ns", "g", "hub", 1)
    s.delete_group("ns", "h")
    s.delete("ns", "nope", "hub", 0)  # absent: no-op
    s.close()
    assert state(EmbeddedCheckpointStore(tmp_path)) == [cp(0), cp(0, ns="other")]


def test_compaction_keeps_latest_per_key_and_shrinks_the_file(tmp_path):
    s = EmbeddedCheckpointStore(tmp_path, compact_min_dead=50, background_compaction=False)
    for seq in range(300):
        s.put(cp(seq % 3, seq))
    assert s.compactions >= 1
    assert s.dead_records < 100
    s.close()
    s2 = EmbeddedCheckpointStore(tmp_path)
    assert state(s2) == [cp(0, 297), cp(1, 298), cp(2, 299)]
    assert os.path.getsize(tmp_path / FILE_NAME) < 150 * 60
    s2.close()


def test_background_compaction_keeps_writes_made_meanwhile(tmp_path):
    s = EmbeddedCheckpointStore(tmp_path, compact_min_dead=10)
    latest = {}
    for seq in range(2000):
        c = cp(seq % 7, seq, group=f"g{seq % 3}")
        s.put(c)
        latest[c.key] = c
        if seq == 1000:
            s.delete_group("ns", "g2")
            latest = {k: v for k, v in latest.items() if k[2] != "g2"}
    s.wait_for_compaction()
    assert s.compactions >= 1
    assert {c.key: c for c in s.load()} == latest
    s.close()
    assert {c.key: c for c in EmbeddedCheckpointStore(tmp_path).load()} == latest
    assert not (tmp_path / (FILE_NAME + ".compacting")).exists()


def test_compaction_runs_off_the_calling_thread(tmp_path):
    s = EmbeddedCheckpointStore(tmp_path, compact_min_dead=5)
    threads = []
    original = s._compact

    def spy(*args):
        threads.append(threading.get_ident())
        return original(*args)

    s._compact = spy
    for seq in range(20):
        s.put(cp(0, seq))
    s.wait_for_compaction()
    assert threads and threading.get_ident() not in threads
    s.close()


def test_leftover_compaction_file_is_discarded(tmp_path):
    s = EmbeddedCheckpointStore(tmp_path)
    s.put(cp(0, 1))
    s.close()
    (tmp_path / (FILE_NAME + ".compacting")).write_bytes(b"half a compaction")
    assert state(EmbeddedCheckpointStore(tmp_path)) == [cp(0, 1)]
    assert not (tmp_path / (FILE_NAME + ".compacting")).exists()


def test_fsync_always_and_closed_store(tmp_path):
    s = EmbeddedCheckpointStore(tmp_path, fsync="always")
    s.put(cp())
    s.flush()
    s.close()
    s.close()  # idempotent
    with pytest.raises(CheckpointStoreError):
        s.put(cp())
    with pytest.raises(ValueError):
        EmbeddedCheckpointStore(tmp_path, fsync="sometimes")


def test_memory_store_has_the_same_semantics():
    s = MemoryCheckpointStore()
    s.put_many([cp(0), cp(1), cp(0, group="h")])
    s.delete("ns", "g", "hub", 1)
    s.delete_group("ns", "h")
    assert state(s) == [cp(0)]


def test_writes_during_a_compaction_are_carried_into_the_new_file(tmp_path):
    s = EmbeddedCheckpointStore(tmp_path, compact_min_dead=10**9)
    for seq in range(50):
        s.put(cp(seq % 2, seq))
    gate = threading.Event()
    original = s._compact

    def held(*args):
        gate.wait(5)
        return original(*args)

    s._compact = held
    s.compact(wait=False)            # snapshot taken now: partitions 0 and 1
    s.put(cp(0, 1000))               # written while the compactor works
    s.put(cp(5, 5))
    s.delete("ns", "g", "hub", 1)
    gate.set()
    s.wait_for_compaction()
    assert s.compactions == 1
    assert state(s) == [cp(0, 1000), cp(5, 5)]
    s.close()
    assert state(EmbeddedCheckpointStore(tmp_path)) == [cp(0, 1000), cp(5, 5)]


def _tree(path):
    return sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in path.rglob("*"))


def test_read_only_store_reads_a_live_store_and_changes_no_file(tmp_path):
    live = EmbeddedCheckpointStore(tmp_path)
    live.put_many([cp(0, 5), cp(1, 6, group="other")])
    live.delete("ns", "other", "hub", 1)
    good_size = os.path.getsize(tmp_path / FILE_NAME)
    live.put(cp(2, 7))
    with open(tmp_path / FILE_NAME, "r+b") as f:
        f.truncate(good_size + 9)  # the last record is still being written
    (tmp_path / (FILE_NAME + ".compacting")).write_bytes(b"half a compaction")
    before = _tree(tmp_path)
    ro = EmbeddedCheckpointStore(tmp_path, read_only=True)
    assert state(ro) == [cp(0, 5)]
    with pytest.raises(CheckpointStoreError, match="read-only"):
        ro.put(cp(3, 1))
    with pytest.raises(CheckpointStoreError, match="read-only"):
        ro.compact()
    ro.flush()
    ro.close()
    assert _tree(tmp_path) == before
    live.close()


def test_read_only_store_of_a_missing_directory_is_empty_and_creates_nothing(tmp_path):
    ro = EmbeddedCheckpointStore(tmp_path / "absent", read_only=True)
    assert ro.load() == [] and not (tmp_path / "absent").exists()
    ro.close()
