"""Crash recovery of a partition directory (log/partition_log.py, log/segment.py).

A crash is simulated with ``PartitionLog.abandon()``: files are left exactly as
a killed process leaves them (preallocated, untrimmed, no clean-shutdown marker).
"""

from __future__ import annotations

import logging
import os
import random

import pytest

from kafka_wire.log import batch as rb
from kafka_wire.log.config import LogConfig
from kafka_wire.log.partition_log import CLEAN_SHUTDOWN_FILE, LOG_START_OFFSET_FILE, PartitionLog

from .log_helpers import batch_spans, make_batch

CONFIG = LogConfig(segment_bytes=2048, index_interval_bytes=200, message_timestamp_type="CreateTime")


def build(tmp_path, batches=30, config=CONFIG):
    log = PartitionLog(tmp_path, config, now_ms=0)
    infos = [log.append(make_batch(2, value_size=50, ts=i, tag=i), now_ms=100 + i) for i in range(batches)]
    return log, infos


def everything(log):
    """All bytes from the log start, validated: recovery must never serve corrupt data."""
    out, offset = bytearray(), log.log_start_offset
    while offset < log.log_end_offset:
        view = log.read(offset, 1 << 20)
        headers = rb.validate_records(bytes(view))
        out += view
        offset = headers[-1].last_offset + 1
    return bytes(out)


def reopen(tmp_path, config=CONFIG):
    return PartitionLog(tmp_path, config, now_ms=0)


def test_clean_shutdown_leaves_a_marker_and_trimmed_files(tmp_path):
    log, _ = build(tmp_path)
    log.close()
    assert (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    for seg in log.segments:
        assert os.path.getsize(seg.log_path) == seg.size
    again = reopen(tmp_path)
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()  # a crash from now on is unclean
    assert again.log_end_offset == 60


def test_crash_with_a_preallocated_zero_tail_loses_nothing(tmp_path, caplog):
    log, _ = build(tmp_path)
    expected = everything(log)
    log.abandon()
    assert os.path.getsize(log.active_segment.log_path) == CONFIG.segment_bytes
    with caplog.at_level(logging.WARNING):
        again = reopen(tmp_path)
    assert again.log_end_offset == 60 and everything(again) == expected
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("damage", ["cut", "flip", "garbage", "partial-batch"])
def test_a_torn_or_corrupt_tail_is_cut_at_the_last_good_batch(tmp_path, caplog, damage):
    log, infos = build(tmp_path)
    active = log.active_segment
    last = infos[-1]
    keep = everything(log)[: -last.headers[0].size]
    path, end, pos = active.log_path, active.size, last.position - active.base_position
    log.abandon()
    with open(path, "r+b") as f:
        if damage == "cut":
            f.truncate(end - 7)
        elif damage == "flip":
            f.seek(end - 3)
            byte = f.read(1)
            f.seek(end - 3)
            f.write(bytes([byte[0] ^ 0xFF]))
        elif damage == "garbage":
            f.seek(pos)
            f.write(random.Random(300).randbytes(300))
        else:
            f.seek(pos)
            f.write(make_batch(3)[:40])
    with caplog.at_level(logging.WARNING):
        again = reopen(tmp_path)
    assert again.log_end_offset == last.base_offset
    assert everything(again) == keep
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "dropped" in warnings[0]
    # The log keeps working, and positions carry on from the last good batch.
    info = again.append(make_batch(1), now_ms=1_000)
    assert info.base_offset == last.base_offset and info.position == last.position


def test_garbage_after_a_clean_end_is_dropped(tmp_path):
    log, infos = build(tmp_path)
    active = log.active_segment
    expected = everything(log)
    path, end = active.log_path, active.size
    log.abandon()
    with open(path, "r+b") as f:
        f.seek(end)
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x3c\x00\x00\x00\x31garbage")
    again = reopen(tmp_path)
    assert everything(again) == expected and again.log_end_offset == 60


@pytest.mark.parametrize("suffix", [".index", ".timeindex", ".batches"])
def test_deleted_index_files_are_rebuilt(tmp_path, suffix):
    log, infos = build(tmp_path)
    expected = everything(log)
    positions = [log.batch_position(info.base_offset) for info in infos]
    ts_answers = [log.offset_for_timestamp(t) for t in (0, 7, 15, 29)]
    log.close()
    for path in tmp_path.glob(f"*{suffix}"):
        path.unlink()
    again = reopen(tmp_path)
    assert everything(again) == expected
    assert [again.offset_for_timestamp(t) for t in (0, 7, 15, 29)] == ts_answers
    got = [again.batch_position(info.base_offset) for info in infos]
    assert [g[0] for g in got] == [p[0] for p in positions]  # Event Hubs offsets survive
    if suffix != ".batches":
        assert got == positions  # and so do enqueued times while .batches lives


@pytest.mark.parametrize("crash_before_delete", [False, True])
def test_byte_positions_survive_losing_every_batches_file_after_deletion(tmp_path,
                                                                          crash_before_delete):
    log, infos = build(tmp_path, batches=60)
    positions = {info.base_offset: log.batch_position(info.base_offset)[0] for info in infos}
    if crash_before_delete:
        # The anchor names the segment that becomes first; the crash comes before the deletion.
        from kafka_wire.log.recovery import write_position_anchor
        first = next(s for s in log.segments if s.base_offset > 30)
        write_position_anchor(tmp_path, first.base_offset, first.base_position)
        log.abandon()
    else:
        log.delete_records_before(60)
        assert log.segments[0].base_position > 0
        log.close()
    for path in tmp_path.glob("*.batches"):
        path.unlink()
    again = reopen(tmp_path)
    kept = [o for o in positions if o >= again.log_start_offset]
    assert len(kept) >= 20 and (crash_before_delete or positions[kept[0]] > 0)
    assert {o: again.batch_position(o)[0] for o in kept} == {o: positions[o] for o in kept}


@pytest.mark.parametrize("how", ["odd-size", "decreasing", "past-the-log", "zeros"])
def test_damaged_index_files_are_detected_and_rebuilt(tmp_path, how):
    log, infos = build(tmp_path)
    expected = everything(log)
    log.close()
    first = log.segments[0]
    index = first.offset_index.path
    with open(index, "r+b") as f:
        if how == "odd-size":
            f.seek(0, 2)
            f.write(b"\x01\x02\x03")
        elif how == "decreasing":
            f.write(b"\x00\x00\x00\x09\x00\x00\x09\x00\x00\x00\x00\x01\x00\x00\x00\x10")
        elif how == "past-the-log":
            f.write(b"\x00\x00\x00\x01\x7f\x00\x00\x00")
        else:
            f.truncate(CONFIG.segment_index_bytes)  # never trimmed
    again = reopen(tmp_path)
    assert everything(again) == expected
    assert os.path.getsize(index) % 8 == 0
    for info in infos:
        assert batch_spans(again.read(info.last_offset, 1))[0] == (info.base_offset, info.last_offset)


def test_a_segment_left_untrimmed_by_a_crash_during_roll_is_trimmed(tmp_path):
    log, infos = build(tmp_path)
    expected = everything(log)
    first = log.segments[0]
    log.abandon()
    with open(first.log_path, "r+b") as f:
        f.truncate(CONFIG.segment_bytes)
    with open(first.batch_index.path, "r+b") as f:
        f.truncate(16 + 16 * 100)
    again = reopen(tmp_path)
    assert everything(again) == expected
    assert os.path.getsize(first.log_path) == again.segments[0].size


def test_corruption_inside_an_older_segment_keeps_the_longest_valid_prefix(tmp_path):
    log, infos = build(tmp_path)
    second = log.segments[1]
    last_batch = second.batch_index.last_entry()[1]
    log.abandon()
    with open(second.log_path, "r+b") as f:
        f.seek(last_batch + 70)
        f.write(b"\xff\xff")
    again = reopen(tmp_path)
    assert len(again.segments) == 2
    assert again.log_end_offset == second.base_offset + (second.batch_index.entries - 1) * 2
    everything(again)


def test_stray_files_are_ignored(tmp_path):
    log, _ = build(tmp_path, batches=3)
    log.close()
    (tmp_path / "00000000000000000099.log.deleted").write_bytes(b"x" * 100)
    (tmp_path / "log-start-offset.tmp").write_text("77")
    (tmp_path / "00000000000000000500.index").write_bytes(b"\0" * 8)  # no .log
    again = reopen(tmp_path)
    assert again.log_start_offset == 0 and again.log_end_offset == 6
    assert [s.base_offset for s in again.segments] == [0]


def test_an_empty_directory_starts_at_the_persisted_log_start_offset(tmp_path):
    (tmp_path / LOG_START_OFFSET_FILE).write_text("42\n")
    log = reopen(tmp_path)
    assert log.log_start_offset == log.log_end_offset == 42
    assert log.append(make_batch(1), now_ms=1).base_offset == 42


def test_log_start_offset_past_the_end_starts_an_empty_log_there(tmp_path):
    log, _ = build(tmp_path, batches=3)
    log.close()
    (tmp_path / LOG_START_OFFSET_FILE).write_text("100\n")
    again = reopen(tmp_path)
    assert again.log_start_offset == again.log_end_offset == 100 and again.size_bytes == 0


def test_recovery_rebuilds_the_time_index_of_the_active_segment(tmp_path):
    log, _ = build(tmp_path, batches=60)
    answers = [log.offset_for_timestamp(t) for t in range(0, 62, 3)]
    max_ts = log.max_timestamp()
    log.abandon()
    again = reopen(tmp_path)
    assert [again.offset_for_timestamp(t) for t in range(0, 62, 3)] == answers
    assert again.max_timestamp() == max_ts
