"""The active segment's ``.batches`` entries wait in memory (index.BatchIndex.DEFER_ENTRIES)
when recovery can rebuild them exactly from the ``.log``: readers in this process see every
appended batch at once, readers in other processes once the entries are written (flusher
pass, 64 of them, roll, close, fsync, idle close), and a crash changes no position or
enqueued time of an acknowledged batch."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kafka_wire.log import batch as rb
from kafka_wire.log.config import LogConfig
from kafka_wire.log.index import BatchIndex
from kafka_wire.log.partition_log import PartitionLog
from kafka_wire.log.reader import PartitionReader

from .log_helpers import make_batch

ROOT = Path(__file__).resolve().parents[3]


class Acked:
    __slots__ = ("base", "last", "data", "position", "append_time")

    def __init__(self, base, last, data, position, append_time):
        self.base, self.last, self.data = base, last, data
        self.position, self.append_time = position, append_time


class DeferredEntriesMachine(RuleBasedStateMachine):
    """Appends (append times stamped or not, clocks that stall or go back), reads, the
    flusher's pass, idle close, fsync, roll, clean and unclean reopen, in any order,
    against the list of acknowledged batches."""

    @initialize(
        timestamp_type=st.sampled_from(["LogAppendTime", "CreateTime"]),
        fsync_each=st.booleans(),
        segment_bytes=st.sampled_from([2048, 16384]),
    )
    def setup(self, timestamp_type, fsync_each, segment_bytes):
        # In memory where there is a tmpfs: the fsync modes' calls are made, without the disk's wait.
        self.dir = Path(tempfile.mkdtemp(prefix="deferred-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
        self.config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=256,
                                message_timestamp_type=timestamp_type,
                                flush_messages=1 if fsync_each else None)
        self.now = 10_000
        self.log = PartitionLog(self.dir, self.config, now_ms=self.now)
        self.acked: list[Acked] = []
        self.tag = 0

    def teardown(self):
        if hasattr(self, "log"):
            self.log.abandon()
            shutil.rmtree(self.dir, ignore_errors=True)

    @rule(sizes=st.lists(st.integers(1, 400), min_size=1, max_size=3), tick=st.sampled_from([-3, 0, 0, 1, 7]),
          skew=st.sampled_from([-5, 0, 0, 5]), repeat=st.integers(1, 40))
    def append(self, sizes, tick, skew, repeat):
        """``repeat`` requests in a row (so 64 pending entries are reached); CreateTime
        batches carry the clock plus ``skew``: only those equal to their append time wait."""
        if self.config.flush_messages == 1:
            repeat = min(repeat, 2)  # each append fsyncs: slow on a shared disk
        for _ in range(repeat):
            self.now += tick
            blobs = []
            for size in sizes:
                self.tag += 1
                blobs.append(make_batch(1 + size % 3, value_size=size, ts=self.now + skew, tag=self.tag))
            info = self.log.append(b"".join(blobs), now_ms=self.now)
            assert info.base_offset == (self.acked[-1].last + 1 if self.acked else 0)
            pos = info.position
            for blob, header in zip(blobs, info.headers):
                # The stored bytes, made here: a read of the log would write the waiting entries.
                data = bytearray(blob)
                rb.patch_base_offset(data, 0, header.base_offset)
                if self.config.log_append_time:
                    rb.stamp_log_append_time(data, 0, len(data), rb.parse_header(blob, 0).attributes,
                                             info.append_time_ms)
                self.acked.append(Acked(header.base_offset, header.last_offset, bytes(data), pos,
                                        info.append_time_ms))
                pos += header.size
            if self.config.flush_messages == 1:  # fsynced per batch: nothing may wait
                assert self.log.active_segment.batch_index.pending_entries == 0

    @rule()
    def flusher_pass(self):
        self.log.write_pending_entries()
        assert self.log.active_segment.batch_index.pending_entries == 0
        self._reader_sees(len(self.acked))

    @rule()
    def idle_close(self):
        assert self.log.close_idle_handles()
        assert self.log.active_segment.batch_index.pending_entries == 0

    @rule()
    def fsync(self):
        self.log.flush()

    @rule()
    def roll(self):
        self.log.roll()
        self._reader_sees(len(self.acked))

    @rule()
    def reopen_clean(self):
        self.log.close()
        self._reader_sees(len(self.acked))
        self.log = PartitionLog(self.dir, self.config, now_ms=self.now)

    @rule()
    def kill_and_recover(self):
        """A crash: what waited in memory is gone, the .log bytes stay (page cache)."""
        self.log.abandon()
        self.log = PartitionLog(self.dir, self.config, now_ms=self.now)

    @rule(data=st.data())
    def read_any(self, data):
        if not self.acked:
            return
        b = data.draw(st.sampled_from(self.acked))
        assert self.log.batch_position(b.base) == (b.position, b.append_time)
        (position, append_ms, view), *_ = self.log.stored_batches(b.base, 1)
        assert (position, append_ms, bytes(view)) == (b.position, b.append_time, b.data)

    def _reader_sees(self, n: int) -> None:
        got = [(s.base_offset, s.position, s.append_time_ms) for s in PartitionReader(self.dir).batches(0)]
        assert got == [(b.base, b.position, b.append_time) for b in self.acked[:n]]

    @invariant()
    def ends_agree_and_at_most_63_wait(self):
        if hasattr(self, "log"):
            assert self.log.log_end_offset == (self.acked[-1].last + 1 if self.acked else 0)
            assert self.log.active_segment.batch_index.pending_entries < BatchIndex.DEFER_ENTRIES

    @rule()
    def every_acknowledged_batch_reads_back(self):
        """A rule, not an invariant: reading writes what waits, which a crash should find too."""
        got, offset = [], 0
        while self.acked and offset <= self.acked[-1].last:
            for position, append_ms, view in self.log.stored_batches(offset, 1 << 22):
                got.append((position, append_ms, bytes(view)))
                offset = rb.parse_header(view, 0).last_offset + 1
        assert got == [(b.position, b.append_time, b.data) for b in self.acked]

    @invariant()
    def other_processes_see_a_prefix(self):
        if hasattr(self, "log") and self.acked:
            seen = [(s.base_offset, s.position, s.append_time_ms) for s in PartitionReader(self.dir).batches(0)]
            assert seen == [(b.base, b.position, b.append_time) for b in self.acked[:len(seen)]]


TestDeferredEntriesMachine = DeferredEntriesMachine.TestCase
TestDeferredEntriesMachine.settings = settings(
    max_examples=150, stateful_step_count=25, deadline=None, derandomize=True, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def test_entries_that_recovery_could_not_rebuild_exactly_are_written_at_once(tmp_path):
    """A CreateTime batch's enqueued time is the broker's, not in the batch: its entry (and
    any waiting before it) is written by the append that acknowledges it."""
    log = PartitionLog(tmp_path, LogConfig(message_timestamp_type="CreateTime"), now_ms=0)
    try:
        log.append(make_batch(1, ts=400), now_ms=400)  # a segment's first entry never waits
        assert log.active_segment.batch_index.pending_entries == 0
        log.append(make_batch(1, ts=500), now_ms=500)  # stamp equals the append time: may wait
        assert log.active_segment.batch_index.pending_entries == 1
        log.append(make_batch(1, ts=100), now_ms=600)  # producer's clock behind: written now
        assert log.active_segment.batch_index.pending_entries == 0
        assert [b.append_time_ms for b in PartitionReader(tmp_path).batches(0)] == [400, 500, 600]
    finally:
        log.abandon()


_CHILD = r"""
import json, os, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from tests.unit.log.log_helpers import make_batch
from kafka_wire.log.config import LogConfig
from kafka_wire.log.partition_log import PartitionLog
path, kind = Path(sys.argv[1]), sys.argv[3]
log = PartitionLog(path, LogConfig(message_timestamp_type=kind), now_ms=0)
acked = []
for i in range(150):  # not a multiple of 64: some entries are still waiting at the kill
    now = 1_000 + i * 3
    info = log.append(make_batch(1 + i % 4, value_size=40 + i, ts=now if i % 5 else now - 50, tag=i), now_ms=now)
    acked.append([info.base_offset, info.last_offset, info.position, info.append_time_ms])
print(json.dumps({"acked": acked, "pending": log.active_segment.batch_index.pending_entries}), flush=True)
time.sleep(60)
"""


def _append_then_kill(path: Path, kind: str) -> dict:
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(path), str(ROOT), kind],
                             stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()  # the child acknowledged everything and waits
        assert line, "the child log process ended without acknowledging"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
        child.stdout.close()
    return json.loads(line)


def test_kill_9_loses_no_acknowledged_batch_position_or_enqueued_time(tmp_path):
    for kind in ("LogAppendTime", "CreateTime"):
        path = tmp_path / kind
        path.mkdir()
        told = _append_then_kill(path, kind)
        acked = [tuple(a) for a in told["acked"]]
        listed = [s for s in PartitionReader(path).batches(0)]
        if kind == "LogAppendTime":  # the kill came while entries waited: recovery has work to do
            assert told["pending"] > 0 and len(listed) == len(acked) - told["pending"]
        log = PartitionLog(path, LogConfig(message_timestamp_type=kind), now_ms=time.time_ns() // 10**6)
        try:
            got = []
            offset = 0
            while offset < log.log_end_offset:
                for position, append_ms, view in log.stored_batches(offset, 1 << 22):
                    h = rb.parse_header(view, 0)
                    got.append((h.base_offset, h.last_offset, position, append_ms))
                    offset = h.last_offset + 1
            assert got == acked, kind
            assert log.log_end_offset == acked[-1][1] + 1
        finally:
            log.close()
        assert [(s.base_offset, s.position, s.append_time_ms) for s in PartitionReader(path).batches(0)] == [
            (a[0], a[2], a[3]) for a in acked]
