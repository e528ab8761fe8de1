"""log.reader: a PartitionReader kept across a truncation of the log it reads.

PartitionLog.truncate_to (a geo promotion, a replica cut to its leader) cuts the segment
holding the offset in place: the ``.log`` keeps its inode and (preallocated) length and
the ``.batches`` index is rebuilt. A reader that kept the cut batches' headers went on
listing them: its stable end stayed past the log end and every read of them raised
LogChanged, so Capture (spark's LogBackend.read, five tries) stopped for good.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire.log.config import LogConfig
from kafka_wire.log.partition_log import PartitionLog
from kafka_wire.log.reader import PartitionReader

from .log_helpers import make_batch

CONFIG = LogConfig(segment_bytes=4096)


@contextmanager
def open_log(path) -> Iterator[PartitionLog]:
    log = PartitionLog(path, CONFIG, now_ms=0)
    try:
        yield log
    finally:
        log.close()


def append(log: PartitionLog, n: int, *, tag: int, value_size: int = 100) -> None:
    for i in range(n):
        log.append(make_batch(2, value_size=value_size, tag=tag + i), now_ms=0)
    log.write_pending_entries()  # what the broker's flusher does about once a second


def holds(reader: PartitionReader) -> list[tuple]:
    return [(b.base_offset, b.next_offset, b.position, b.data) for b in reader.batches(0)]


def test_a_kept_reader_reads_what_the_active_segment_holds_after_a_cut_and_new_appends(tmp_path):
    with open_log(tmp_path) as log:
        append(log, 10, tag=0)
        reader = PartitionReader(tmp_path)
        assert reader.stable_end() == 20 and len(holds(reader)) == 10
        log.truncate_to(14)
        append(log, 1, tag=99, value_size=150)
        assert log.log_end_offset == 16
        assert reader.stable_end() == 16
        assert [b[:2] for b in holds(reader)][-2:] == [(12, 14), (14, 16)]
        assert holds(reader) == holds(PartitionReader(tmp_path))


def test_a_batch_appended_at_the_cut_with_the_same_offset_position_and_time_is_read_anew(tmp_path):
    """Its .batches entry is the cut one's, byte for byte: only the .log tells them apart."""
    with open_log(tmp_path) as log:
        append(log, 5, tag=0)
        reader = PartitionReader(tmp_path)
        before = holds(reader)
        log.truncate_to(8)
        append(log, 1, tag=50)  # same size, same append time, other values
        after = holds(reader)
        assert [b[:3] for b in after] == [b[:3] for b in before]
        assert after[-1][3] != before[-1][3] and after == holds(PartitionReader(tmp_path))


def test_a_cut_into_a_sealed_segment_drops_the_segments_after_it_and_reads_on(tmp_path):
    with open_log(tmp_path) as log:
        append(log, 60, tag=0)  # 4 KiB segments: several of them
        bases = [s.base_offset for s in log.segments]
        assert len(bases) >= 3
        reader = PartitionReader(tmp_path)
        assert reader.stable_end() == 120
        cut = bases[1] + 2  # inside the second segment, which becomes the active one
        log.truncate_to(cut)
        assert reader.stable_end() == cut
        append(log, 3, tag=200, value_size=40)
        assert reader.stable_end() == cut + 6
        assert holds(reader) == holds(PartitionReader(tmp_path))


@settings(max_examples=40, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["append", "truncate", "roll"]), st.integers(0, 40),
                          st.integers(10, 300)), min_size=1, max_size=12))
def test_a_kept_reader_always_reads_what_a_new_reader_reads(tmp_path_factory, steps):
    directory = tmp_path_factory.mktemp("p")
    with open_log(directory) as log:
        reader = PartitionReader(directory)
        for n, (op, arg, size) in enumerate(steps):
            if op == "append":
                append(log, arg % 6 + 1, tag=n * 100, value_size=size)
            elif op == "truncate" and log.log_end_offset:
                log.truncate_to(arg % log.log_end_offset)
                log.write_pending_entries()
            elif op == "roll":
                log.roll()
            assert reader.stable_end() == log.log_end_offset
            assert holds(reader) == holds(PartitionReader(directory))
