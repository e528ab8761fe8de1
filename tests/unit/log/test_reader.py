"""log.reader: another process reading a partition while the broker writes it."""

from __future__ import annotations

import os

from kafka_wire.log.config import LogConfig
from kafka_wire.log.partition_log import PartitionLog
from kafka_wire.log.reader import PartitionReader

from .log_helpers import make_batch

CONFIG = LogConfig(segment_bytes=4096)


def open_log(path, config=CONFIG) -> PartitionLog:
    return PartitionLog(path, config, now_ms=0)


def txn(pid: int, seq: int, n: int = 1) -> bytes:
    return make_batch(n, producer_id=pid, producer_epoch=0, base_sequence=seq, transactional=True, value_size=30)


def published(log: PartitionLog) -> PartitionLog:
    """What the broker's log flusher does about once a second: write the .batches entries
    the active segment keeps in memory, which readers in other processes go by."""
    log.write_pending_entries()
    return log


def snapshot(path) -> dict:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(path.iterdir())}


def test_it_sees_what_the_open_log_appended_with_positions_and_append_times(tmp_path):
    log = open_log(tmp_path)
    infos = [log.append(make_batch(3, value_size=200, tag=i), now_ms=1_000 + i) for i in range(40)]
    assert len(log.segments) > 2  # several segments, the last one active and preallocated
    published(log)
    reader = PartitionReader(tmp_path)
    got = list(reader.batches(0))
    assert [(b.base_offset, b.position, b.append_time_ms) for b in got] == [
        (i.base_offset, i.position, i.append_time_ms) for i in infos]
    assert got[5].data == bytes(log.read(15, 1 << 20))[: got[5].size]
    assert reader.stable_end() == log.log_end_offset == 120
    assert [b.base_offset for b in reader.batches(31, 60)] == list(range(30, 60, 3))
    # Appends made after a first read show up on the next one.
    published(log).append(make_batch(2), now_ms=5_000)
    assert reader.stable_end() == 120  # kept in memory until the flusher's pass
    published(log)
    assert reader.stable_end() == 122 and [b.base_offset for b in reader.batches(118)] == [117, 120]


def test_it_never_writes(tmp_path):
    log = open_log(tmp_path)
    for i in range(30):
        log.append(make_batch(2, value_size=300), now_ms=i)
    before = snapshot(tmp_path)
    reader = PartitionReader(tmp_path)
    list(reader.batches(0))
    reader.stable_end()
    assert snapshot(tmp_path) == before


def test_it_stops_at_a_torn_or_unacknowledged_tail(tmp_path):
    log = open_log(tmp_path, LogConfig())
    for i in range(5):
        log.append(make_batch(2, value_size=50), now_ms=i)
    last = list(PartitionReader(published(log).directory).batches(0))[-1]
    seg = tmp_path / f"{0:020d}.log"
    fd = os.open(seg, os.O_WRONLY)
    try:  # the last batch's bytes not (yet) on disk although .batches lists it
        os.pwrite(fd, bytes(last.size), last.position)
    finally:
        os.close(fd)
    reader = PartitionReader(tmp_path)
    assert [b.base_offset for b in reader.batches(0)] == [0, 2, 4, 6]
    assert reader.stable_end() == 8


def test_a_corrupt_batch_ends_what_is_readable(tmp_path):
    log = open_log(tmp_path, LogConfig())
    for i in range(4):
        log.append(make_batch(1, value_size=50), now_ms=i)
    second = list(PartitionReader(published(log).directory).batches(0))[1]
    fd = os.open(tmp_path / f"{0:020d}.log", os.O_WRONLY)
    try:
        os.pwrite(fd, b"\xee", second.position + 70)
    finally:
        os.close(fd)
    assert [b.base_offset for b in PartitionReader(tmp_path).batches(0)] == [0]


def test_transactions_open_hold_back_aborted_are_dropped_markers_never_returned(tmp_path):
    log = open_log(tmp_path)
    log.append(make_batch(2), now_ms=0)  # 0-1
    log.append(txn(1, 0, 2), now_ms=0)  # 2-3: committed below
    log.append(txn(2, 0), now_ms=0)  # 4: aborted below
    published(log).append(make_batch(1), now_ms=0)  # 5
    published(log)
    reader = PartitionReader(tmp_path)
    assert reader.stable_end() == 2 and [b.base_offset for b in reader.batches(0)] == [0]
    published(log).append_control(1, 0, True, 0, now_ms=0)  # 6
    published(log)
    assert reader.stable_end() == 4 and [b.base_offset for b in reader.batches(0)] == [0, 2]
    log.append_control(2, 0, False, 0, now_ms=0)  # 7
    published(log)
    assert reader.stable_end() == 8 == log.last_stable_offset
    assert [b.base_offset for b in reader.batches(0)] == [0, 2, 5]
    assert [b.base_offset for b in reader.batches(3, 6)] == [2, 5]
    # The .txnindex alone (markers gone from view) still drops the aborted batch.
    assert (tmp_path / f"{0:020d}.txnindex").exists()
    assert [b.base_offset for b in reader.batches(4, 5)] == []


def test_retention_moves_the_start_up(tmp_path):
    log = open_log(tmp_path)
    for i in range(40):
        log.append(make_batch(3, value_size=200), now_ms=i)
    reader = PartitionReader(tmp_path)
    list(reader.batches(0))
    start = log.delete_records_before(60)
    assert start == 60 and reader.log_start_offset() == 60
    assert next(iter(reader.batches(0))).base_offset == 60  # deleted segments are not looked for
