"""The log's descriptors: maps hold none, and a FileHandleCache bounds the
write descriptors of active segments however many partitions there are."""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
import time
import types
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from kafka_wire.log.config import LogConfig
from kafka_wire.log import handles
from kafka_wire.log.handles import FileHandleCache
from kafka_wire.log.manager import LogManager
from kafka_wire.log.mapping import map_read_only, release_map

from .log_helpers import make_batch

ACTIVE_SEGMENT_FDS = 4  # .log, .index, .timeindex, .batches


def open_fds(root: Path) -> int:
    """This process's descriptors open on files under ``root``: only the test's own, since
    others (an earlier test's sockets, closed by the collector or a thread while this one
    runs) moved a count of every descriptor (157 -> 101 in one whole-suite run)."""
    prefix = str(Path(root).resolve()) + os.sep
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed since the listing (the listing's own descriptor among them)
            continue
        n += target.startswith(prefix)
    return n


def mapped(path: Path) -> bool:
    return str(path) in Path("/proc/self/maps").read_text()


class Owner:
    def __init__(self, cache: FileHandleCache, name: str, busy: bool = False):
        self.cache, self.name, self.busy, self.closed = cache, name, busy, 0

    def close_idle_handles(self) -> bool:
        if self.busy:
            return False
        self.closed += 1
        self.cache.forget(self)
        return True

    def __repr__(self) -> str:
        return self.name


# -- maps ----------------------------------------------------------------------


def test_maps_hold_no_descriptor(tmp_path):
    paths = []
    for i in range(50):
        path = tmp_path / f"{i}.log"
        path.write_bytes(bytes([i]) * 8192)
        paths.append(path)
    before = open_fds(tmp_path)
    maps = [map_read_only(p, None, 8192) for p in paths]
    assert open_fds(tmp_path) == before
    assert [m[100] for m in maps] == list(range(50))
    for m in maps:
        release_map(m)


def test_a_view_outlives_its_released_map_and_unmaps_with_it(tmp_path):
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"abcdefgh" * 1024)
    m = map_read_only(path, None, 8192)
    view = memoryview(m)[8:16]  # as a Fetch response's socket write holds one
    release_map(m)
    del m
    gc.collect()
    assert bytes(view) == b"abcdefgh" and mapped(path)
    view.release()
    del view
    gc.collect()
    assert not mapped(path)


# -- the cache -------------------------------------------------------------------


def test_the_least_recently_used_owner_is_closed_first():
    cache = FileHandleCache(max_open_files=8)
    a, b, c = (Owner(cache, n) for n in "abc")
    cache.touch(a, 4)
    cache.touch(b, 4)
    cache.touch(a, 4)  # a is now the most recent
    cache.touch(c, 4)
    assert (a.closed, b.closed, c.closed) == (0, 1, 0)
    assert cache.open_files == 8 and len(cache) == 2


def test_a_busy_owner_is_skipped_not_waited_for():
    cache = FileHandleCache(max_open_files=8)
    a, b, c = Owner(cache, "a", busy=True), Owner(cache, "b"), Owner(cache, "c")
    cache.touch(a, 4)
    cache.touch(b, 4)
    cache.touch(c, 4)
    assert (a.closed, b.closed) == (0, 1)
    assert cache.open_files == 8


def test_the_owner_touching_is_never_its_own_victim():
    cache = FileHandleCache(max_open_files=1)
    a = Owner(cache, "a")
    cache.touch(a, 4)  # over the cap alone: a partition being written keeps its files
    assert a.closed == 0 and cache.open_files == 4


def test_lowering_the_cap_closes_at_once_and_zero_is_refused():
    cache = FileHandleCache(max_open_files=100)
    owners = [Owner(cache, str(i)) for i in range(10)]
    for o in owners:
        cache.touch(o, 4)
    cache.max_open_files = 12
    assert cache.open_files == 12 and [o.closed for o in owners] == [1] * 7 + [0] * 3
    with pytest.raises(ValueError, match="at least 1"):
        cache.max_open_files = 0


def test_owners_idle_past_the_timeout_close_and_recent_or_busy_ones_keep_their_files(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(handles, "time", types.SimpleNamespace(monotonic=lambda: clock[0]))
    cache = FileHandleCache(max_open_files=100)
    old, busy, recent = Owner(cache, "old"), Owner(cache, "busy", busy=True), Owner(cache, "recent")
    cache.touch(old, 4)
    cache.touch(busy, 4)
    clock[0] = 105.0
    cache.touch(recent, 4)
    clock[0] = 111.0
    assert cache.close_idle(10) == 1  # old and busy were idle 11 s, recent 6 s; busy is skipped
    assert (old.closed, busy.closed, recent.closed) == (1, 0, 0)
    assert cache.open_files == 8 and len(cache) == 2
    busy.busy = False
    clock[0] = 116.0
    assert cache.close_idle(10) == 2
    assert cache.open_files == 0 and len(cache) == 0


# -- partition logs under a cap ---------------------------------------------------


def test_idle_partitions_close_their_files_and_hold_no_index_maps(tmp_path):
    cache = FileHandleCache(max_open_files=1000)
    before = open_fds(tmp_path)
    manager = LogManager(tmp_path, LogConfig(), handles=cache)
    manager.create_topic("t", 20)
    for p in range(20):
        for i in range(3):  # batches over index.interval.bytes: every index gets entries
            manager.get_log("t", p).append(make_batch(2, value_size=3000, tag=p, ts=1_000 + i), now_ms=1_000)
    assert open_fds(tmp_path) == before + 20 * ACTIVE_SEGMENT_FDS
    # Appends write with pwrite and keep the index entries they read: no partition has
    # mapped its log or its indexes.
    assert not any(mapped(path) for path in tmp_path.glob("t-*/*") if path.is_file())
    assert cache.close_idle(0, now=time.monotonic() + 1) == 20
    assert open_fds(tmp_path) == before and cache.open_files == 0
    for p in range(20):  # written again: reopened, and the data are whole
        log = manager.get_log("t", p)
        log.append(make_batch(1, tag=100 + p), now_ms=1_001)
        assert log.log_end_offset == 7 and len(log.read(0, 1 << 20)) > 0
    manager.close()
    assert open_fds(tmp_path) == before and cache.open_files == 0


def test_many_partitions_stay_under_the_cap_and_round_trip(tmp_path):
    cache = FileHandleCache(max_open_files=8)
    config = LogConfig(message_timestamp_type="CreateTime")  # stored bytes as sent
    before = open_fds(tmp_path)
    manager = LogManager(tmp_path, config, handles=cache)
    manager.create_topic("t", 300)
    assert open_fds(tmp_path) == before  # creation makes directories only
    sent = {}
    for p in range(0, 300, 7):
        sent[p] = make_batch(3, tag=p)
        manager.get_log("t", p).append(sent[p], now_ms=1_000)
        assert open_fds(tmp_path) <= before + 8
    for p in range(0, 300, 7):
        manager.get_log("t", p).append(make_batch(1, tag=1000 + p), now_ms=1_001)  # reopens evicted files
        assert cache.open_files <= 8 and open_fds(tmp_path) <= before + 8
    manager.close()
    assert open_fds(tmp_path) == before and cache.open_files == 0

    manager = LogManager(tmp_path, config, handles=cache)
    for p, data in sent.items():
        log = manager.get_log("t", p)
        assert (log.log_start_offset, log.log_end_offset) == (0, 4)
        assert bytes(log.read(0, 1 << 20, max_offset=3)) == data
    assert open_fds(tmp_path) == before  # reads hold nothing
    manager.close()


def test_a_log_busy_on_another_thread_keeps_its_files_and_nobody_waits(tmp_path):
    import threading

    cache = FileHandleCache(max_open_files=3)  # an append holds 2 (.log, .batches): one log fits
    manager = LogManager(tmp_path, LogConfig(), handles=cache)
    manager.create_topic("t", 3)
    busy = manager.get_log("t", 0)
    busy.append(make_batch(1), now_ms=1)
    held, release = threading.Event(), threading.Event()

    def hold():  # as a flush or the cleaner's swap holds the partition lock
        with busy._lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(30)
        manager.get_log("t", 1).append(make_batch(1), now_ms=1)  # over the cap: the busy log is passed over
        assert busy.active_segment.open_descriptors == 2
        assert cache.open_files == 4
    finally:
        release.set()
        holder.join(30)
    manager.get_log("t", 2).append(make_batch(1), now_ms=1)  # now the least recent ones close
    assert busy.active_segment.open_descriptors == 0 and cache.open_files == 2
    assert [manager.get_log("t", p).append(make_batch(1), now_ms=2).base_offset for p in range(3)] == [1, 1, 1]
    manager.close()


def test_an_untouched_partition_keeps_its_clean_shutdown_marker(tmp_path):
    manager = LogManager(tmp_path, LogConfig(), handles=FileHandleCache(8))
    manager.create_topic("t", 2)
    manager.get_log("t", 0).append(make_batch(1), now_ms=1)
    manager.get_log("t", 1).append(make_batch(1), now_ms=1)
    manager.close()
    manager = LogManager(tmp_path, LogConfig(), handles=FileHandleCache(8))
    manager.get_log("t", 0).log_end_offset  # opened: its marker is consumed until the next close
    assert not (tmp_path / "t-0" / "clean-shutdown").exists()
    assert (tmp_path / "t-1" / "clean-shutdown").exists()
    for p in range(2):
        manager.get_log("t", p).abandon()  # a crash
    manager = LogManager(tmp_path, LogConfig(), handles=FileHandleCache(8))
    assert [manager.get_log("t", p).log_end_offset for p in range(2)] == [1, 1]
    manager.close()


# -- a tiny cap gives the same log as an unbounded one ------------------------------------


class TinyCapMachine(RuleBasedStateMachine):
    """Two managers fed the same operations, one with a cap of 1 to 9
    descriptors and one without a practical cap: every answer must match."""

    PARTITIONS = 6

    @initialize(cap=st.integers(1, 9), segment_bytes=st.sampled_from([700, 1 << 20]),
                flush_messages=st.sampled_from([None, 1]))
    def setup(self, cap, segment_bytes, flush_messages):
        self.root = Path(tempfile.mkdtemp(prefix="handles-"))
        self.now = 1_000
        self.cap = cap
        self.small_cache, self.big_cache = FileHandleCache(cap), FileHandleCache(1 << 20)
        self.configs = {"segment.bytes": str(segment_bytes), "message.timestamp.type": "CreateTime"}
        if flush_messages:
            self.configs["flush.messages"] = str(flush_messages)
        self.small, self.big = self._open()
        for manager in (self.small, self.big):
            manager.create_topic("t", self.PARTITIONS, self.configs)
        self.tag = 0

    def _open(self) -> tuple[LogManager, LogManager]:
        return (LogManager(self.root / "small", LogConfig(), clock=lambda: self.now, handles=self.small_cache),
                LogManager(self.root / "big", LogConfig(), clock=lambda: self.now, handles=self.big_cache))

    def teardown(self):
        if hasattr(self, "small"):
            for manager in (self.small, self.big):
                for log in manager.logs().values():
                    log.abandon()
            shutil.rmtree(self.root, ignore_errors=True)

    def both(self, p: int):
        return self.small.get_log("t", p), self.big.get_log("t", p)

    @rule(p=st.integers(0, PARTITIONS - 1), records=st.integers(1, 4), size=st.integers(1, 200),
          tick=st.integers(0, 50))
    def append(self, p, records, size, tick):
        self.now += tick
        self.tag += 1
        data = make_batch(records, value_size=size, ts=self.now, tag=self.tag)
        a, b = (log.append(data, now_ms=self.now) for log in self.both(p))
        assert a._replace(headers=[]) == b._replace(headers=[]) and a.headers == b.headers

    @rule(p=st.integers(0, PARTITIONS - 1), where=st.floats(0, 1), max_bytes=st.integers(1, 3000))
    def read(self, p, where, max_bytes):
        small, big = self.both(p)
        start, end = big.log_start_offset, big.log_end_offset
        assert (small.log_start_offset, small.log_end_offset) == (start, end)
        offset = start + int((end - start) * where)
        assert bytes(small.read(offset, max_bytes)) == bytes(big.read(offset, max_bytes))

    @rule(p=st.integers(0, PARTITIONS - 1))
    def roll(self, p):
        for log in self.both(p):
            log.roll()

    @rule(p=st.integers(0, PARTITIONS - 1))
    def flush(self, p):
        for log in self.both(p):
            log.flush()

    @rule(p=st.integers(0, PARTITIONS - 1), where=st.floats(0, 1))
    def delete_records(self, p, where):
        small, big = self.both(p)
        offset = big.log_start_offset + int((big.log_end_offset - big.log_start_offset) * where)
        assert small.delete_records_before(offset) == big.delete_records_before(offset)

    @rule(clean=st.booleans())
    def restart(self, clean):
        for manager in (self.small, self.big):
            if clean:
                manager.close()
            else:  # a crash: nothing trimmed, no clean-shutdown marker
                for log in manager.logs().values():
                    log.abandon()
        self.small, self.big = self._open()

    @invariant()
    def descriptors_are_bounded_and_accounted(self):
        if not hasattr(self, "small"):
            return
        held = sum(log.active_segment.open_descriptors for log in self.small.logs().values()
                   if log.loaded and not log.closed)
        assert held == self.small_cache.open_files
        assert held <= max(self.cap, ACTIVE_SEGMENT_FDS)


TestTinyCapMachine = TinyCapMachine.TestCase
TestTinyCapMachine.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)


def test_retention_opens_a_bounded_number_of_partitions_a_pass(tmp_path, monkeypatch):
    from kafka_wire.log import manager as manager_module

    monkeypatch.setattr(manager_module, "RETENTION_OPENS_PER_PASS", 3)
    config = LogConfig(retention_ms=1_000)
    manager = LogManager(tmp_path, config, handles=FileHandleCache(8))
    manager.create_topic("t", 7)
    for p in range(7):
        log = manager.get_log("t", p)
        log.append(make_batch(1), now_ms=1)
        log.roll()
        log.append(make_batch(1), now_ms=5_000)
    manager.close()
    manager = LogManager(tmp_path, config, handles=FileHandleCache(8))
    passes = [manager.enforce_retention(6_000) for _ in range(4)]
    assert passes == [3, 3, 1, 0]  # one old segment deleted per partition, three partitions a pass
    assert all(manager.get_log("t", p).log_start_offset == 1 for p in range(7))
    manager.close()


def test_appends_that_skip_telling_the_cache_leave_its_count_exact(tmp_path, monkeypatch):
    """An append tells the cache it used its files at most every TOUCH_EVERY_S while it
    holds as many as it last reported; a log whose files the cache closed meanwhile
    reports them again at its next append, so the count always matches the descriptors."""
    from kafka_wire.log import partition_log

    cache = FileHandleCache(max_open_files=4)  # two logs' .log and .batches (small batches write no sparse index)
    touches = []
    real_touch = cache.touch
    monkeypatch.setattr(cache, "touch", lambda owner, n: (touches.append(owner), real_touch(owner, n)))
    before = open_fds(tmp_path)
    manager = LogManager(tmp_path, LogConfig(), handles=cache)
    manager.create_topic("t", 3)
    logs = [manager.get_log("t", p) for p in range(3)]
    logs[0].append(make_batch(1), now_ms=1_000)
    logs[0].append(make_batch(1), now_ms=1_000)  # same descriptors, just now: not told
    assert touches == [logs[0]]
    for n in range(12):  # three logs, room for two: every round closes someone's files
        log = logs[n % 3] if n % 4 else logs[(n + 1) % 3]
        log.append(make_batch(1, tag=n), now_ms=1_000 + n)
        assert cache.open_files == open_fds(tmp_path) - before
    monkeypatch.setattr(partition_log, "TOUCH_EVERY_S", 0.0)  # told at every append again
    touches.clear()
    logs[1].append(make_batch(1), now_ms=2_000)
    logs[1].append(make_batch(1), now_ms=2_000)
    assert touches == [logs[1], logs[1]] and cache.open_files == open_fds(tmp_path) - before
    manager.close()
    assert open_fds(tmp_path) == before and cache.open_files == 0
