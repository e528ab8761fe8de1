"""The sparse indexes (.index, .timeindex) are made by their first entry, not with the segment.

A partition's first write creates only .log and .batches; the sparse files appear once an
entry is due (every index.interval.bytes) or, for .timeindex, when a segment with batches is
sealed. Recovery takes a missing one for an empty index where that is what laziness leaves,
and for damage to rebuild where it is not; lookups by offset and timestamp stay right
whatever crash or loss of those files came before.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kafka_wire.log import batch as rb
from kafka_wire.log.config import LogConfig
from kafka_wire.log.manager import LogManager
from kafka_wire.log.partition_log import PartitionLog

from kafka_wire.log.cleaner import LogCleaner

from .log_helpers import keyed_batch, make_batch

ROOT = Path(__file__).resolve().parents[3]
SPARSE = (".index", ".timeindex")
SEGMENT_FILES = {".log", ".index", ".timeindex", ".batches", ".txnindex", ".positions"}


def suffixes(directory: Path, base: int = 0) -> set[str]:
    """The segment files of ``base`` (producer snapshots share the name)."""
    return {p.suffix for p in directory.glob(f"{base:020d}.*")} & SEGMENT_FILES


def create_time_log(directory: Path, **overrides) -> PartitionLog:
    config = LogConfig(message_timestamp_type="CreateTime", **overrides)
    return PartitionLog(directory, config, now_ms=1_000)


def reopen(directory: Path, **overrides) -> PartitionLog:
    return create_time_log(directory, **overrides)


def test_a_partitions_first_small_write_creates_no_sparse_index_files(tmp_path):
    manager = LogManager(tmp_path, LogConfig())
    manager.create_topic("hub", 3)
    for p in range(3):
        manager.get_log("hub", p).append(make_batch(1, value_size=100), now_ms=1_000)
        assert suffixes(manager.partition_dir("hub", p)) == {".log", ".batches"}
    # Held descriptors count only files that exist: .log and .batches.
    assert manager.get_log("hub", 0).active_segment.open_descriptors == 2
    manager.close()


def test_the_sparse_files_appear_with_their_first_entry(tmp_path):
    log = create_time_log(tmp_path, index_interval_bytes=300)
    size = len(make_batch(1, value_size=100))
    appended = 0
    while appended <= 300:  # a batch starting at or below the interval: no entry is due
        log.append(make_batch(1, value_size=100, ts=5_000 + appended), now_ms=1_000)
        appended += size
        assert not suffixes(tmp_path) & set(SPARSE)
    log.append(make_batch(1, value_size=100, ts=9_000), now_ms=1_000)  # starts past 300 bytes
    assert suffixes(tmp_path) >= {".log", ".batches", ".index", ".timeindex"}
    seg = log.active_segment
    assert seg.offset_index.entries == 1 and seg.time_index.entries == 1
    log.close()
    again = reopen(tmp_path, index_interval_bytes=300)
    assert not again.active_segment.recovered
    assert again.offset_for_timestamp(9_000) == (9_000, appended // size)
    again.close()


def test_a_small_segment_sealed_has_a_time_index_and_no_offset_index(tmp_path):
    log = create_time_log(tmp_path)
    for i in range(3):
        log.append(make_batch(2, value_size=50, ts=7_000 - 100 * i), now_ms=1_000)
    log.roll()  # sealed: its seal entry (max timestamp 7001 at offset 1) makes the .timeindex
    log.append(make_batch(1, ts=100), now_ms=1_000)
    assert suffixes(tmp_path, 0) == {".log", ".batches", ".timeindex"}
    assert suffixes(tmp_path, 6) == {".log", ".batches"}
    log.close()
    # The clean close sealed the active segment too.
    assert suffixes(tmp_path, 6) == {".log", ".batches", ".timeindex"}
    again = reopen(tmp_path)
    assert not any(seg.recovered for seg in again.segments)  # absent .index: not damage
    assert again.offset_for_timestamp(7_001) == (7_001, 1)
    assert again.offset_for_timestamp(6_900) == (7_000, 0)
    assert again.offset_for_timestamp(50) == (7_000, 0)
    assert again.offset_for_timestamp(7_002) is None
    again.close()


def test_an_empty_segment_sealed_has_neither_sparse_file_and_reopens_clean(tmp_path):
    log = create_time_log(tmp_path)
    log.close()
    assert suffixes(tmp_path) == {".log", ".batches"}
    again = reopen(tmp_path)
    assert not again.active_segment.recovered and again.log_end_offset == 0
    again.append(make_batch(1), now_ms=1_000)
    assert again.offset_for_timestamp(0) == (1_000, 0)
    again.close()


def test_a_segment_without_timestamps_is_sealed_with_an_empty_time_index(tmp_path):
    # No batch has a timestamp: nothing to index, but the file is made so that "missing" means lost.
    log = create_time_log(tmp_path)
    log.append(make_batch(1, ts=-1), now_ms=1_000)
    assert log.active_segment.max_timestamp == -1
    log.close()
    assert (tmp_path / "00000000000000000000.timeindex").stat().st_size == 0
    again = reopen(tmp_path)
    assert not again.active_segment.recovered
    again.close()


def test_a_missing_time_index_of_a_segment_with_batches_is_rebuilt(tmp_path):
    log = create_time_log(tmp_path)
    log.append(make_batch(3, ts=4_000), now_ms=1_000)
    log.roll()
    log.close()
    (tmp_path / "00000000000000000000.timeindex").unlink()
    again = reopen(tmp_path)
    assert again.segments[0].recovered  # damage: sealing made it
    assert again.offset_for_timestamp(4_001) == (4_001, 1)
    assert (tmp_path / "00000000000000000000.timeindex").exists()
    again.close()


def test_a_time_index_seal_made_that_lost_its_data_is_rebuilt(tmp_path):
    # A clean close made the .timeindex without an fsync; a power loss kept the file, empty.
    log = create_time_log(tmp_path)
    log.append(make_batch(3, ts=4_000), now_ms=1_000)
    log.close()
    path = tmp_path / "00000000000000000000.timeindex"
    assert path.stat().st_size == 12
    path.write_bytes(b"")
    again = reopen(tmp_path)
    assert again.active_segment.recovered
    assert again.offset_for_timestamp(4_002) == (4_002, 2)
    again.close()
    assert path.stat().st_size == 12


def test_a_missing_offset_index_is_damage_only_once_an_entry_was_due(tmp_path):
    log = create_time_log(tmp_path, index_interval_bytes=200)
    for i in range(10):
        log.append(make_batch(1, value_size=100, ts=2_000 + i), now_ms=1_000)
    log.close()
    index = tmp_path / "00000000000000000000.index"
    entries = index.stat().st_size // 8
    assert entries
    index.unlink()
    again = reopen(tmp_path, index_interval_bytes=200)
    assert again.active_segment.recovered
    assert again.active_segment.offset_index.entries == entries  # rebuilt: the same entries
    assert again.offset_for_timestamp(2_005) == (2_005, 5)
    again.close()
    # Under a larger interval no entry would be due: the same loss reads as an empty index.
    index.unlink()
    third = reopen(tmp_path, index_interval_bytes=1 << 20)
    assert not third.active_segment.recovered and not index.exists()
    assert third.offset_for_timestamp(2_005) == (2_005, 5)
    third.close()


def test_descriptors_closed_while_idle_reopen_files_not_made_yet(tmp_path):
    log = create_time_log(tmp_path, index_interval_bytes=150)
    log.append(make_batch(1, value_size=100, ts=10), now_ms=1_000)
    assert log.close_idle_handles()
    assert log.active_segment.open_descriptors == 0
    for i in range(4):  # the second starts past 150 bytes: the sparse files are created now
        log.append(make_batch(1, value_size=100, ts=20 + i), now_ms=1_000)
    assert suffixes(tmp_path) == {".log", ".batches", ".index", ".timeindex"}
    assert log.active_segment.open_descriptors == 4
    assert log.close_idle_handles()
    log.append(make_batch(1, value_size=100, ts=30), now_ms=1_000)
    log.abandon()  # a crash: recovery rebuilds the active segment
    again = reopen(tmp_path, index_interval_bytes=150)
    assert again.log_end_offset == 6 and again.offset_for_timestamp(21) == (21, 2)
    again.close()


def test_a_cleaned_segment_has_every_file_so_the_swap_replaces_the_old_ones(tmp_path):
    # Old segments with .index entries, cleaned into one too small to have any: without an
    # (empty) .index of its own, the swap would leave the old one's stale entries in place.
    now = 10 * 24 * 3600 * 1000
    manager = LogManager(tmp_path, LogConfig(), clock=lambda: now)
    manager.create_topic("t", 1, {"cleanup.policy": "compact", "segment.bytes": "1024",
                                  "index.interval.bytes": "200", "message.timestamp.type": "CreateTime"})
    log = manager.get_log("t", 0)
    for i in range(40):  # two keys in the segments to clean, other keys after them
        key = b"k%d" % (i % 2 if i < 28 else i)
        log.append(keyed_batch([(key, b"v%d" % i)], ts=now), now_ms=now)
    d = manager.partition_dir("t", 0)
    assert (d / "00000000000000000014.index").stat().st_size > 0
    LogCleaner(manager).clean_now("t", 0, now_ms=now)
    kept = log.segments[1]  # offsets 26 and 27, the last of k0 and k1
    assert kept.base_offset == 14 and kept.positions is not None and kept.size < 200
    assert suffixes(d, 14) >= {".log", ".batches", ".index", ".timeindex"}
    assert kept.offset_index.entries == 0 and (d / "00000000000000000014.index").stat().st_size == 0
    assert not list(d.glob("*.cleaned"))
    manager.close()
    again = LogManager(tmp_path, LogConfig(), clock=lambda: now)
    log = again.get_log("t", 0)
    assert log.log_end_offset == 40 and not any(seg.recovered for seg in log.segments)
    again.close()


# -- a reader in another process ------------------------------------------------

_READ = """
import json, sys
from kafka_wire.log.reader import PartitionReader
r = PartitionReader(sys.argv[1])
print(json.dumps([[b.base_offset, b.position, b.append_time_ms] for b in r.batches(0)]))
"""


def read_elsewhere(directory: Path) -> list[list[int]]:
    out = subprocess.run([sys.executable, "-c", _READ, str(directory)], cwd=ROOT, capture_output=True,
                         text=True, check=True, timeout=60)
    return json.loads(out.stdout)


def test_a_reader_in_another_process_reads_segments_with_and_without_sparse_files(tmp_path):
    # 279-byte batches, 10 a segment: sealed ones have both files, the active one (3) neither.
    log = create_time_log(tmp_path, index_interval_bytes=1_000, segment_bytes=3_000)
    infos = [log.append(make_batch(2, value_size=100, ts=100 + i), now_ms=1_000 + i) for i in range(23)]
    log.write_pending_entries()  # what the broker's flusher does before other processes see entries
    expected = [[i.base_offset, i.position, i.append_time_ms] for i in infos]
    assert all(suffixes(tmp_path, s.base_offset) >= set(SPARSE) for s in log.segments[:-1])
    assert not suffixes(tmp_path, log.active_segment.base_offset) & set(SPARSE)  # active, small
    assert read_elsewhere(tmp_path) == expected
    log.close()
    for path in [p for s in SPARSE for p in tmp_path.glob(f"*{s}")]:
        path.unlink()
    assert read_elsewhere(tmp_path) == expected  # the reader needs neither file


# -- crashes and lost files at any point, against a model -----------------------


class LazyIndexMachine(RuleBasedStateMachine):
    """Appends of small and large batches with timestamps in any order, rolls, clean and
    unclean restarts, sparse index files lost, truncation; the model is every record's
    (offset, timestamp) and each batch's bytes."""

    @initialize(interval=st.sampled_from([0, 150, 700, 4096]), segment_bytes=st.integers(600, 3_000))
    def setup(self, interval, segment_bytes):
        self.dir = Path(tempfile.mkdtemp(prefix="lazyidx-"))
        self.overrides = dict(index_interval_bytes=interval, segment_bytes=segment_bytes, segment_index_bytes=96)
        self.log = reopen(self.dir, **self.overrides)
        self.batches: list[tuple[int, bytes, list[int]]] = []  # (base offset, stored bytes, record timestamps)
        self.end = 0
        self.tag = 0

    def teardown(self):
        if hasattr(self, "log"):
            self.log.abandon()
            shutil.rmtree(self.dir, ignore_errors=True)

    @rule(records=st.integers(1, 4), value_size=st.integers(1, 400), ts=st.integers(-1, 3_000))
    def append(self, records, value_size, ts):
        self.tag += 1
        blob = make_batch(records, value_size=value_size, ts=ts, tag=self.tag)
        info = self.log.append(blob, now_ms=1_000)
        assert info.base_offset == self.end
        stored = bytearray(blob)
        rb.patch_base_offset(stored, 0, self.end)
        self.batches.append((self.end, bytes(stored), [ts + i for i in range(records)]))
        self.end += records

    @rule()
    def roll(self):
        self.log.roll()

    @rule()
    def restart_clean(self):
        self.log.close()
        self.log = reopen(self.dir, **self.overrides)

    @rule()
    def crash(self):
        self.log.abandon()
        self.log = reopen(self.dir, **self.overrides)

    @rule(data=st.data())
    def crash_losing_sparse_files(self, data):
        """A power loss may lose a sparse file never fsynced (fsync_journal's three ways:
        deleted, emptied, or zero-filled at its length)."""
        self.log.abandon()
        files = sorted(p for s in SPARSE for p in self.dir.glob(f"*{s}"))
        for path in data.draw(st.lists(st.sampled_from(files), unique=True)) if files else []:
            how = data.draw(st.sampled_from(["deleted", "emptied", "zeroed"]))
            if how == "deleted":
                path.unlink()
            else:
                path.write_bytes(bytes(path.stat().st_size if how == "zeroed" else 0))
        self.log = reopen(self.dir, **self.overrides)

    @precondition(lambda self: self.end > 0)
    @rule(data=st.data())
    def truncate_to(self, data):
        offset = data.draw(st.integers(0, self.end - 1))
        self.log.truncate_to(offset)
        self.batches = [b for b in self.batches if b[0] + len(b[2]) - 1 < offset]
        self.end = self.batches[-1][0] + len(self.batches[-1][2]) if self.batches else 0
        assert self.log.log_end_offset == self.end

    @invariant()
    def reads_and_lookups_match_the_model(self):
        if not hasattr(self, "log"):
            return
        assert self.log.log_end_offset == self.end
        got, offset = b"", 0
        while offset < self.end:
            view = bytes(self.log.read(offset, 1 << 20))
            got += view
            offset = rb.validate_records(view)[-1].last_offset + 1
        assert got == b"".join(b[1] for b in self.batches)
        records = [(base + i, t) for base, _, stamps in self.batches for i, t in enumerate(stamps)]
        for target in (-1, 0, 500, 1_500, 2_999, 3_003, 4_000):
            want = next(((t, o) for o, t in records if t >= target), None)
            assert self.log.offset_for_timestamp(target) == want, target

    @invariant()
    def sparse_files_exist_only_where_due(self):
        if not hasattr(self, "log"):
            return
        interval = self.overrides["index_interval_bytes"]
        for seg in self.log.segments:
            index = seg.path_of(".index")
            last = seg.batch_index.last_entry()
            due = last is not None and last[1] > interval
            if seg is self.log.active_segment:
                assert index.exists() == due, (seg, interval)
            else:
                assert not due or index.exists()
                assert seg.path_of(".timeindex").exists() == (last is not None)


TestLazyIndexMachine = LazyIndexMachine.TestCase
TestLazyIndexMachine.settings = settings(
    max_examples=80, stateful_step_count=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
