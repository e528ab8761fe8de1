"""A Capture poll costs what is new, not the retained log: each poll asks a partition's
reader for its ends (a scan from the log start) and then for the batches from its
checkpoint. The scan from the checkpoint dropped every segment wholly below it from the
reader's cache, so the next ends() read and CRC-checked every retained batch again
(13 segments: 723 KB a poll with nothing new). Kept across retention, a cleaner's swap
and an open transaction, the reader still answers as a new one does."""
from __future__ import annotations

import os
from contextlib import contextmanager

from kafka_wire.log.batch import BatchHeader
from kafka_wire.log.cleaner import LogCleaner
from kafka_wire.log.config import LogConfig
from kafka_wire.log.manager import LogManager
from kafka_wire.log.reader import PartitionReader

from .log_helpers import keyed_batch, make_batch


@contextmanager
def io(monkeypatch):
    """Bytes pread inside the block."""
    seen = {"bytes": 0}
    real = os.pread

    def counting(fd, n, pos):
        data = real(fd, n, pos)
        seen["bytes"] += len(data)
        return data

    monkeypatch.setattr(os, "pread", counting)
    try:
        yield seen
    finally:
        monkeypatch.setattr(os, "pread", real)


@contextmanager
def headers_looked_at(monkeypatch):
    """Batch headers looked at inside the block: every walk of batches (resolving
    transactions, or summing up a segment's) asks each header is_control first."""
    seen = {"headers": 0}
    real = BatchHeader.is_control

    def counting(header):
        seen["headers"] += 1
        return real.fget(header)

    monkeypatch.setattr(BatchHeader, "is_control", property(counting))
    try:
        yield seen
    finally:
        monkeypatch.setattr(BatchHeader, "is_control", real)


def poll(reader: PartitionReader, checkpoint: int) -> tuple[int, list[int], int]:
    """What spark.backend.LogBackend asks a partition in a poll: its ends (end_offsets),
    then the batches from the checkpoint to its stable end (refs)."""
    end, _ = reader.ends()
    stop = reader.stable_end(checkpoint)
    return end, [b.base_offset for b in reader.batches(checkpoint, stop, with_data=False)], stop


def fresh_poll(directory, checkpoint: int):
    return poll(PartitionReader(directory), checkpoint)


def test_a_poll_with_nothing_new_reads_nothing_retained(tmp_path, monkeypatch):
    m = LogManager(tmp_path, LogConfig(segment_bytes=16 * 1024))
    try:
        m.create_topic("t", 1)
        log = m.get_log("t", 0)
        for i in range(400):
            log.append(make_batch(5, value_size=40), now_ms=1_000 + i)
        log.write_pending_entries()
        retained = sum(p.stat().st_size for p in log.directory.glob("*.log"))
        assert len(list(log.directory.glob("*.log"))) >= 8
        reader = PartitionReader(log.directory)
        end = reader.ends()[0]
        poll(reader, end - 10)  # the first poll reads the log once
        for _ in range(3):
            with io(monkeypatch) as seen:
                got = poll(reader, end - 10)
            assert got == fresh_poll(log.directory, end - 10)
            # (only the last segment's last cached header is looked at again: truncation)
            assert seen["bytes"] < 1024, f"{seen['bytes']} bytes read of a {retained}-byte log, nothing new"

        new = make_batch(5, value_size=40)
        log.append(new, now_ms=9_000)
        log.write_pending_entries()
        with io(monkeypatch) as seen:
            got = poll(reader, end - 10)
        assert got == fresh_poll(log.directory, end - 10)
        assert got[0] == end + 5
        assert seen["bytes"] < len(new) + 1024, f"{seen['bytes']} bytes read for one new {len(new)}-byte batch"
    finally:
        m.close()


def test_a_kept_reader_polled_from_its_checkpoint_answers_as_a_new_one(tmp_path):
    """Retention deleting segments, the cleaner swapping them and a transaction left open
    low in the log, between polls of a reader that reads from near the end."""
    now = [1_000]
    m = LogManager(tmp_path, LogConfig(segment_bytes=2048, cleanup_policy="compact,delete",
                                       retention_ms=50_000), clock=lambda: now[0])
    try:
        m.create_topic("t", 1)
        log = m.get_log("t", 0)

        def put(key: int, n: int = 1) -> None:
            for _ in range(n):
                log.append(keyed_batch([(b"k%d" % key, b"v" * 60)], ts=now[0]), now_ms=now[0])
                now[0] += 1

        def check(reader: PartitionReader) -> None:
            log.write_pending_entries()
            for checkpoint in (log.log_end_offset - 3, log.log_start_offset):
                assert poll(reader, checkpoint) == fresh_poll(log.directory, checkpoint)

        put(1, 40)
        reader = PartitionReader(log.directory)
        check(reader)
        log.append(make_batch(1, producer_id=7, base_sequence=0, transactional=True), now_ms=now[0])
        put(2, 40)
        check(reader)
        assert reader.ends()[0] == log.last_stable_offset < log.log_end_offset  # held back by it
        log.append_control(7, 0, True, 0, now_ms=now[0])
        put(3, 40)
        check(reader)
        LogCleaner(m).clean_now("t", 0, now_ms=now[0])  # swaps segments: new inodes, fewer batches
        put(4, 10)
        check(reader)
        now[0] += 60_000
        put(5, 10)
        assert log.enforce_retention(now[0]) > 0  # deletes the oldest segments
        put(6, 10)
        check(reader)
    finally:
        m.close()


def test_a_poll_with_nothing_new_looks_at_no_retained_header(tmp_path, monkeypatch):
    """ends() walked every cached header from the log start in Python (2,000 batches:
    3 ms a poll; 6,000: 8 ms): it now sums up each segment once, as its batches are
    first read, and a poll looks at the headers from its checkpoint only, however
    long the log. A transaction open across segments is still seen, and resolved."""
    looked = {}
    for n in (150, 900):
        m = LogManager(tmp_path / str(n), LogConfig(segment_bytes=16 * 1024))
        try:
            m.create_topic("t", 1)
            log = m.get_log("t", 0)
            log.append(make_batch(1, producer_id=7, base_sequence=0, transactional=True), now_ms=1_000)
            for i in range(n):
                log.append(make_batch(5, value_size=40), now_ms=1_000 + i)
                if i == n // 2:
                    log.write_pending_entries()
                    reader = PartitionReader(log.directory)
                    assert reader.ends()[0] == 0  # held back by the open transaction
                if i == n - 20:
                    log.append_control(7, 0, True, 0, now_ms=1_000 + i)  # segments after it
            log.write_pending_entries()
            assert len(list(log.directory.glob("*.log"))) >= n // 60
            end = log.log_end_offset
            assert poll(reader, end - 10) == fresh_poll(log.directory, end - 10)
            assert poll(reader, end - 10)[0] == end
            with headers_looked_at(monkeypatch) as seen:
                assert poll(reader, end - 10) == fresh_poll(log.directory, end - 10)
                fresh = seen["headers"]
                seen["headers"] = 0
                poll(reader, end - 10)
            looked[n] = seen["headers"]
            assert fresh > n  # (a new reader reads every header once)
        finally:
            m.close()
    # The batches from the checkpoint (end - 10: two of 5 records), for 150 batches as for 900.
    assert looked[150] == looked[900] <= 2, f"headers looked at a poll with nothing new: {looked}"
