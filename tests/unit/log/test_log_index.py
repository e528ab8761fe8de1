"""OffsetIndex / TimeIndex / BatchIndex files (log/index.py)."""

from __future__ import annotations

import errno
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_wire.log.index import BatchIndex, OffsetIndex, TimeIndex, pack_positions, unpack_positions


def test_offset_index_is_preallocated_sparse_and_trimmed(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, max_bytes=800)
    index.open_for_append()
    assert not path.exists() and index.max_entries == 100  # made by its first entry
    index.append(b"".join(OffsetIndex.ENTRY.pack(r, r * 100) for r in (3, 7, 12)), 3)
    assert path.stat().st_size == 800
    assert index.lookup(2) == 0 and index.lookup(3) == 300 and index.lookup(11) == 700 and index.lookup(99) == 1200
    index.trim()
    assert path.stat().st_size == 24
    reopened = OffsetIndex(path, max_bytes=800)
    assert reopened.entries == 3 and reopened.last_entry() == (12, 1200)
    assert reopened.problem(log_size=2000, max_rel_offset=20, full=True) is None
    assert reopened.problem(log_size=1000, max_rel_offset=20, full=False) is not None  # points past the log


def test_an_index_knows_when_it_is_full(tmp_path):
    index = OffsetIndex(tmp_path / "x.index", max_bytes=16)
    index.open_for_append()
    index.append(OffsetIndex.ENTRY.pack(1, 1) + OffsetIndex.ENTRY.pack(2, 2), 2)
    assert index.is_full


def test_time_index_floor_and_damage_checks(tmp_path):
    index = TimeIndex(tmp_path / "x.timeindex", max_bytes=1200)
    index.open_for_append()
    index.append(TimeIndex.ENTRY.pack(100, 1) + TimeIndex.ENTRY.pack(200, 5), 2)
    assert index.floor(99) == -1 and index.floor(150) == 0 and index.floor(200) == 1
    assert index.problem(0, 10, full=True) is None
    index.close()
    with open(tmp_path / "x.timeindex", "r+b") as f:  # preallocated, never trimmed
        f.truncate(1200)
    assert TimeIndex(tmp_path / "x.timeindex", 1200).problem(0, 10, full=False) is not None


def test_batch_index_grows_and_keeps_its_base_position(tmp_path):
    index = BatchIndex(tmp_path / "x.batches")
    index.open_for_append()
    index.write_base_position(12345)
    entries = [BatchIndex.ENTRY.pack(i, i * 70, 1000 + i) for i in range(3000)]  # > initial capacity
    index.append(b"".join(entries), len(entries))
    index.trim()
    reopened = BatchIndex(tmp_path / "x.batches")
    assert reopened.read_base_position() == 12345
    assert reopened.entries == 3000 and reopened.entry(2999) == (2999, 2999 * 70, 3999)
    assert reopened.floor_offset(1500) == 1500 and reopened.floor_position(71) == 1
    assert reopened.problem(log_size=3000 * 70, max_rel_offset=3000, full=True) is None


@given(st.lists(st.integers(0, 2**62), unique=True).map(sorted), st.data())
def test_positions_files_round_trip_and_any_damage_is_refused(positions, data):
    packed = pack_positions(positions)
    assert list(unpack_positions(packed)) == positions
    damaged = bytearray(packed)
    damaged[data.draw(st.integers(0, len(packed) - 1))] ^= data.draw(st.integers(1, 255))
    with pytest.raises(ValueError):
        unpack_positions(bytes(damaged))
    with pytest.raises(ValueError):
        unpack_positions(packed[: data.draw(st.integers(0, len(packed) - 1))])


def test_positions_must_strictly_increase():
    with pytest.raises(ValueError, match="increasing"):
        unpack_positions(pack_positions([5, 9, 9]))
    with pytest.raises(ValueError, match="increasing"):
        unpack_positions(pack_positions([-1, 3]))


def test_index_writes_go_through_pwrite_so_enospc_is_an_oserror(tmp_path, monkeypatch):
    index = BatchIndex(tmp_path / "x.batches")
    index.open_for_append()
    index.append(BatchIndex.ENTRY.pack(0, 0, 1), 1)  # deferred: recovery could rebuild it

    def no_space(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", no_space)
    with pytest.raises(OSError) as exc:  # an entry that may not wait is written with those before it
        index.append(BatchIndex.ENTRY.pack(1, 1, 1), 1, defer=False)
    assert exc.value.errno == errno.ENOSPC and index.entries == 1 and index.pending_entries == 1


def test_offset_index_entries_are_written_in_groups_and_enospc_is_an_oserror_then(tmp_path, monkeypatch):
    """.index entries wait in memory (nothing reads an active .index) and are written
    DEFER_ENTRIES at a time, or by flush, trim and closing the idle descriptor; a full
    disk then raises OSError there, and the entries stay pending."""
    path = tmp_path / "x.index"
    index = OffsetIndex(path, max_bytes=8 * 200)
    index.open_for_append()
    n = OffsetIndex.DEFER_ENTRIES
    for i in range(1, n):
        index.append(OffsetIndex.ENTRY.pack(i, i * 10), 1)
    assert not any(path.read_bytes())  # none written yet
    index.append(OffsetIndex.ENTRY.pack(n, n * 10), 1)  # the group is full: one write
    assert path.read_bytes()[: n * 8] == b"".join(OffsetIndex.ENTRY.pack(i, i * 10) for i in range(1, n + 1))
    index.append(OffsetIndex.ENTRY.pack(n + 1, (n + 1) * 10), 1)

    real_pwrite = os.pwrite

    def no_space(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", no_space)
    with pytest.raises(OSError) as exc:
        index.flush()
    assert exc.value.errno == errno.ENOSPC and index.entries == n + 1
    monkeypatch.setattr(os, "pwrite", real_pwrite)
    assert index.lookup(n + 1) == (n + 1) * 10  # a read writes what is pending first
    index.append(OffsetIndex.ENTRY.pack(n + 2, (n + 2) * 10), 1)
    index.truncate_entries(n + 1)  # an append undone drops its pending entry
    index.trim()
    assert path.read_bytes() == b"".join(OffsetIndex.ENTRY.pack(i, i * 10) for i in range(1, n + 2))
