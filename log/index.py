"""Memory-mapped index files of a log segment.

``OffsetIndex`` (``.index``) and ``TimeIndex`` (``.timeindex``) use Kafka's
entry formats and are sparse: one entry every index.interval.bytes of log.
``BatchIndex`` (``.batches``) is ours and dense: one entry per batch with its
byte position and broker append time, which Event Hubs exposes as the event's
offset and enqueued time. ``TransactionIndex`` (``.txnindex``) is Kafka's
index of aborted transactions. A segment written by the cleaner also has a
``.positions`` file (``pack_positions``): the Event Hubs position each of its
batches had before compaction moved it.

Writable (active) files are extended sparse with ftruncate and mapped read-only
for lookups. Entries are written with os.pwrite, never through the map, so a
full disk surfaces as OSError(ENOSPC) at the write instead of SIGBUS at some
later page fault. On roll or close the file is trimmed to its entries.
The maps hold no descriptor (``mapping``); an active file's write descriptor
may be closed while idle (``close_fd``) and is reopened by the next append.
A file is mapped when an entry is first read, not when it is opened or
extended: a partition that is only appended to keeps no map of its indexes
(``unmap`` lets go of one after recovery has read it).

The sparse indexes (``LAZY``) are created by their first entry, not when the
segment is: a file created costs ~0.2 ms on ext4, and a segment holding less
than index.interval.bytes never gets an entry. A missing one reads as empty;
``LogSegment`` decides whether that is what laziness left or damage.
"""

from __future__ import annotations

import bisect
import logging
import operator
import os
import struct
import sys
import threading
from array import array
from contextlib import nullcontext
from itertools import accumulate, islice
from pathlib import Path
from typing import NamedTuple

from crc32c import crc32c

from .mapping import FileId, Map, file_id, map_read_only, release_map  # noqa: F401  (re-exported)

logger = logging.getLogger(__name__)


# Held only around a pwrite of waiting entries (or a change to them): one for every file, which
# costs no memory per partition; the writers are the event loop and the log flusher's thread.
_PENDING_LOCK = threading.Lock()


class _EntryFile:
    """Fixed-size big-endian entries after an optional header."""

    ENTRY: struct.Struct
    HEADER_SIZE = 0
    GROWABLE = False  # fixed files are sized once to max_bytes; growable ones double
    LAZY = False  # created by the first entry rather than by open_for_append
    INITIAL_ENTRIES = 1024
    # Entries kept in memory and written this many at a time (0: each append writes), for a file
    # nothing reads while it is active: see OffsetIndex.
    DEFER_ENTRIES = 0
    _pending: bytes | bytearray = b""  # entries not written yet (DEFER_ENTRIES); b"" when none
    _pending_lock = nullcontext()  # _PENDING_LOCK for files that defer (see BatchIndex)

    def __init__(self, path: Path, max_bytes: int, *, new: bool = False):
        """``new``: the caller knows the file is not there (a segment being created)."""
        self.path = path
        self.max_entries = max(0, max_bytes // self.ENTRY.size)
        self._fd: int | None = None
        self._mapped: Map | None = None  # made by the first read of ``_map``
        self._map_len = 0  # the length ``_map`` maps
        self._capacity = 0  # entries the file can hold right now (active only)
        # First and last entries, as read or appended: every append reads them, and
        # from here it needs no map of the file.
        self._first: tuple | None = None
        self._last: tuple | None = None
        self.entries = 0  # pending ones included
        if self.DEFER_ENTRIES:
            self._pending_lock = _PENDING_LOCK
        self.file_bytes = -1  # missing
        # The file this object opened or made: the only one it maps (LogSegment.keep_mapped).
        self._file_id: FileId | None = None
        if not new:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                return
            size = st.st_size
            self._file_id = file_id(st)
            self.file_bytes = size
            self.entries = max(0, size - self.HEADER_SIZE) // self.ENTRY.size
            self._remap(size)

    # -- state ------------------------------------------------------------------

    @property
    def writable(self) -> bool:
        """Open for append (sized for new entries), whether or not its descriptor is open now."""
        return self._capacity > 0

    @property
    def _map(self) -> Map | None:
        if self._pending:
            self.write_pending()  # a read sees every entry
        m = self._mapped
        if m is None and self._map_len:
            m = self._mapped = map_read_only(self.path, None, self._map_len, self._file_id)
        return m

    def keep_mapped(self) -> None:
        """Map the file now if it is not (see LogSegment.keep_mapped)."""
        self._map  # noqa: B018  (the property maps)

    def unmap(self) -> None:
        """Let go of the map (the next read maps the file again)."""
        m, self._mapped = self._mapped, None
        release_map(m)

    @property
    def fd_open(self) -> bool:
        return self._fd is not None

    def close_fd(self) -> None:
        """Close the write descriptor of an idle file; the map and the room stay."""
        if self._pending:
            try:
                self.write_pending()
            except OSError as exc:  # kept: the next append or trim writes them
                logger.warning("%s: cannot write index entries: %s", self.path, exc)
        with self._pending_lock:  # not while a lock-free reader writes pending entries through it
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    @property
    def is_full(self) -> bool:
        return not self.GROWABLE and self.entries >= self.max_entries

    def entry(self, i: int) -> tuple:
        return self.ENTRY.unpack_from(self._map, self.HEADER_SIZE + i * self.ENTRY.size)  # type: ignore[arg-type]

    def last_entry(self) -> tuple | None:
        if not self.entries:
            return None
        last = self._last
        if last is None:
            last = self._last = self.entry(self.entries - 1)
        return last

    def first_entry(self) -> tuple | None:
        if not self.entries:
            return None
        first = self._first
        if first is None:
            first = self._first = self.entry(0)
        return first

    def all_entries(self) -> list[tuple]:
        if not self.entries:
            return []
        start = self.HEADER_SIZE
        with memoryview(self._map) as view:  # type: ignore[arg-type]
            return list(self.ENTRY.iter_unpack(view[start : start + self.entries * self.ENTRY.size]))

    def _shape_problem(self) -> str | None:
        """What is wrong with a header-less file's existence or size, if anything."""
        if self.file_bytes < 0:
            return "missing"
        if self.file_bytes % self.ENTRY.size:
            return f"size {self.file_bytes} is not a multiple of {self.ENTRY.size}"
        return None

    def _sample(self, full: bool) -> list[tuple]:
        """Entries to sanity-check: all of them, or just the first and last."""
        if full:
            return self.all_entries()
        if not self.entries:
            return []
        return [self.entry(0), self.entry(self.entries - 1)] if self.entries > 1 else [self.entry(0)]

    def floor(self, key: int, field: int = 0, lo: int = 0) -> int:
        """Index of the last entry whose ``field`` <= key, or -1. ``lo``: the
        caller knows the entries below it are <= key (the search starts there)."""
        hi = self.entries - 1
        unpack = self.ENTRY.unpack_from
        buf, base, size = self._map, self.HEADER_SIZE, self.ENTRY.size
        found = lo - 1
        while lo <= hi:
            mid = (lo + hi) >> 1
            if unpack(buf, base + mid * size)[field] <= key:  # type: ignore[arg-type]
                found = mid
                lo = mid + 1
            else:
                hi = mid - 1
        return found

    def first_above(self, key: int, field: int = 0, lo: int = 0) -> int:
        """Index of the first entry whose ``field`` > key (``entries`` if none)."""
        return self.floor(key, field, lo) + 1

    # -- writing ----------------------------------------------------------------

    def open_for_append(self) -> None:
        """Make the file writable and give it room (sparse) for new entries."""
        if self.GROWABLE:
            capacity = max(self.INITIAL_ENTRIES, self.entries * 2)
        else:
            capacity = max(self.max_entries, self.entries)
        if self.LAZY and not self.exists:
            self._capacity = capacity  # writable: the first append creates the file
            return
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            self._note_file(self._fd)
        self._resize(capacity)

    @property
    def exists(self) -> bool:
        """Is the file there (as far as this object made or found it)?"""
        return self.file_bytes >= 0

    def create(self) -> None:
        """Make the file now, empty, if it was never made (a LAZY file before its first
        entry). Open for append, it gets its room as open_for_append gives it."""
        if self.exists:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            self._note_file(fd)
        except BaseException:
            os.close(fd)
            raise
        if not self._capacity:
            os.close(fd)
            self.file_bytes = 0
            return
        self._fd = fd
        try:
            self._resize(self._capacity)
        except BaseException:  # still "never made": the next entry tries again (O_CREAT keeps the file)
            self._fd = None
            os.close(fd)
            raise

    def _note_file(self, fd: int) -> None:
        if self._file_id is None:
            self._file_id = file_id(os.fstat(fd))

    def _reopen(self) -> int:
        """The write descriptor, opened again (closed while idle) or, for a LAZY file's
        first entry, the file created."""
        if not self.exists:
            self.create()
        else:
            self._fd = os.open(self.path, os.O_RDWR)
        return self._fd  # type: ignore[return-value]

    def _resize(self, capacity: int) -> None:
        length = self.HEADER_SIZE + capacity * self.ENTRY.size
        os.ftruncate(self._fd, length)  # type: ignore[arg-type]
        self._capacity = capacity
        self.file_bytes = length
        self._remap(length)

    def append(self, data: bytes, count: int, defer: bool = True) -> None:
        """Append ``count`` packed entries with one pwrite, or keep them in memory
        (DEFER_ENTRIES) unless ``defer`` is False: then they and any kept before are
        written now. Raises OSError, as if nothing was appended."""
        if self._fd is None:
            if not self._capacity:
                raise RuntimeError(f"{self.path.name} is not open for append")
            self._reopen()
        if self.entries + count > self._capacity:
            if not self.GROWABLE:
                raise RuntimeError(f"{self.path.name} is full")
            self._resize(max(self._capacity * 2, self.entries + count))
        size = self.ENTRY.size
        if self.DEFER_ENTRIES:
            with self._pending_lock:
                if self._pending:
                    self._pending += data
                else:
                    self._pending = bytearray(data)
                if not defer or len(self._pending) >= self.DEFER_ENTRIES * size:
                    try:
                        self._write_pending_at(self.entries + count)
                    except BaseException:
                        del self._pending[-len(data):]  # as if not appended: the caller undoes the rest
                        raise
                self._appended(data, count, size)
        else:
            _pwrite_all(self._fd, data, self.HEADER_SIZE + self.entries * size)
            self._appended(data, count, size)

    def _appended(self, data: bytes, count: int, size: int) -> None:
        if not self.entries:
            self._first = self.ENTRY.unpack_from(data, 0)
        self._last = self.ENTRY.unpack_from(data, (count - 1) * size)
        self.entries += count  # last: a reader writing what is pending sees pending and entries agree

    @property
    def pending_entries(self) -> int:
        """Entries appended but not written to the file yet."""
        return len(self._pending) // self.ENTRY.size

    def write_pending(self) -> None:
        """Write the entries kept in memory (before the file is read, trimmed, fsynced or
        its descriptor closed). Raises OSError, keeping them. Safe from a thread that
        does not hold the partition's lock (lock-free readers of .batches)."""
        if self._pending:
            with self._pending_lock:
                if self._pending:
                    self._write_pending_at(self.entries)

    def _write_pending_at(self, end: int) -> None:
        # ``end``: the entry count once every pending one is written. Under _pending_lock.
        pending = self._pending
        fd = self._fd
        if fd is None:
            fd = self._reopen()
        size = self.ENTRY.size
        _pwrite_all(fd, pending, self.HEADER_SIZE + (end - len(pending) // size) * size)
        self._pending = b""

    def write_header(self, data: bytes) -> None:
        _pwrite_all(self._fd, data, 0)  # type: ignore[arg-type]

    def truncate_entries(self, count: int) -> None:
        """Forget entries >= count. Stale bytes past the end are overwritten by
        later appends or cut by trim(); a reopen after a crash rebuilds."""
        with self._pending_lock:
            if self._pending:
                written = self.entries - len(self._pending) // self.ENTRY.size
                del self._pending[max(0, count - written) * self.ENTRY.size:]
            self.entries = min(self.entries, count)
        self._first = self._last = None  # read again from the file when asked

    def trim(self) -> None:
        """Cut the file to its entries, map it at that size and release the fd."""
        length = self.HEADER_SIZE + self.entries * self.ENTRY.size
        if self.LAZY and not self.exists:  # never made, so it has no entries either: stays absent
            self._capacity = 0
            return
        fd = self._fd if self._fd is not None else os.open(self.path, os.O_RDWR)
        try:
            if self._pending:
                self._fd = fd
                self.write_pending()
            self._unmap()  # unmap first: pages past the new end would fault (SIGBUS)
            os.ftruncate(fd, length)
        finally:
            os.close(fd)
            self._fd = None
        self.file_bytes = length
        self._capacity = 0
        self._remap(length)

    def flush(self) -> None:
        self.write_pending()
        _fsync(self._fd, self.path)

    def close(self) -> None:
        """Release the map and descriptor; entries still pending are dropped (a sealed
        file has none: trim() wrote them; a deleted one needs none)."""
        with self._pending_lock:
            self._pending = b""
        self._unmap()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> None:
        self.close()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    # -- mapping ----------------------------------------------------------------

    def _remap(self, length: int) -> None:
        self._unmap()
        self._map_len = max(length, 0)  # mapped when next read

    def _unmap(self) -> None:
        self._map_len = 0
        self.unmap()


class OffsetIndex(_EntryFile):
    """``.index``: (offset - base_offset int32, position int32), big-endian.

    An entry names the start of a batch; the segment's first batch is never
    indexed, so valid entries are > 0 in both fields.
    """

    ENTRY = struct.Struct(">ii")
    LAZY = True
    # Nothing reads an active segment's .index (reads find batches through .batches; it is kept
    # for Kafka's layout and sealed segments' checks), so its entries are written 64 at a time,
    # saving a pwrite per index.interval.bytes; trim (on roll and close), flush, closing the
    # idle descriptor and any read write them. A crash may lose them: recovery rebuilds an
    # unclean active segment's indexes from its .log anyway.
    DEFER_ENTRIES = 64

    def problem(self, log_size: int, max_rel_offset: int, full: bool) -> str | None:
        shape = self._shape_problem()
        if shape:
            return shape
        entries = self._sample(full)
        prev = (0, 0)
        for rel, pos in entries:
            if rel <= prev[0] or pos <= prev[1] or pos >= log_size or rel > max_rel_offset:
                return f"entry ({rel}, {pos}) is out of order or points past the log"
            prev = (rel, pos)
        return None

    def lookup(self, rel_offset: int) -> int:
        """Position of the last indexed batch starting at or before rel_offset (0 if none)."""
        i = self.floor(rel_offset)
        return self.entry(i)[1] if i >= 0 else 0


class TimeIndex(_EntryFile):
    """``.timeindex``: (timestamp int64, offset - base_offset int32), big-endian.

    Each entry is (max timestamp so far, relative offset of a batch holding it),
    so every record up to that offset has a timestamp <= the entry's.
    """

    ENTRY = struct.Struct(">qi")
    LAZY = True  # LogSegment.seal makes it for a segment with batches, entry or none
    # As OffsetIndex's; the one reader, a lookup by timestamp, holds the partition's lock
    # (PartitionLog.offset_for_timestamp), so its read writes what is pending safely.
    DEFER_ENTRIES = 64

    def problem(self, log_size: int, max_rel_offset: int, full: bool) -> str | None:
        shape = self._shape_problem()
        if shape:
            return shape
        entries = self._sample(full)
        if self.entries and self.last_entry() == (0, 0):
            return "ends with an empty entry (not trimmed)"
        prev: tuple[int, int] | None = None
        for ts, rel in entries:
            if rel < 0 or rel > max_rel_offset or (prev is not None and (ts <= prev[0] or rel < prev[1])):
                return f"entry ({ts}, {rel}) is out of order or points past the log"
            prev = (ts, rel)
        return None


BATCH_INDEX_MAGIC = b"KWBI"
BATCH_INDEX_HEADER = struct.Struct(">4sHHq")  # magic, version, reserved, base_position


class BatchIndex(_EntryFile):
    """``.batches``: dense, one entry per batch: (offset - base_offset uint32,
    position uint32, append_time_ms int64), big-endian, after a 16-byte header
    carrying the segment's base_position (its start within the partition's
    byte stream, the origin of Event Hubs offsets)."""

    ENTRY = struct.Struct(">IIq")
    HEADER_SIZE = BATCH_INDEX_HEADER.size
    GROWABLE = True
    # Entries wait in memory as the sparse indexes' do, but only those recovery rebuilds exactly
    # from the .log (LogSegment.append says which: the batch carries its append time), so a
    # crash changes no enqueued time. Readers in this process see them (reading the file writes
    # them first, from any thread: _pending_lock); readers in other processes (Capture's
    # PartitionReader) see them once written: at 64, roll, close, fsync, idle close, and the
    # log flusher's pass about once a second (PartitionLog.write_pending_entries).
    DEFER_ENTRIES = 64

    def __init__(self, path: Path, *, new: bool = False):
        super().__init__(path, max_bytes=0, new=new)

    def read_base_position(self) -> int | None:
        if self._map is None or self._map_len < self.HEADER_SIZE:
            return None
        magic, version, _, base_position = BATCH_INDEX_HEADER.unpack_from(self._map)
        if magic != BATCH_INDEX_MAGIC or version != 1 or base_position < 0:
            return None
        return base_position

    def write_base_position(self, base_position: int) -> None:
        data = BATCH_INDEX_HEADER.pack(BATCH_INDEX_MAGIC, 1, 0, base_position)
        if self._fd is not None:
            self.write_header(data)
            return
        fd = os.open(self.path, os.O_RDWR)
        try:
            _pwrite_all(fd, data, 0)
        finally:
            os.close(fd)

    def problem(self, log_size: int, max_rel_offset: int, full: bool) -> str | None:
        if self.file_bytes < 0:
            return "missing"
        if self.read_base_position() is None:
            return "bad header"
        if (self.file_bytes - self.HEADER_SIZE) % self.ENTRY.size:
            return f"size {self.file_bytes} is not a whole number of entries"
        if log_size and not self.entries:
            return "no entries for a non-empty log"
        entries = self._sample(full)
        prev: tuple[int, int, int] | None = None
        for entry in entries:
            rel, pos, _ = entry
            if pos >= log_size or rel > max_rel_offset or (prev is not None and (rel <= prev[0] or pos <= prev[1])):
                return f"entry {entry} is out of order or points past the log"
            prev = entry
        if self.entries and self.entry(0)[1] != 0:
            return "first batch is not at position 0"
        return None

    def floor_offset(self, rel_offset: int) -> int:
        return self.floor(rel_offset, 0)

    def floor_position(self, position: int) -> int:
        return self.floor(position, 1)

    def position(self, i: int) -> int:
        return self.ENTRY.unpack_from(self._map, self.HEADER_SIZE + i * self.ENTRY.size)[1]  # type: ignore[arg-type]


POSITIONS_MAGIC = b"KWEP"
POSITIONS_HEADER = struct.Struct(">4sHHII")  # magic, version, reserved, entry count, CRC-32C of the entries


def pack_positions(positions) -> bytes:
    """``.positions``: one int64 (big-endian) per batch of the segment, in
    ``.batches`` order, after a header with the count and a CRC of the entries."""
    body = array("q", positions)
    if sys.byteorder == "little":
        body.byteswap()
    data = body.tobytes()
    return POSITIONS_HEADER.pack(POSITIONS_MAGIC, 1, 0, len(body), crc32c(data)) + data


def unpack_positions(data: bytes) -> array:
    """The positions of a ``.positions`` file; ValueError if it is damaged or
    they are not strictly increasing."""
    if len(data) < POSITIONS_HEADER.size:
        raise ValueError("shorter than its header")
    magic, version, reserved, count, crc = POSITIONS_HEADER.unpack_from(data)
    body = memoryview(data)[POSITIONS_HEADER.size :]
    if magic != POSITIONS_MAGIC or version != 1 or reserved:
        raise ValueError("bad header")
    if len(body) != count * 8:
        raise ValueError(f"{len(body)} bytes of entries for {count} entries")
    if crc32c(body) != crc:
        raise ValueError("CRC mismatch")
    positions = array("q")
    positions.frombytes(body)
    if sys.byteorder == "little":
        positions.byteswap()
    if (positions and positions[0] < 0) or not all(map(int.__lt__, positions, islice(positions, 1, None))):
        raise ValueError("positions are not strictly increasing")
    return positions


def _pwrite_all(fd: int, data, offset: int) -> None:
    """pwrite until done; short writes happen (signals, quotas) and must be resumed."""
    written = os.pwrite(fd, data, offset)
    if written == len(data):  # the usual case, without the view and the loop
        return
    if written <= 0:
        raise OSError(f"pwrite wrote {written} bytes")
    view = memoryview(data)[written:]
    offset += written
    try:
        while view:
            written = os.pwrite(fd, view, offset)
            if written <= 0:
                raise OSError(f"pwrite wrote {written} bytes")
            view = view[written:]
            offset += written
    finally:
        view.release()


def _fsync(fd: int | None, path: Path) -> None:
    """fsync through our fd, or a fresh read-only one for a sealed file."""
    if fd is not None:
        os.fsync(fd)
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


pwrite_all = _pwrite_all
fsync_path = _fsync


class AbortedTxn(NamedTuple):
    """One ``.txnindex`` entry: an aborted transaction of ``producer_id``
    spanning [first_offset, last_offset] (last_offset is its ABORT marker), and
    the last stable offset right after the abort (where a read_committed
    consumer's search for aborted transactions may stop)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


TXN_ENTRY = struct.Struct(">hqqqq")  # version, producerId, firstOffset, lastOffset, lastStableOffset
assert TXN_ENTRY.size == 34


class TransactionIndex:
    """``.txnindex``: Kafka's aborted-transaction index of a segment, 34-byte
    entries (version int16 = 0, producerId, firstOffset, lastOffset,
    lastStableOffset int64), big-endian, in marker order.

    It lives in the segment that holds the ABORT marker and is created on the
    first abort. Entries are kept in memory and the file is only appended to
    (one pwrite per abort) or rewritten whole (truncation, recovery). Their
    last offsets (the markers) strictly increase; ``collect`` bisects on them
    and on the running maximum of their last stable offsets, so a lookup costs
    the entries it returns, not the segment's aborted transactions.
    """

    def __init__(self, path: Path, *, new: bool = False):
        self.path = path
        # The entries in marker order (read-only: change them through the methods), and
        # ``_state``: they and the running maximum of their last stable offsets, replaced
        # whole or appended to (the maximum first), so that a lock-free ``collect`` takes
        # both at once and sees as many maxima as entries, or more.
        self.entries: list[AbortedTxn] = []
        self._state: tuple[list[AbortedTxn], list[int]] = (self.entries, [])
        self.damaged: str | None = None  # why the file could not be read whole
        self._dirty = False
        if new:  # not there (a segment being created): nothing to read
            return
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return
        usable = len(data) - len(data) % TXN_ENTRY.size
        if usable != len(data):
            self.damaged = f"size {len(data)} is not a multiple of {TXN_ENTRY.size}"
        prev_last = -1
        entries = []
        for version, pid, first, last, lso in TXN_ENTRY.iter_unpack(data[:usable]):
            if version != 0 or first > last or last <= prev_last:
                self.damaged = f"entry ({version}, {pid}, {first}, {last}, {lso}) is invalid or out of order"
                break
            entries.append(AbortedTxn(pid, first, last, lso))
            prev_last = last
        self._set(entries)

    def _set(self, entries: list[AbortedTxn]) -> None:
        self._state = (entries, _running_max(entries))
        self.entries = entries

    def __len__(self) -> int:
        return len(self.entries)

    def problem(self, base_offset: int, next_offset: int) -> str | None:
        if self.damaged:
            return self.damaged
        for entry in self.entries:
            if not base_offset <= entry.last_offset < next_offset:
                return f"entry {tuple(entry)} lies outside the segment's offsets [{base_offset}, {next_offset})"
        return None

    def append(self, entry: AbortedTxn) -> None:
        """Add one entry (raises OSError; the file is then as before)."""
        entries, maxima = self._state
        if entries and entry.last_offset <= entries[-1].last_offset:  # never: markers are appended in order
            raise ValueError(f"aborted transaction {tuple(entry)} does not follow {tuple(entries[-1])}")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            end = len(self.entries) * TXN_ENTRY.size
            try:
                _pwrite_all(fd, TXN_ENTRY.pack(0, *entry), end)
            except BaseException:
                os.ftruncate(fd, end)
                raise
        finally:
            os.close(fd)
        maxima.append(max(maxima[-1], entry.last_stable_offset) if maxima else entry.last_stable_offset)
        entries.append(entry)
        self._dirty = True

    def remove_last(self) -> None:
        """Undo the last append (its marker could not be written)."""
        if self.entries:
            self.replace(self.entries[:-1])

    def replace(self, entries: list[AbortedTxn]) -> None:
        """Rewrite the file with ``entries`` (deleting it when there are none)."""
        if not entries:
            self.path.unlink(missing_ok=True)
        else:
            data = b"".join(TXN_ENTRY.pack(0, *e) for e in entries)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                _pwrite_all(fd, data, 0)
            finally:
                os.close(fd)
        self._set(list(entries))
        self.damaged = None
        self._dirty = bool(entries)

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose marker is at or after ``offset``."""
        keep = [e for e in self.entries if e.last_offset < offset]
        if len(keep) != len(self.entries) or self.damaged:
            self.replace(keep)

    def collect(self, fetch_offset: int, upper_offset: int, out: list[AbortedTxn]) -> bool:
        """Add the entries overlapping [fetch_offset, upper_offset) to ``out``;
        True when the search is complete (Kafka's TransactionIndex.collectAbortedTxns:
        in marker order, it stops after the first entry whose last stable offset
        reaches ``upper_offset``: no transaction open then began below it).

        Found by bisection, without copying the entries: those ending before
        ``fetch_offset`` come first (their markers are in increasing order), and the
        stop is the first running maximum of the last stable offsets at or past
        ``upper_offset``."""
        entries, maxima = self._state
        n = len(entries)
        stop = bisect.bisect_left(maxima, upper_offset, 0, n)  # n: not complete here
        start = bisect.bisect_left(entries, fetch_offset, 0, min(stop + 1, n), key=_LAST_OFFSET)
        for i in range(start, min(stop + 1, n)):
            entry = entries[i]
            if entry.first_offset < upper_offset:
                out.append(entry)
        return stop < n

    def flush(self) -> None:
        if self._dirty:
            _fsync(None, self.path)
            self._dirty = False

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)
        self._set([])


_LAST_OFFSET = operator.attrgetter("last_offset")


def _running_max(entries: list[AbortedTxn]) -> list[int]:
    return list(accumulate((e.last_stable_offset for e in entries), max))
