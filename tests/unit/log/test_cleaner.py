"""Log compaction (log/cleaner.py): what survives, codecs, transactions,
producer state, the atomic swap and crashes part way through it."""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from kafka_wire.log import batch as rb
from kafka_wire.log import recovery
from kafka_wire.log import records as rec
from kafka_wire.log.cleaner import CHECKPOINT_FILE, LogCleaner
from kafka_wire.log.config import LogConfig
from kafka_wire.log.errors import StorageError
from kafka_wire.log.index import unpack_positions
from kafka_wire.log.manager import LogManager
from kafka_wire.log.reader import PartitionReader
from kafka_wire.log.segment import LogSegment

from .log_helpers import GZIP, LZ4, SNAPPY, ZSTD, keyed_batch, make_batch, read_all, records_of

DAY = 24 * 3600 * 1000
TOPIC = {"cleanup.policy": "compact", "segment.bytes": "1024", "message.timestamp.type": "CreateTime",
         "delete.retention.ms": str(DAY)}


class Env:
    def __init__(self, path: Path, *, now: int = 10 * DAY, create: bool = True, **configs: str):
        self.now = now
        self.path = path
        self.manager = LogManager(path, LogConfig(), clock=lambda: self.now)
        if create:
            self.manager.create_topic("t", 1, {**TOPIC, **configs})
        self.cleaner = LogCleaner(self.manager)

    @property
    def log(self):
        return self.manager.get_log("t", 0)

    def put(self, *items, **kw):
        info = self.log.append(keyed_batch(list(items), ts=self.now, **kw), now_ms=self.now)
        self.now += 1
        return info

    def clean(self):
        return self.cleaner.clean_now("t", 0, now_ms=self.now)

    def reopen(self, crash: bool = False):
        if crash:
            for log in self.manager.logs().values():
                log.abandon()
            self.manager._closed = True
        else:
            self.manager.close()
        self.manager = LogManager(self.path, LogConfig(), clock=lambda: self.now)
        self.cleaner = LogCleaner(self.manager)


def kv(i: int, value: str | None = "v") -> tuple[bytes, bytes | None]:
    return f"k{i}".encode(), None if value is None else f"{value}{i}".encode()


def latest(log) -> dict[bytes, tuple[int, bytes | None]]:
    out = {}
    for offset, key, value in records_of(read_all(log)):
        if key is not None:
            out[key] = (offset, value)
    return out


def event_positions(log) -> dict[int, tuple[int, int]]:
    """(Event Hubs offset, enqueued time) of every record in the log, by Kafka offset."""
    return {o: log.event_position(o) for o, _, _ in records_of(read_all(log))}


def check_positions_kept(log, before: dict[int, tuple[int, int]], directory: Path) -> dict[int, tuple[int, int]]:
    """Every surviving record has the Event Hubs offset it had in ``before``, which
    leads back to it; the broker's batches and a PartitionReader agree."""
    now = event_positions(log)
    assert now == {o: before[o] for o in now}
    for o, (event_offset, _) in now.items():
        assert log.offset_at_event_offset(event_offset) == o
    served = {}
    offset = log.log_start_offset
    while batches := log.stored_batches(offset, 1 << 20):
        for position, append_ms, data in batches:
            header = rb.parse_header(data)
            served[header.base_offset] = (position, append_ms, bytes(data))
            offset = header.next_offset
    assert {o: p[:2] for o, p in served.items()} == {o: log.batch_position(o) for o in served}
    # Another process reads the same positions and bytes (control and emptied batches left out).
    seen = {b.base_offset: (b.position, b.append_time_ms, b.data) for b in PartitionReader(directory).batches(0)}
    data_batches = {o for o, (_, _, data) in served.items() if rb.parse_header(data).records_count
                    and not rb.parse_header(data).is_control}
    assert seen == {o: served[o] for o in data_batches}
    return now


def fill(env, rounds=6, keys=10, **kw):
    for r in range(rounds):
        for i in range(keys):
            env.put((f"k{i}".encode(), f"r{r}-{i}".encode().ljust(20, b".")), **kw)
    env.log.roll()


def test_compaction_keeps_the_latest_value_of_each_key_at_its_offset(tmp_path):
    env = Env(tmp_path)
    fill(env)
    before = latest(env.log)
    end = env.log.log_end_offset
    result = env.clean()
    assert result is not None and result.records_removed == 50
    assert latest(env.log) == before
    assert [o for o, _, _ in records_of(read_all(env.log))] == sorted(o for o, _ in before.values())
    assert env.log.log_end_offset == end and result.bytes_after < result.bytes_before
    assert (tmp_path / "t-0" / CHECKPOINT_FILE).read_text().strip() == str(end)
    # Segments are grouped by their size before cleaning (as Kafka does), so the
    # small segments the first cleaning left are merged by the next one.
    again = env.clean()
    assert again.segments_before == 6 and again.segments_after == 1 and again.records_removed == 0
    assert latest(env.log) == before
    env.reopen()
    assert latest(env.log) == before


def test_the_active_segment_is_never_cleaned(tmp_path):
    env = Env(tmp_path, **{"segment.bytes": str(1 << 20)})
    for r in range(5):
        env.put(kv(1, f"r{r}"))
    assert env.clean() is None
    assert len(records_of(read_all(env.log))) == 5


def test_min_compaction_lag_protects_recent_segments(tmp_path):
    env = Env(tmp_path, **{"min.compaction.lag.ms": "1000"})
    fill(env)
    assert env.clean() is None
    env.now += 1000
    assert env.clean().records_removed == 50


def test_tombstones_stay_until_delete_retention_ms_has_passed(tmp_path):
    env = Env(tmp_path)
    fill(env, rounds=2)
    env.put(kv(3, None), kv(4, None))
    env.log.roll()
    env.clean()
    got = latest(env.log)
    assert got[b"k3"][1] is None and got[b"k4"][1] is None  # tombstones kept
    env.now += DAY
    env.clean()
    got = latest(env.log)
    assert b"k3" not in got and b"k4" not in got  # and gone with every older value
    assert got[b"k5"][1] == b"r1-5".ljust(20, b".")


def test_records_with_a_null_key_are_kept(tmp_path):
    env = Env(tmp_path)
    env.put((None, b"a"), (None, b"b"))
    fill(env, rounds=2)
    env.clean()
    assert [v for _, k, v in records_of(read_all(env.log)) if k is None] == [b"a", b"b"]


def test_topics_without_compact_are_left_alone(tmp_path):
    env = Env(tmp_path, **{"cleanup.policy": "delete"})
    fill(env)
    assert env.clean() is None and env.cleaner.run_once(env.now) is None


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_compressed_batches_are_recompressed_with_their_codec(tmp_path, codec):
    env = Env(tmp_path, **{"segment.bytes": "4096"})
    for r in range(4):  # the first batch keeps half its records: it is rebuilt
        keys = range(8) if r == 0 else range(4)
        env.put(*[(f"k{i}".encode(), f"value {r} {i}".encode() * 4) for i in keys], compression=codec)
    env.log.roll()
    before = latest(env.log)
    result = env.clean()
    assert result.records_removed == 12
    data = read_all(env.log)
    headers = [h for _, h in rb.iter_batches(data)]
    assert [(h.base_offset, h.records_count, h.compression) for h in headers] == [(0, 4, codec), (16, 4, codec)]
    assert latest(env.log) == before  # decoded by kafka-python
    body = data[rb.HEADER_SIZE : headers[0].size]
    if codec == SNAPPY:
        assert body.startswith(b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01")  # xerial, as Java writes
    if codec == LZ4:
        assert body[:4] == b"\x04\x22\x4d\x18" and body[4] == 0x60  # frame v1, independent blocks, no checksums
    if codec == GZIP:
        assert body[:2] == b"\x1f\x8b"


def test_snappy_reads_plain_and_xerial_streams():
    payload = b"records " * 10_000
    framed = rec.compress(rec.SNAPPY, payload)
    assert len(framed) > 16 and rec.decompress(rec.SNAPPY, framed) == payload
    import cramjam

    assert rec.decompress(rec.SNAPPY, bytes(cramjam.snappy.compress_raw(payload))) == payload


def test_surviving_records_keep_their_bytes_headers_included(tmp_path):
    env = Env(tmp_path)
    env.put((b"a", b"1"), (b"b", b"2"), (b"c", b"3"), headers=[("h", b"x")])
    env.put((b"b", b"22"))
    env.log.roll()
    env.clean()
    data = read_all(env.log)
    records = [r for p, h in rb.iter_batches(data) for r in DefaultRecordBatch(data[p : p + h.size])]
    assert [(r.offset, r.key, r.value, r.headers) for r in records] == [
        (0, b"a", b"1", [("h", b"x")]), (2, b"c", b"3", [("h", b"x")]), (3, b"b", b"22", []),
    ]
    first = rb.parse_header(data)
    assert (first.base_offset, first.last_offset_delta, first.records_count) == (0, 2, 2)  # range kept


def test_an_idempotent_producers_last_batch_survives_as_an_empty_batch(tmp_path):
    env = Env(tmp_path)
    env.put(kv(1, "old"), producer_id=5, base_sequence=0)
    env.put(kv(1, "new"), producer_id=6, base_sequence=0)
    env.put(kv(2, "a"), producer_id=5, base_sequence=1)
    env.put(kv(2, "b"), producer_id=7, base_sequence=0)
    env.log.roll()
    env.clean()
    headers = [h for _, h in rb.iter_batches(read_all(env.log))]
    # Producer 5's first batch goes; its last one is emptied but kept, with its sequence range.
    assert [(h.base_offset, h.producer_id, h.records_count) for h in headers] == [(1, 6, 1), (2, 5, 0), (3, 7, 1)]
    assert DefaultRecordBatch(read_all(env.log)[headers[0].size : headers[0].size + headers[1].size]).validate_crc()
    assert [(k, v) for _, k, v in records_of(read_all(env.log))] == [kv(1, "new"), kv(2, "b")]
    env.reopen(crash=True)
    for p in (tmp_path / "t-0").glob("*.snapshot"):
        p.unlink()  # rebuilt from the headers alone
    env.reopen()
    assert {p.producer_id: p.last_sequence for p in env.log.describe_producers()} == {5: 1, 6: 0, 7: 0}
    assert env.put(kv(3), producer_id=5, base_sequence=2).base_offset == 4


def test_aborted_transaction_data_is_removed_and_markers_are_kept(tmp_path):
    env = Env(tmp_path)
    log = env.log
    env.put(kv(1, "committed"), producer_id=1, transactional=True)
    env.put(kv(2, "aborted"), producer_id=2, transactional=True)
    log.append_control(1, 0, True, 0, now_ms=env.now)
    log.append_control(2, 0, False, 0, now_ms=env.now)
    env.put(kv(3, "plain"))
    log.roll()
    env.clean()
    data = read_all(log)
    assert [(k, v) for _, k, v in records_of(data)] == [kv(1, "committed"), kv(3, "plain")]
    assert sum(h.is_control for _, h in rb.iter_batches(data)) == 2
    assert log.aborted_transactions(0, log.log_end_offset) == [(2, 1)]


def test_the_cleaner_stops_at_the_last_stable_offset(tmp_path):
    env = Env(tmp_path)
    fill(env, rounds=2)
    env.put(kv(1, "open"), producer_id=1, transactional=True)
    fill(env, rounds=2)
    lso = env.log.last_stable_offset
    result = env.clean()
    assert result.end_offset <= lso
    assert [o for o, k, v in records_of(read_all(env.log)) if o >= lso] == list(range(lso, env.log.log_end_offset))


def test_event_hubs_positions_stay_strictly_increasing(tmp_path):
    env = Env(tmp_path)
    fill(env)
    fill(env, rounds=1)
    env.clean()
    env.put(kv(1))
    positions = [env.log.batch_position(h.base_offset)[0] for _, h in rb.iter_batches(read_all(env.log))]
    assert positions == sorted(set(positions))
    env.reopen()
    assert [env.log.batch_position(h.base_offset)[0] for _, h in rb.iter_batches(read_all(env.log))] == positions


def test_surviving_events_keep_their_event_hubs_offsets(tmp_path):
    """Compaction, a restart, a second compaction merging compacted segments and
    a crash never move a surviving event's Event Hubs offset."""
    env = Env(tmp_path)
    directory = tmp_path / "t-0"
    fill(env)
    for r in range(3):  # batches of several records, which compaction thins out
        env.put(*[kv(i, f"m{r}-") for i in range(r, 10, 2)])
    env.log.roll()
    before = event_positions(env.log)
    assert env.clean().records_removed
    kept = check_positions_kept(env.log, before, directory)
    assert len(kept) < len(before) and list(directory.glob("*.positions"))
    assert any(s.position_of(i) != s.base_position + s.batch_index.position(i)  # batches did move in the file
               for s in env.log.segments for i in range(s.batch_index.entries))
    env.reopen()
    assert check_positions_kept(env.log, before, directory) == kept

    fill(env, rounds=2)
    before.update(event_positions(env.log))
    again = env.clean()
    assert again.segments_after < again.segments_before and again.records_removed
    kept = check_positions_kept(env.log, before, directory)
    env.reopen(crash=True)
    assert check_positions_kept(env.log, before, directory) == kept

    # The Event Hubs offset of a removed event leads to the first survivor after it.
    for o, (event_offset, _) in before.items():
        if o not in kept:
            found = env.log.offset_at_event_offset(event_offset)
            assert max((k for k in kept if k < o), default=-1) < found
            assert found <= min((k for k in kept if k > o), default=env.log.log_end_offset)
    info = env.put(kv(1, "new"))
    assert rb.event_offset(info.position, 0) > max(p for p, _ in kept.values())


def test_a_lost_or_damaged_positions_file_falls_back_to_file_positions(tmp_path, caplog):
    env = Env(tmp_path)
    directory = tmp_path / "t-0"
    for i in range(60):
        env.put(kv(i))
    for i in range(0, 60, 3):  # every segment loses some batches and keeps others
        env.put(kv(i, "new"))
    env.log.roll()
    env.clean()
    before = event_positions(env.log)
    records = records_of(read_all(env.log))
    sidecars = sorted(directory.glob("*.positions"))
    assert len(sidecars) >= 3
    env.manager.close()
    sidecars[0].unlink()
    damaged = bytearray(sidecars[1].read_bytes())
    damaged[-1] ^= 1
    sidecars[1].write_bytes(damaged)
    env.manager = LogManager(tmp_path, LogConfig(), clock=lambda: env.now)
    log = env.log
    log.log_end_offset  # a partition is opened (and recovered) on first use
    assert "CRC mismatch" in caplog.text and not sidecars[1].exists()  # a reader falls back with the broker
    assert records_of(read_all(log)) == records
    moved = {int(p.name.split(".")[0]) for p in sidecars[:2]}
    for seg in log.segments:
        for i in range(seg.batch_index.entries):
            expected = seg.base_position + seg.batch_index.position(i)
            if seg.base_offset not in moved:  # the other compacted segments keep theirs
                expected = before[seg.base_offset + seg.batch_index.entry(i)[0]][0] // rb.EVENTS_PER_POSITION
            assert seg.position_of(i) == expected
    now = check_positions_kept(log, event_positions(log), directory)  # increasing, and found again
    assert list(now) == sorted(now) and [p for p, _ in now.values()] == sorted(p for p, _ in now.values())
    assert len({p for p, _ in now.values()}) == len(now)


def test_truncating_into_a_compacted_segment_keeps_positions_below_and_appends_above(tmp_path):
    env = Env(tmp_path)
    directory = tmp_path / "t-0"
    fill(env)
    env.clean()
    before = event_positions(env.log)
    seg = next(s for s in env.log.segments if s.positions is not None and s.batch_index.entries > 2)
    cut = max(o for o in before if o < seg.next_offset)  # its last batch (one record each) goes
    env.log.truncate_to(cut)
    assert env.log.log_end_offset == cut and env.log.active_segment is not seg
    kept = check_positions_kept(env.log, before, directory)
    assert set(kept) == {o for o in before if o < cut}
    assert len(unpack_positions(seg.path_of(".positions").read_bytes())) == seg.batch_index.entries
    info = env.put(kv(1, "after"))
    assert rb.event_offset(info.position, 0) > max(p for p, _ in kept.values())
    before[info.base_offset] = env.log.event_position(info.base_offset)
    env.reopen(crash=True)
    check_positions_kept(env.log, before, directory)


def test_recovery_cutting_a_compacted_segment_keeps_the_positions_of_what_is_left(tmp_path):
    env = Env(tmp_path)
    directory = tmp_path / "t-0"
    fill(env)
    env.clean()
    before = event_positions(env.log)
    seg = next(s for s in env.log.segments if s.positions is not None and s.batch_index.entries > 2)
    end, size = seg.next_offset, seg.size
    env.reopen(crash=True)
    # Its .batches lost and its last batch torn: recovery rebuilds it, cuts it and drops what follows.
    seg.path_of(".batches").unlink()
    os.truncate(seg.log_path, size - 1)
    env.reopen(crash=True)
    log = env.log
    kept = check_positions_kept(log, before, directory)
    assert set(kept) == {o for o in before if o < end - 1}
    cut = next(s for s in log.segments if s.base_offset == seg.base_offset)
    assert len(unpack_positions(cut.path_of(".positions").read_bytes())) == cut.batch_index.entries
    assert log.active_segment.base_offset == end - 1 and log.active_segment.positions is None
    info = env.put(kv(1, "after"))
    assert rb.event_offset(info.position, 0) > max(p for p, _ in kept.values())


def test_a_reader_holding_a_view_of_a_replaced_segment_keeps_valid_bytes(tmp_path):
    env = Env(tmp_path)
    fill(env)
    view = env.log.read(0, 1 << 20)
    copy = bytes(view)
    env.clean()
    assert bytes(view) == copy  # the old map was not closed under the reader
    view.release()


def test_the_swap_checks_the_cleaned_segments_in_full_before_it_takes_the_partition_lock(tmp_path, monkeypatch):
    # The full check reads every index entry (~120 ms for 200,000 batches): appends to the
    # partition would wait for it. The files are the cleaner's own until renamed.
    env = Env(tmp_path)
    fill(env)
    log = env.log
    under_lock = []
    real = LogSegment._index_problem

    def spy(self, full):
        if full:
            under_lock.append(log._lock._is_owned())
        return real(self, full)

    monkeypatch.setattr(LogSegment, "_index_problem", spy)
    before = latest(log)
    assert env.clean() is not None
    assert under_lock and not any(under_lock), under_lock
    assert latest(env.log) == before


def test_a_cleaned_segment_failing_its_full_check_is_not_swapped_in(tmp_path, monkeypatch, caplog):
    env = Env(tmp_path)
    fill(env)
    log = env.log
    segments, contents = log.segments, read_all(log)
    real = log.swap_cleaned

    def damage_then_swap(groups, **kw):
        path = log.directory / f"{groups[-1][1]:020d}.batches.cleaned"
        data = bytearray(path.read_bytes())
        data[-16:] = data[-32:-16]  # the last entry repeats the one before: out of order
        path.write_bytes(bytes(data))
        return real(groups, **kw)

    monkeypatch.setattr(log, "swap_cleaned", damage_then_swap)
    assert env.clean() is None
    assert "fails its check" in caplog.text
    assert log.segments == segments and read_all(log) == contents
    assert not list(log.directory.glob("*.cleaned"))
    monkeypatch.undo()
    assert env.clean() is not None  # a later round, its copy undamaged, compacts


def test_leftover_cleaned_files_without_a_marker_are_deleted(tmp_path):
    env = Env(tmp_path)
    fill(env)
    before = read_all(env.log)
    directory = tmp_path / "t-0"
    (directory / "00000000000000000000.log.cleaned").write_bytes(b"junk")
    env.reopen(crash=True)
    assert read_all(env.log) == before
    assert not list(directory.glob("*.cleaned"))


@pytest.mark.parametrize("fail_at", range(0, 22))  # the cleaned files, the marker, the first group's renames
def test_a_crash_during_the_swap_leaves_the_old_or_the_new_segments(tmp_path, monkeypatch, fail_at):
    env = Env(tmp_path)
    fill(env)
    old = read_all(env.log)
    positions = event_positions(env.log)
    # Learn the outcome of an uninterrupted cleaning on a copy.
    twin_path = tmp_path.parent / (tmp_path.name + "-copy")
    shutil.copytree(tmp_path, twin_path)
    twin = Env(twin_path, now=env.now, create=False)
    twin.clean()
    expected_new = read_all(twin.log)
    twin.manager.close()
    assert expected_new != old

    calls = {"n": 0}
    real_replace, real_atomic = os.replace, recovery.write_atomic

    class Crash(Exception):
        pass

    def step():
        if calls["n"] == fail_at:
            raise Crash()
        calls["n"] += 1

    def replace(src, dst):
        step()
        real_replace(src, dst)

    def atomic(path, data, **kw):
        step()
        real_atomic(path, data, **kw)

    monkeypatch.setattr(recovery.os, "replace", replace)
    monkeypatch.setattr(recovery, "write_atomic", atomic)
    try:
        env.clean()
        crashed = False
    except Crash:
        crashed = True
    monkeypatch.undo()
    env.reopen(crash=True)
    after = read_all(env.log)
    assert after in (old, expected_new)
    if not crashed:
        assert after == expected_new
    assert not list((tmp_path / "t-0").glob("*.cleaned")) and not (tmp_path / "t-0" / "cleaner-swap").exists()
    check_positions_kept(env.log, positions, tmp_path / "t-0")
    env.clean()  # and cleaning again reaches the same result
    assert read_all(env.log) == expected_new
    check_positions_kept(env.log, positions, tmp_path / "t-0")


def test_a_reader_never_sees_a_moved_position_at_any_step_of_the_swap(tmp_path, monkeypatch):
    env = Env(tmp_path)
    directory = tmp_path / "t-0"
    fill(env)
    for r in range(3):
        env.put(*[kv(i, f"m{r}-") for i in range(r, 10, 2)])
    env.log.roll()
    env.clean()  # the second cleaning below merges segments that already have .positions
    fill(env, rounds=2)
    cached = PartitionReader(directory)
    before = {b.base_offset: b.position for b in cached.batches(0)}
    real_replace = os.replace
    steps = []

    def replace(src, dst):
        real_replace(src, dst)
        for reader in (PartitionReader(directory), cached):
            for b in reader.batches(0):
                assert b.position == before[b.base_offset], (Path(dst).name, b.base_offset)
        steps.append(Path(dst).name)

    monkeypatch.setattr(recovery.os, "replace", replace)
    assert env.clean().segments_after < len(before)
    assert any(name.endswith(".positions") for name in steps) and any(name.endswith(".log") for name in steps)


def test_a_failed_swap_takes_the_log_offline_until_it_is_reopened(tmp_path, monkeypatch):
    env = Env(tmp_path)
    fill(env)

    real_replace = os.replace

    def broken(src, dst):  # the marker is written, the renames fail
        if str(src).endswith(".cleaned"):
            raise OSError(5, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr(recovery.os, "replace", broken)
    with pytest.raises(StorageError, match="offline"):
        env.clean()
    assert env.log.closed
    monkeypatch.undo()
    env.reopen(crash=True)
    assert len(records_of(read_all(env.log))) == 10


def test_run_once_cleans_the_dirtiest_log_above_its_ratio(tmp_path):
    env = Env(tmp_path, **{"min.cleanable.dirty.ratio": "0.5"})
    env.manager.create_topic("u", 1, {**TOPIC, "min.cleanable.dirty.ratio": "0.9"})
    fill(env)
    u = env.manager.get_log("u", 0)
    for i in range(30):
        u.append(keyed_batch([kv(i % 3)], ts=env.now), now_ms=env.now)
    u.roll()
    assert env.cleaner.dirty_ratio(env.log, env.now) == (1.0, False)
    result = env.cleaner.run_once(env.now)
    assert result is not None and result.topic in ("t", "u")
    second = env.cleaner.run_once(env.now)
    assert {result.topic, second.topic} == {"t", "u"}
    assert env.cleaner.run_once(env.now) is None  # nothing dirty left
    assert env.cleaner.dirty_ratio(env.log, env.now)[0] == 0.0


def test_max_compaction_lag_forces_a_clean_below_the_ratio(tmp_path):
    env = Env(tmp_path, **{"min.cleanable.dirty.ratio": "0.99", "max.compaction.lag.ms": "5000"})
    fill(env)
    env.clean()
    fill(env, rounds=1)  # a little dirt on a big clean part
    ratio, must = env.cleaner.dirty_ratio(env.log, env.now)
    assert ratio < 0.99 and not must
    env.now += 5000
    assert env.cleaner.dirty_ratio(env.log, env.now)[1]
    assert env.cleaner.run_once(env.now) is not None


def test_the_background_thread_compacts_dirty_logs(tmp_path):
    env = Env(tmp_path)
    fill(env)
    env.cleaner = LogCleaner(env.manager, interval_ms=20, clock=lambda: env.now)
    env.cleaner.start()
    try:
        deadline = time.monotonic() + 10
        while len(records_of(read_all(env.log))) > 10 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        env.cleaner.stop()
    assert len(records_of(read_all(env.log))) == 10


@pytest.mark.parametrize("policy", ["compact", "compact,delete"])
def test_cleaning_runs_while_the_owner_appends_reads_and_deletes(tmp_path, policy):
    env = Env(tmp_path, **{"segment.bytes": "2048", "cleanup.policy": policy, "retention.bytes": "6000"})
    cleaner = LogCleaner(env.manager, interval_ms=1, clock=lambda: env.now)
    cleaner.start()
    model = {}
    positions = {}

    def check():
        start = env.log.log_start_offset
        assert latest(env.log) == {k: v for k, v in model.items() if v[0] >= start}
        for o, found in event_positions(env.log).items():
            assert found in (positions[o], None)  # None: compacted away since it was read

    try:
        for n in range(1200):
            key = f"k{n % 17}".encode()
            info = env.put((key, f"v{n}".encode()))
            model[key] = (info.base_offset, f"v{n}".encode())
            positions[info.base_offset] = (rb.event_offset(info.position, 0), info.append_time_ms)
            if n % 10 == 0:
                env.log.enforce_retention(env.now)  # races with the cleaner over old segments
            if n % 100 == 0:
                check()  # reads race with swaps
    finally:
        cleaner.stop()
    check()
    assert len(records_of(read_all(env.log))) < 1200  # it did clean meanwhile


# -- the compaction property ----------------------------------------------------------

writes = st.lists(
    st.tuples(st.integers(0, 7), st.one_of(st.none(), st.binary(min_size=1, max_size=40)), st.integers(0, 3)),
    min_size=1, max_size=60,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(writes=writes, codec=st.sampled_from([0, 0, GZIP, LZ4]), clean_every=st.integers(5, 30),
       retention=st.sampled_from([0, 50, 10**9]))
def test_compaction_preserves_the_latest_value_of_every_key(writes, codec, clean_every, retention):
    """Random writes (values and tombstones), rolls and cleanings: the latest
    value of each key and its offset never change, every surviving record is
    one that was written at that offset and keeps its Event Hubs offset, and
    tombstones go only after delete.retention.ms."""
    directory = Path(tempfile.mkdtemp(prefix="clean-"))
    try:
        env = Env(directory, **{"segment.bytes": "512", "delete.retention.ms": str(retention)})
        written: dict[int, tuple[bytes, bytes | None]] = {}
        positions: dict[int, tuple[int, int]] = {}
        model: dict[bytes, tuple[int, bytes | None]] = {}
        for n, (key, value, tick) in enumerate(writes):
            k = f"key{key}".encode()
            info = env.put((k, value), compression=codec)
            written[info.base_offset] = (k, value)
            positions[info.base_offset] = env.log.event_position(info.base_offset)
            model[k] = (info.base_offset, value)
            env.now += tick * 20
            if n % clean_every == clean_every - 1:
                env.log.roll()
                env.clean()
        env.log.roll()
        env.clean()
        got = latest(env.log)
        for k, (offset, value) in model.items():
            if k in got:
                assert got[k] == (offset, value)
            else:  # only an expired tombstone may vanish
                assert value is None and retention < 10**9
        for offset, k, value in records_of(read_all(env.log)):
            assert written[offset] == (k, value)
        offsets = [o for o, _, _ in records_of(read_all(env.log))]
        assert offsets == sorted(set(offsets))
        kept = check_positions_kept(env.log, positions, directory / "t-0")  # Event Hubs offsets never move
        env.reopen()
        assert check_positions_kept(env.log, positions, directory / "t-0") == kept
        env.manager.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_make_batch_helper_is_still_usable_for_compacted_topics(tmp_path):
    env = Env(tmp_path)
    env.log.append(make_batch(3), now_ms=env.now)  # null keys
    env.log.roll()
    env.clean()
    assert len(records_of(read_all(env.log))) == 3
    assert struct.calcsize(">hqqqq") == 34
