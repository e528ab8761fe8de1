"""PartitionLog against a list-of-batches model, with rolls, crashes and torn tails."""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kafka_wire.log import batch as rb
from kafka_wire.log.config import LogConfig
from kafka_wire.log.partition_log import PartitionLog

from .log_helpers import make_batch


class Batch:
    __slots__ = ("base", "last", "data", "position", "append_time")

    def __init__(self, base, last, data, position, append_time):
        self.base, self.last, self.data = base, last, data
        self.position, self.append_time = position, append_time


class PartitionLogMachine(RuleBasedStateMachine):
    """The model: the batches in the log, its start offset, and each batch's
    stored bytes, Event Hubs position and append time."""

    @initialize(
        segment_bytes=st.integers(1024, 4096),
        index_interval=st.sampled_from([0, 100, 512]),
        preallocate=st.booleans(),
    )
    def setup(self, segment_bytes, index_interval, preallocate):
        self.dir = Path(tempfile.mkdtemp(prefix="plog-"))
        self.config = LogConfig(
            segment_bytes=segment_bytes, index_interval_bytes=index_interval, preallocate=preallocate,
            message_timestamp_type="CreateTime", segment_index_bytes=120, retention_ms=500,
        )
        self.now = 1_000
        self.log = PartitionLog(self.dir, self.config, now_ms=self.now)
        self.batches: list[Batch] = []
        self.start = 0
        self.end = 0
        self.next_position = 0
        self.tag = 0

    def teardown(self):
        if hasattr(self, "log"):
            self.log.abandon()
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- rules ------------------------------------------------------------------

    @rule(
        shapes=st.lists(st.tuples(st.integers(1, 5), st.integers(1, 300)), min_size=1, max_size=3),
        tick=st.integers(0, 200),
    )
    def append(self, shapes, tick):
        self.now += tick
        blobs = []
        for records, size in shapes:
            self.tag += 1
            blobs.append(make_batch(records, value_size=size, ts=self.now, tag=self.tag))
        info = self.log.append(b"".join(blobs), now_ms=self.now)
        assert info.base_offset == self.end
        # A roll may happen before this append; its position follows the last batch either way.
        assert info.position == self.next_position
        pos = info.position
        for blob, header in zip(blobs, info.headers):
            stored = bytearray(blob)
            rb.patch_base_offset(stored, 0, header.base_offset)
            self.batches.append(Batch(header.base_offset, header.last_offset, bytes(stored), pos, info.append_time_ms))
            pos += len(blob)
        self.end = info.last_offset + 1
        self.next_position = pos

    @precondition(lambda self: self.end > self.start)
    @rule(data=st.data(), max_bytes=st.integers(1, 3000))
    def read(self, data, max_bytes):
        offset = data.draw(st.integers(self.start, self.end - 1))
        view = bytes(self.log.read(offset, max_bytes))
        i = next(n for n, b in enumerate(self.batches) if b.last >= offset)
        expected = b""
        for b in self.batches[i:]:
            if expected and len(expected) + len(b.data) > max_bytes:
                break
            expected += b.data
        # The log may stop early at a segment end, but only at a batch boundary of the model.
        assert view and expected.startswith(view), (offset, max_bytes)
        assert view.startswith(self.batches[i].data)

    @rule()
    def read_at_end(self):
        assert len(self.log.read(self.end, 100)) == 0

    @rule()
    def roll(self):
        self.log.roll()

    @rule()
    def reopen_clean(self):
        self.log.close()
        self.log = PartitionLog(self.dir, self.config, now_ms=self.now)

    @rule()
    def reopen_after_crash(self):
        self.log.abandon()
        self.log = PartitionLog(self.dir, self.config, now_ms=self.now)

    @rule(kind=st.sampled_from(["zeros", "random", "partial", "header-only"]), size=st.integers(1, 200))
    def torn_tail(self, kind, size):
        """Bytes a crash could leave after the last acknowledged batch."""
        active = self.log.active_segment
        path, pos = active.log_path, active.size
        self.log.abandon()
        if kind == "zeros":
            junk = bytes(size)
        elif kind == "random":
            junk = random.Random(size).randbytes(size)  # seeded: the example replays
        else:
            batch = bytearray(make_batch(3, value_size=100))
            rb.patch_base_offset(batch, 0, self.end)
            junk = bytes(batch[: min(size, len(batch) - 1)] if kind == "partial" else batch[:61])
        fd = os.open(path, os.O_WRONLY)
        try:
            os.pwrite(fd, junk, pos)
        finally:
            os.close(fd)
        self.log = PartitionLog(self.dir, self.config, now_ms=self.now)

    @precondition(lambda self: self.end > self.start)
    @rule(data=st.data())
    def delete_records_before(self, data):
        offset = data.draw(st.integers(self.start, self.end))
        self.log.delete_records_before(offset)
        self.start = max(self.start, offset)
        self._drop_below_start()

    @rule(age=st.integers(0, 2_000))
    def enforce_retention(self, age):
        self.now += age
        self.log.enforce_retention(self.now)
        new_start = self.log.log_start_offset
        assert new_start >= self.start
        for b in self.batches:
            if b.last < new_start and b.base >= self.start:
                assert b.append_time < self.now - self.config.retention_ms  # only expired data goes
            if b.append_time < self.now - self.config.retention_ms and b.base >= self.start:
                assert b.last < new_start  # and all of it, whatever the segment size
        self.start = new_start
        self._drop_below_start()

    @precondition(lambda self: self.end > self.start)
    @rule(data=st.data())
    def truncate_to(self, data):
        offset = data.draw(st.integers(self.start, self.end - 1))
        self.log.truncate_to(offset)
        keep = [b for b in self.batches if b.last < offset]
        cut = next(b for b in self.batches if b.last >= offset)
        self.batches = keep
        self.end = cut.base
        self.next_position = cut.position
        self.start = min(self.start, self.end)
        assert self.log.log_start_offset == self.start

    def _drop_below_start(self):
        self.batches = [b for b in self.batches if b.last >= self.start]

    # -- invariants -------------------------------------------------------------

    @invariant()
    def offsets_match(self):
        if not hasattr(self, "log"):
            return
        assert self.log.log_end_offset == self.end
        assert self.log.log_start_offset == self.start

    @invariant()
    def everything_reads_back_with_stable_positions(self):
        if not hasattr(self, "log") or self.end == self.start:
            return
        got, offset = b"", self.start
        while offset < self.end:
            view = self.log.read(offset, 1 << 20)
            headers = rb.validate_records(bytes(view))
            got += bytes(view)
            offset = headers[-1].last_offset + 1
        assert got == b"".join(b.data for b in self.batches)
        for b in self.batches[:: max(1, len(self.batches) // 5)]:
            assert self.log.batch_position(b.last) == (b.position, b.append_time)


TestPartitionLogMachine = PartitionLogMachine.TestCase
TestPartitionLogMachine.settings = settings(
    max_examples=120, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
