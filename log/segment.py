"""LogSegment: one ``{base_offset:020d}.log`` file and its indexes.

Three indexes are dense or sparse maps of the log (``.index``, ``.timeindex``,
``.batches``); the fourth, ``.txnindex``, lists the aborted transactions whose
ABORT marker is in this segment and exists only once there is one. A segment
the cleaner rewrote also has ``.positions``: the Event Hubs position of each
batch from before compaction moved it (``position_of``). Such a segment is
never appended to: positions of new batches could not follow.

The ``.log`` file holds RecordBatch v2 bytes exactly as appended. The active
segment's file is extended sparse to segment.bytes (preallocate), written with
os.pwrite and mapped read-only; reads are zero-copy memoryview slices of the
map. A map that may have exported views (a socket write in flight) is never
closed: we drop our reference and let the last view unmap it.

Maps hold no file descriptor (``mapping``): a sealed segment holds none, the
active one up to four write descriptors (.log, .index, .timeindex, .batches),
which ``close_handles`` may close while it is idle; each write reopens the
files it writes.

``.index`` and ``.timeindex`` are made by their first entry (``index``): a new
segment creates only ``.log`` and ``.batches``, half the files (file creation
was ~80% of a partition's first write). ``seal`` makes the ``.timeindex`` of a
segment with batches, so a segment holding batches lacks it only while active;
it lacks its ``.index`` only if no batch starts past index.interval.bytes.
``_index_problem`` takes a missing file for damage only where that cannot be.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
from array import array
from pathlib import Path
from typing import NamedTuple

from . import batch as rb
from .batch import BatchHeader
from .config import LogConfig
from .errors import CorruptRecord, StorageError
from .index import (BatchIndex, OffsetIndex, TimeIndex, TransactionIndex, fsync_path, pack_positions, pwrite_all,
                    unpack_positions)
from .mapping import FileId, Map, file_id, find_bytes, map_read_only, release_map

logger = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
BATCH_INDEX_SUFFIX = ".batches"
TXN_INDEX_SUFFIX = ".txnindex"
POSITIONS_SUFFIX = ".positions"
# A compaction swap renames them in this order, .log last; log.reader relies on
# .batches being renamed before .positions.
SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, BATCH_INDEX_SUFFIX, TXN_INDEX_SUFFIX, POSITIONS_SUFFIX)
INT32_MAX = 2**31 - 1

_EMPTY = memoryview(b"")
_PACK_BATCH, _PACK_OFFSET, _PACK_TIME = BatchIndex.ENTRY.pack, OffsetIndex.ENTRY.pack, TimeIndex.ENTRY.pack
_BASE_AND_LAST_DELTA = struct.Struct(">q15xi")  # a batch header's base offset and last offset delta


def segment_path(directory: Path, base_offset: int, suffix: str) -> Path:
    return directory / f"{base_offset:020d}{suffix}"


class BatchLocation(NamedTuple):
    """Where a batch sits: its index in ``.batches``, file position and header."""

    index: int
    position: int
    header: BatchHeader


class LogSegment:
    """A segment of a partition log. Build with ``create`` or ``load``."""

    def __init__(self, directory: Path, base_offset: int, config: LogConfig, *, file_suffix: str = "",
                 new: bool = False):
        # ``new``: its files are known not to exist (``create``): none is looked for.
        self.directory = directory
        self.base_offset = base_offset
        self.config = config
        self.file_suffix = file_suffix  # ".cleaned" while the cleaner writes a replacement
        self.log_path = segment_path(directory, base_offset, LOG_SUFFIX + file_suffix)
        self.base_position = 0
        self.base_position_known = True  # False if .batches was lost: PartitionLog derives it
        self.dropped_bytes = 0  # what recovery cut off when loading (junk, not zeros)
        self.cut_bytes = 0  # everything recovery cut off, zeros of an unwritten tail included
        self.lost_batches = 0  # batches its old .batches listed that recovery found no more
        self.recovered = False  # rebuilt from its .log by recover() (damaged or missing indexes)
        self.txn_index_suspect = False  # PartitionLog rebuilds .txnindex from the markers when set
        self.size = 0  # valid bytes in .log
        # Bytes from the start whose batches passed a CRC check in this process
        # (appended here, or scanned by recovery or a read): reads check the rest
        # once, so bit rot in a cleanly closed segment is never served.
        self.verified_end = 0
        self.corrupt_at: int | None = None  # first batch found corrupt on read
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.active = False
        self.dirty = False  # written since the last fsync
        self.offset_index = OffsetIndex(self.path_of(INDEX_SUFFIX), config.segment_index_bytes, new=new)
        self.time_index = TimeIndex(self.path_of(TIME_INDEX_SUFFIX), config.segment_index_bytes, new=new)
        self.batch_index = BatchIndex(self.path_of(BATCH_INDEX_SUFFIX), new=new)
        self.txn_index = TransactionIndex(self.path_of(TXN_INDEX_SUFFIX), new=new)
        # Event Hubs positions of the batches, by .batches index, when the cleaner kept them.
        self.positions: array | None = None
        self._fd: int | None = None
        self._mapped: Map | None = None  # made by the first read of ``_map``
        self._map_len = 0  # the length ``_map`` maps
        self._file_len = 0
        # The .log file this object opened (or made): its maps are of that file only, whatever
        # is renamed over its path later (see ``keep_mapped``).
        self._file_id: FileId | None = None
        if not new:
            try:
                st = os.stat(self.log_path)
            except FileNotFoundError:
                pass
            else:
                self._file_len = st.st_size
                self._file_id = file_id(st)
        self._bytes_since_index = 0

    def path_of(self, suffix: str) -> Path:
        return segment_path(self.directory, self.base_offset, suffix + self.file_suffix)

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path.name}, offsets {self.base_offset}..{self.next_offset}, {self.size} bytes)"

    # -- construction -----------------------------------------------------------

    @classmethod
    def create(
        cls, directory: Path, base_offset: int, base_position: int, config: LogConfig, *, file_suffix: str = "",
        stale: bool = True,
    ) -> LogSegment:
        """A new, empty, active segment. Stale files of the same name are replaced, unless the
        caller knows there are none (``stale=False``: six unlinks fewer in a new partition)."""
        if stale:
            for suffix in SUFFIXES:
                segment_path(directory, base_offset, suffix + file_suffix).unlink(missing_ok=True)
        seg = cls(directory, base_offset, config, file_suffix=file_suffix, new=True)
        seg.base_position = base_position
        seg.open_for_append()
        seg.batch_index.write_base_position(base_position)
        return seg

    @classmethod
    def load(cls, directory: Path, base_offset: int, config: LogConfig, *, recover: bool, full_check: bool,
             verify: bool = False) -> LogSegment:
        """Open an existing segment read-only. With ``recover`` (the active
        segment after an unclean shutdown) the whole file is re-validated and the
        indexes rebuilt; otherwise the indexes are sanity-checked and rebuilt
        only if damaged, and with ``verify`` (a sealed segment after an unclean
        shutdown: a power loss may have kept its indexes but not its data, or
        zeros for either) every batch's CRC is checked too. Sets
        ``dropped_bytes`` to the junk recovery cut off and ``cut_bytes`` to all
        it cut (zeros included)."""
        seg = cls(directory, base_offset, config)
        reason = "unclean shutdown" if recover else seg._index_problem(full_check)
        if reason is None and verify:
            reason = seg._batches_problem()
        if reason is None:
            seg._load_from_indexes()
            seg._attach_positions()
        else:
            seg.dropped_bytes = seg.recover(reason, keep_active=recover)
        problem = seg.txn_index.problem(seg.base_offset, seg.next_offset)
        if problem:
            logger.warning("%s: .txnindex %s; it will be rebuilt", seg.log_path, problem)
        seg.txn_index_suspect = recover or bool(seg.dropped_bytes) or problem is not None
        return seg

    @classmethod
    def replacement_problem(cls, directory: Path, base_offset: int, config: LogConfig,
                            file_suffix: str) -> str | None:
        """Why the segment written as ``{base_offset:020d}.*{file_suffix}`` (the cleaner's
        replacement) fails the full check of its indexes against its .log, or None. For a
        check before the swap, off the partition's lock: the files are the writer's own
        until renamed."""
        seg = cls(directory, base_offset, config, file_suffix=file_suffix)
        try:
            return seg._index_problem(True)
        finally:
            seg.release()

    def _index_problem(self, full: bool) -> str | None:
        """Why the indexes cannot be trusted as they are, or None."""
        bi = self.batch_index
        problem = bi.problem(self._file_len, INT32_MAX, full)
        if problem:
            return f".batches {problem}"
        if bi.entries:
            rel, pos, _ = bi.last_entry()
            self._remap()
            header = rb.check_stored_batch(self._map, pos, self._file_len)
            if header is None or header.base_offset != self.base_offset + rel:
                return ".batches points at a bad batch"
            if pos + header.size != self._file_len:
                return "log file was not trimmed"
            max_rel = header.last_offset - self.base_offset
        else:
            if self._file_len:
                return "log file has bytes but no batches"
            max_rel = 0
        for index in (self.offset_index, self.time_index):
            if not index.exists and not self._index_due(index):
                continue  # never made (lazy creation): an empty index
            problem = index.problem(self._file_len, max_rel, full)
            if problem:
                return f"{index.path.suffix} {problem}"
        if bi.entries and not self.time_index.entries and self._timestamps_unindexed():
            return ".timeindex has no entry for batches with timestamps"
        return None

    def _timestamps_unindexed(self) -> bool:
        """Does a batch carry a timestamp that the (empty) .timeindex does not index? Sealing
        always indexes the largest, so its file then lost its data: one ``seal`` made is
        never fsynced where the topic does not fsync, nor at a clean close, and a power loss
        may leave it empty. A walk over the headers, made only for an empty time index."""
        bi = self.batch_index
        try:
            return any(self.header_at(bi.position(i)).max_timestamp >= 0 for i in range(bi.entries))
        except (CorruptRecord, struct.error):  # .batches points past the log: damaged anyway
            return True

    def _index_due(self, index: OffsetIndex | TimeIndex) -> bool:
        """Must this loaded (sealed or cleanly closed) segment have ``index``'s file?
        The .timeindex if it holds batches (``seal`` makes it); the .index once a batch
        starts past index.interval.bytes (its first entry is due there). An interval
        lowered since the segment was written may take a file never made for lost:
        that costs one needless rebuild, which makes it."""
        bi = self.batch_index
        if not bi.entries:
            return False
        if index is self.time_index:
            return True
        return index.max_entries > 0 and bi.last_entry()[1] > self.config.index_interval_bytes

    def _batches_problem(self) -> str | None:
        """Why the batches of this (sealed) segment do not match its .batches, or None."""
        self._remap()
        buf, end = self._map, self._file_len
        batches, pos = rb.scan_stored_batches(buf, 0, end, self.base_offset) if buf is not None else ([], 0)
        if pos != end:
            return f"a batch at position {pos} of {end} fails validation"
        if len(batches) != self.batch_index.entries:
            return f"{len(batches)} valid batches, .batches lists {self.batch_index.entries}"
        self.verified_end = pos
        return None

    def _load_from_indexes(self) -> None:
        self.size = self._file_len
        self.base_position = self.batch_index.read_base_position() or 0
        bi = self.batch_index
        if bi.entries:
            _, pos, _ = bi.last_entry()
            self.next_offset = self.header_at(pos).next_offset
        last_time = self.time_index.last_entry()
        if last_time is not None:
            self.max_timestamp, rel = last_time
            self.offset_of_max_timestamp = self.base_offset + rel

    def recover(self, reason: str, *, quiet: bool = False, keep_active: bool = False) -> int:
        """Re-validate every batch (header, CRC, increasing offsets), cut the
        file at the first bad one, rebuild the three indexes. Returns the
        number of bytes of junk dropped (0 for a clean end). With
        ``keep_active`` the segment stays open for append, its file length
        unchanged, so maps already handed out never cover a hole."""
        self._remap()
        old_times: dict[tuple[int, int], int] = {}
        base_position = self.batch_index.read_base_position()
        if self.batch_index.file_bytes >= 0 and not (self.batch_index.file_bytes - BatchIndex.HEADER_SIZE) % 16:
            prev = (-1, -1)
            for rel, pos, t in self.batch_index.all_entries():
                if rel <= prev[0] or pos <= prev[1]:
                    break  # the unwritten (zero) tail of a preallocated file
                old_times[(rel, pos)] = t
                prev = (rel, pos)
        buf, end = self._map, self._file_len
        batches, pos = rb.scan_stored_batches(buf, 0, end, self.base_offset) if buf is not None else ([], 0)
        for n, (bpos, header) in enumerate(batches):
            if header.last_offset - self.base_offset > INT32_MAX or bpos + header.size > INT32_MAX:
                batches, pos = batches[:n], bpos  # cannot be indexed: treat as the end
                break
        expected = batches[-1][1].next_offset if batches else self.base_offset
        self.cut_bytes = end - pos
        self.lost_batches = max(0, len(old_times) - len(batches))
        self.recovered = True
        dropped = 0
        if pos < end:
            tail = bytes(buf[pos : min(end, pos + rb.HEADER_SIZE)]) if buf is not None else b""
            if tail.strip(b"\0"):
                # Count the junk up to the preallocated zeros, not the whole sparse file.
                zeros = find_bytes(buf, bytes(4096), pos, end)  # type: ignore[arg-type]
                dropped = (end if zeros < 0 else zeros) - pos
                logger.warning(
                    "%s: recovery (%s) kept %d bytes in %d batches (offsets %d..%d) and dropped "
                    "%d bytes of torn or corrupt data at position %d",
                    self.log_path, reason, pos, len(batches), self.base_offset, expected - 1, dropped, pos,
                )
        if not dropped and not quiet:
            logger.info("%s: rebuilt indexes (%s): %d batches, %d bytes", self.log_path, reason, len(batches), pos)

        # Rebuild from scratch; enqueued times come from the old .batches when it agrees.
        for index in (self.offset_index, self.time_index, self.batch_index):
            index.delete()
        self.offset_index = OffsetIndex(self.offset_index.path, self.config.segment_index_bytes)
        self.time_index = TimeIndex(self.time_index.path, self.config.segment_index_bytes)
        self.batch_index = BatchIndex(self.batch_index.path)
        self.size = 0
        self.next_offset = self.base_offset
        self.max_timestamp = self.offset_of_max_timestamp = -1
        self._bytes_since_index = 0
        self._truncate_file(pos)
        self.base_position = base_position or 0
        self.base_position_known = base_position is not None
        self.open_for_append()
        self.batch_index.write_base_position(self.base_position)
        times, last_time = [], 0
        for bpos, header in batches:
            # Without a recorded append time, the best guess is the batch's own timestamp.
            t = old_times.get((header.base_offset - self.base_offset, bpos), max(header.max_timestamp, last_time))
            last_time = max(last_time, t)
            times.append(t)
        if batches:
            self._index_batches(0, [h for _, h in batches], times)
        self.size = pos
        self.verified_end = pos
        self.txn_index.truncate_to(self.next_offset)
        self._attach_positions()
        if not keep_active:
            self.seal()
        return dropped

    def _attach_positions(self) -> None:
        """Take the Event Hubs positions the cleaner kept (``.positions``) if they
        fit the batches; without them positions follow the file, as before."""
        self.positions = self._read_positions()  # one assignment: lock-free readers see old or new

    def _read_positions(self) -> array | None:
        path = self.path_of(POSITIONS_SUFFIX)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        n = self.batch_index.entries
        try:
            positions = unpack_positions(data)
            if len(positions) < n:
                raise ValueError(f"{len(positions)} positions for {n} batches")
        except ValueError as exc:
            logger.warning("%s: %s; Event Hubs offsets in this segment now follow its file positions", path, exc)
            path.unlink(missing_ok=True)  # so log.reader falls back the same way
            return None
        if len(positions) > n or not n:  # batches cut off since (recovery, truncation): their positions go too
            del positions[n:]
            _rewrite_positions(path, positions)
        return positions or None

    # -- append -----------------------------------------------------------------

    def open_for_append(self) -> None:
        """Make this the active segment: writable, preallocated, indexes sized."""
        if self._fd is None:
            self._fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
            if self._file_id is None:
                self._file_id = file_id(os.fstat(self._fd))
        if self.config.preallocate and self._file_len < self.config.segment_bytes:
            os.ftruncate(self._fd, self.config.segment_bytes)  # sparse: no blocks yet
            self._file_len = self.config.segment_bytes
        for index in (self.offset_index, self.time_index, self.batch_index):
            index.open_for_append()
        last = self.offset_index.last_entry()
        self._bytes_since_index = self.size - (last[1] if last else 0)
        self.active = True
        self._remap()

    def append(self, data, headers: list[BatchHeader], append_time_ms: int) -> int:
        """Write ``data`` (whole batches, offsets already assigned) at the end.

        One pwrite for the log, one per index. Raises OSError after undoing any
        partial write, leaving the segment exactly as it was. Returns the
        position of the first batch.
        """
        pos0 = self.size
        oi, ti, bi = self.offset_index, self.time_index, self.batch_index
        counts = (oi.entries, ti.entries, bi.entries)
        saved = (self.next_offset, self.max_timestamp, self.offset_of_max_timestamp, self._bytes_since_index)
        fd = self._fd if self._fd is not None else self._reopen_log()
        try:
            pwrite_all(fd, data, pos0)
            end = pos0 + len(data)
            if end > self._file_len:
                self._file_len = end
            self._index_batches(pos0, headers, append_time_ms)
        except BaseException:
            for ix, n in zip((oi, ti, bi), counts):
                ix.truncate_entries(n)
            self.next_offset, self.max_timestamp, self.offset_of_max_timestamp, self._bytes_since_index = saved
            self._truncate_file(pos0)
            raise
        self.size = pos0 + len(data)
        if self.verified_end == pos0:  # validated before it was written
            self.verified_end = self.size
        self.dirty = True
        return pos0

    def _index_batches(self, pos: int, headers: list[BatchHeader], append_time_ms: int | list[int]) -> None:
        """Add the .batches entries for consecutive batches starting at ``pos``,
        and offset/time index entries every index.interval.bytes."""
        if len(headers) == 1 and not isinstance(append_time_ms, list):
            self._index_batch(pos, headers[0], append_time_ms)
            return
        base = self.base_offset
        interval = self.config.index_interval_bytes
        dense, sparse, timed = [], [], []
        pack_b, pack_o, pack_t = BatchIndex.ENTRY.pack, OffsetIndex.ENTRY.pack, TimeIndex.ENTRY.pack
        last_ts = self.time_index.last_entry()
        last_ts = last_ts[0] if last_ts else None
        since = self._bytes_since_index
        max_ts, max_off = self.max_timestamp, self.offset_of_max_timestamp
        # Sparse entries are hints: if an index fills mid-request, skip them rather than fail.
        sparse_room = self.offset_index.max_entries - self.offset_index.entries
        timed_room = self.time_index.max_entries - self.time_index.entries - 1  # one kept for seal()
        times = append_time_ms if isinstance(append_time_ms, list) else None
        for n, header in enumerate(headers):
            rel = header.base_offset - base
            dense.append(pack_b(rel, pos, times[n] if times is not None else append_time_ms))
            if since > interval and pos > 0 and len(sparse) < sparse_room:
                sparse.append(pack_o(rel, pos))
                if max_ts >= 0 and (last_ts is None or max_ts > last_ts) and len(timed) < timed_room:
                    timed.append(pack_t(max_ts, max_off - base))
                    last_ts = max_ts
                since = 0
            if header.max_timestamp > max_ts:
                max_ts, max_off = header.max_timestamp, header.base_offset
            since += header.size
            pos += header.size
        self.batch_index.append(b"".join(dense), len(dense), times is None and self._times_rise_to(append_time_ms)
                                and all(h.max_timestamp == append_time_ms for h in headers))
        if sparse:
            self.offset_index.append(b"".join(sparse), len(sparse))
        if timed:
            self.time_index.append(b"".join(timed), len(timed))
        self.next_offset = headers[-1].next_offset
        self.max_timestamp, self.offset_of_max_timestamp = max_ts, max_off
        self._bytes_since_index = since

    def _index_batch(self, pos: int, header: BatchHeader, append_time_ms: int) -> None:
        """``_index_batches`` for one batch (what a Produce request holds per partition)."""
        base = self.base_offset
        rel = header.base_offset - base
        since = self._bytes_since_index
        max_ts = self.max_timestamp
        bi = self.batch_index
        bi.append(_PACK_BATCH(rel, pos, append_time_ms), 1,
                  header.max_timestamp == append_time_ms and self._times_rise_to(append_time_ms))
        if since > self.config.index_interval_bytes and pos > 0:
            oi, ti = self.offset_index, self.time_index
            if oi.entries < oi.max_entries:  # hints: skipped rather than failed when full
                oi.append(_PACK_OFFSET(rel, pos), 1)
                if max_ts >= 0 and ti.entries < ti.max_entries - 1:  # one kept for seal()
                    last_ts = ti.last_entry()
                    if last_ts is None or max_ts > last_ts[0]:
                        ti.append(_PACK_TIME(max_ts, self.offset_of_max_timestamp - base), 1)
                since = 0
        if header.max_timestamp > max_ts:
            self.max_timestamp, self.offset_of_max_timestamp = header.max_timestamp, header.base_offset
        size = header.batch_length + rb.LOG_OVERHEAD
        self._bytes_since_index = since + size
        self.next_offset = header.base_offset + header.last_offset_delta + 1

    def _times_rise_to(self, append_time_ms: int) -> bool:
        """Would recovery give a batch appended now at ``append_time_ms`` that time, were
        its .batches entry lost? It takes a lost entry's time from the batch's max
        timestamp, raised to the entry before's time: so the batch must carry its
        append time (LogAppendTime) and the times before must not pass it. A segment's
        first entry never waits: other processes' readers would take the zeros where it
        belongs, (0, 0, 0), for an entry naming the first batch (log.reader)."""
        last = self.batch_index.last_entry()
        return last is not None and last[2] <= append_time_ms

    def index_room(self) -> int:
        """Entries the sparse indexes can still take."""
        return min(
            self.offset_index.max_entries - self.offset_index.entries,
            self.time_index.max_entries - self.time_index.entries - 1,  # keep one for seal()
        )

    def _truncate_file(self, size: int) -> None:
        """Drop bytes >= size, keeping the file length so no existing map faults."""
        fd = self._fd if self._fd is not None else os.open(self.log_path, os.O_RDWR)
        try:
            length = self._file_len
            os.ftruncate(fd, size)  # frees the blocks (ENOSPC relief) and zeroes the range
            if length > size:
                os.ftruncate(fd, length)
        finally:
            if fd is not self._fd:
                os.close(fd)

    def truncate_to(self, offset: int) -> None:
        """Drop the batch holding ``offset`` and everything after it. Rare
        (recovery, tests), so it simply cuts the file and rebuilds the indexes;
        the segment stays active or becomes active."""
        loc = self.locate(offset)
        if loc is None:
            return
        if self._fd is None:
            self._fd = os.open(self.log_path, os.O_RDWR)
        self._truncate_file(loc.position)
        self.recover(f"truncated to offset {loc.header.base_offset}", quiet=True, keep_active=True)

    # -- reading ----------------------------------------------------------------

    @property
    def first_append_ms(self) -> int | None:
        first = self.batch_index.first_entry()
        return first[2] if first else None

    @property
    def last_append_ms(self) -> int | None:
        last = self.batch_index.last_entry()
        return last[2] if last else None

    def header_at(self, position: int) -> BatchHeader:
        if position + rb.HEADER_SIZE > self._map_len:
            self._remap()
        return rb.parse_header(self._map, position)  # type: ignore[arg-type]

    def view(self, start: int, end: int) -> memoryview:
        """Zero-copy slice of the .log file."""
        if end <= start:
            return _EMPTY
        if end > self._map_len:
            self._remap()
        return memoryview(self._map)[start:end]  # type: ignore[arg-type]

    def end_of(self, i: int) -> int:
        """File position just past batch i."""
        return self.batch_index.position(i + 1) if i + 1 < self.batch_index.entries else self.size

    def locate(self, offset: int) -> BatchLocation | None:
        """The batch holding ``offset``, else the first batch after it; None if
        the segment has nothing at or after ``offset``."""
        bi = self.batch_index
        i = max(bi.floor_offset(offset - self.base_offset), 0)
        while i < bi.entries:
            pos = bi.position(i)
            header = self.header_at(pos)
            if header.last_offset >= offset:
                return BatchLocation(i, pos, header)
            i += 1
        return None

    # A consumer's next read starts where its last one ended: the batch index
    # there is remembered (checked against the entry before use), so reading on
    # from it costs no binary search. Made on first read; a few readers' worth.
    _read_hints: dict[int, int] | None = None

    def read(self, offset: int, max_bytes: int, upper: int, min_one_batch: bool) -> memoryview | None:
        """Whole batches from the one holding ``offset``, at most ``max_bytes``
        (the first batch whole if ``min_one_batch``), only batches entirely
        below ``upper``. None if this segment has nothing at or after offset."""
        bi = self.batch_index
        entries = bi.entries
        hints = self._read_hints
        i = hints.get(offset, -1) if hints is not None else -1
        if 0 <= i < entries and (rel_pos := bi.entry(i))[0] == offset - self.base_offset:
            start = rel_pos[1]  # the batch that starts at ``offset``
            if self._last_offset_from(start) >= upper:
                return _EMPTY
        else:
            loc = self.locate(offset)
            if loc is None:
                return None
            i, start = loc.index, loc.position
            if loc.header.last_offset >= upper:
                return _EMPTY
        limit = start + max_bytes
        # Byte budget: batch m-1 is the last to start within it; it fits only if it ends there too.
        after = bi.entry(i + 1) if i + 1 < entries else None  # (offset, position) of the next batch
        if self.size <= limit:
            j = entries - 1
        elif after is not None and after[1] > limit:
            j = i - 1  # the first batch alone is over the budget
        else:
            m = bi.first_above(limit, 1, lo=i + 1)
            j = m - 2 if m < entries else entries - 2
        # Offset bound: only batches whose last offset is below ``upper``.
        if j > i and self._last_offset_from(bi.position(j)) >= upper:
            k = bi.floor_offset(upper - 1 - self.base_offset)
            if k >= 0 and self._last_offset_from(bi.position(k)) >= upper:
                k -= 1
            j = min(j, k)
        if j < i:
            if not min_one_batch:
                return _EMPTY
            j = i
        if j != i:
            after = bi.entry(j + 1) if j + 1 < entries else None
        end = after[1] if after is not None else self.size
        if end > self.verified_end:
            end = self._verify(start, end)
        if hints is None:
            hints = self._read_hints = {}
        elif len(hints) >= 64:
            hints.clear()
        hints[self.base_offset + after[0] if after is not None else self.next_offset] = j + 1
        return self.view(start, end)

    def _last_offset_from(self, pos: int) -> int:
        """Last offset of the batch at ``pos`` (two fields of its header, not the whole)."""
        if pos + rb.HEADER_SIZE > self._map_len:
            self._remap()
        base, delta = _BASE_AND_LAST_DELTA.unpack_from(self._map, pos)  # type: ignore[arg-type]
        return base + delta

    def _verify(self, start: int, end: int) -> int:
        """CRC-check the batches of [start, end) not yet checked; return where the
        good bytes end. Raises CorruptRecord if the first batch is bad."""
        frm = self.verified_end if start <= self.verified_end else start
        found, stop = rb.scan_stored_batches(self.view(frm, end), 0, end - frm, -(2**63))
        stop += frm
        if start <= self.verified_end:
            self.verified_end = max(self.verified_end, stop)
        if stop < end:
            self.corrupt_at = stop if self.corrupt_at is None else min(self.corrupt_at, stop)
            logger.error("%s: batch at byte %d fails its CRC check; not serving it or what follows in "
                         "this segment", self.log_path, stop)
            if stop <= start:
                raise CorruptRecord(f"{self.log_path}: corrupt batch at byte {stop}")
        return stop

    def offset_at_position(self, position: int) -> int | None:
        """Base offset of the batch the dense index places at ``position``."""
        bi = self.batch_index
        i = bi.floor_position(position)
        if i < 0 or bi.position(i) != position:
            return None
        return self.base_offset + bi.entry(i)[0]

    def find_timestamp(self, ts: int, min_offset: int = 0) -> tuple[int, int] | None:
        """(timestamp, offset) of the first record at or after ``min_offset``
        stamped >= ts; batch granularity where records cannot be read cheaply."""
        if self.max_timestamp < ts:
            return None
        i = self.time_index.floor(ts - 1, 0)  # entries strictly below ts: safe to skip to
        rel = self.time_index.entry(i)[1] if i >= 0 else 0
        bi = self.batch_index
        start = max(bi.floor_offset(max(rel, min_offset - self.base_offset)), 0)
        for j in range(start, bi.entries):
            pos = bi.position(j)
            header = self.header_at(pos)
            if header.max_timestamp < ts or header.last_offset < min_offset:
                continue
            # Record granularity where the batch allows it cheaply, as Kafka answers.
            records = rb.record_timestamps(self.view(pos, pos + header.size), 0, header)
            if records is None:
                return header.max_timestamp, max(header.base_offset, min_offset)
            for offset, record_ts in records:
                if record_ts >= ts and offset >= min_offset:
                    return record_ts, offset
        return None

    def offset_of_timestamp_in_batch(self, offset: int, ts: int) -> int:
        """Offset of the first record stamped ``ts`` in the batch holding ``offset``."""
        loc = self.locate(offset)
        if loc is None:
            return offset
        view = self.view(loc.position, loc.position + loc.header.size)
        for record_offset, record_ts in rb.record_timestamps(view, 0, loc.header) or ():
            if record_ts == ts:
                return record_offset
        return loc.header.base_offset

    def position_of(self, i: int) -> int:
        """The Event Hubs position of batch i: where it was written, which the
        cleaner's ``.positions`` remembers; else base_position + file position."""
        if self.positions is not None:
            return self.positions[i]
        return self.base_position + self.batch_index.position(i)

    def first_at_position(self, position: int) -> int:
        """Index of the first batch whose Event Hubs position is >= ``position``
        (``batch_index.entries`` if none)."""
        if self.positions is not None:
            return bisect.bisect_left(self.positions, position)
        return self.batch_index.first_above(position - self.base_position - 1, 1)

    @property
    def end_position(self) -> int:
        """The Event Hubs position just past the last batch: the lowest a next segment may start at."""
        if self.positions is not None:
            last = self.batch_index.entries - 1
            return self.positions[last] + self.size - self.batch_index.position(last)
        return self.base_position + self.size

    def batch_position(self, offset: int) -> tuple[int, int] | None:
        """(Event Hubs position, append time) of the batch holding offset."""
        loc = self.locate(offset)
        if loc is None or loc.header.base_offset > offset:
            return None
        return self.position_of(loc.index), self.batch_index.entry(loc.index)[2]

    def event_position(self, offset: int) -> tuple[int, int] | None:
        """(Event Hubs offset, append time) of the event at ``offset``; an offset in
        a gap left by compaction is the last event before it."""
        loc = self.locate(offset)
        if loc is None or loc.header.base_offset > offset:
            return None
        delta = min(offset, loc.header.last_offset) - loc.header.base_offset
        return rb.event_offset(self.position_of(loc.index), delta), self.batch_index.entry(loc.index)[2]

    # -- lifecycle --------------------------------------------------------------

    def seal(self) -> None:
        """Stop being active: final time index entry, trim every file to its
        contents, release file descriptors."""
        if self.max_timestamp >= 0:
            last = self.time_index.last_entry()
            if (last is None or self.max_timestamp > last[0]) and self.time_index.writable:
                if not self.time_index.is_full:
                    self.time_index.append(
                        TimeIndex.ENTRY.pack(self.max_timestamp, self.offset_of_max_timestamp - self.base_offset), 1
                    )
        if self.file_suffix:
            # A cleaned segment has every file: the swap renames each suffix and takes a
            # missing one for one renamed before a crash (recovery._roll_swap_forward).
            self.offset_index.create()
            self.time_index.create()
        elif self.batch_index.entries:
            self.time_index.create()  # no batch had a timestamp: made empty, else it would read as lost
        if self.dirty and (self.config.flush_messages or self.config.flush_ms is not None):
            self.flush()
        if self._fd is not None:
            # Views handed out cover only [0, size), so shrinking cannot fault them.
            os.ftruncate(self._fd, self.size)
            os.close(self._fd)
            self._fd = None
        elif self._file_len != self.size:
            with open(self.log_path, "r+b") as f:
                f.truncate(self.size)
        self._file_len = self.size
        for index in (self.offset_index, self.time_index, self.batch_index):
            index.trim()
        self.active = False
        self._remap()

    @property
    def open_descriptors(self) -> int:
        """Descriptors this segment holds now (maps hold none)."""
        return ((self._fd is not None) + self.offset_index.fd_open + self.time_index.fd_open
                + self.batch_index.fd_open)

    def close_handles(self) -> None:
        """Close the write descriptors of an idle active segment. It stays
        active and mapped; the next append reopens them (files keep their size)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        for index in (self.offset_index, self.time_index, self.batch_index):
            index.close_fd()

    def _reopen_log(self) -> int:
        if not self.active:
            raise RuntimeError(f"{self.log_path.name} is not the active segment")
        self._fd = os.open(self.log_path, os.O_RDWR)
        return self._fd

    def flush(self) -> None:
        # Any descriptor of the file will do: fsync covers the inode's dirty pages.
        fsync_path(self._fd, self.log_path)
        for index in (self.offset_index, self.time_index, self.batch_index, self.txn_index):
            index.flush()
        self.dirty = False

    def close(self) -> None:
        if self.active:
            self.seal()
        self._drop_map()
        for index in (self.offset_index, self.time_index, self.batch_index):
            index.close()

    def set_base_position(self, base_position: int) -> None:
        self.batch_index.write_base_position(base_position)
        self.base_position = base_position
        self.base_position_known = True

    def release(self) -> None:
        """Let go of maps and descriptors as a crash would: nothing trimmed."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._drop_map()
        for index in (self.offset_index, self.time_index, self.batch_index):
            index.close()
        self.active = False

    def delete(self) -> None:
        """Unlink the files. A lock-free reader still holding this segment (one that took
        the log's segment list before it went) goes on reading it: the maps are made
        first (``keep_mapped``) and kept, and the files' space is freed when the last
        of them goes with this object."""
        try:
            self.keep_mapped()
        except (OSError, StorageError) as exc:  # such a reader then gets a clean error, never SIGBUS
            logger.debug("%s: not mapped before deletion: %s", self.log_path, exc)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        for index in (self.offset_index, self.time_index, self.batch_index):
            index.close_fd()
            index.path.unlink(missing_ok=True)
        self.txn_index.path.unlink(missing_ok=True)  # its entries stay in memory for such readers
        self.path_of(POSITIONS_SUFFIX).unlink(missing_ok=True)
        self.log_path.unlink(missing_ok=True)
        self.active = False

    @property
    def _map(self) -> Map | None:
        # Mapped on first read, by path, not self._fd: lock-free readers map while an
        # idle segment's descriptors may be closed by another thread. Only the file this
        # object opened is mapped, never past its end (StorageError instead of SIGBUS).
        m = self._mapped
        if m is None and self._map_len:
            m = self._mapped = map_read_only(self.log_path, None, self._map_len, self._file_id)
        return m

    @property
    def file_id(self) -> FileId | None:
        """(device, inode) of the .log file this object opened."""
        return self._file_id

    def keep_mapped(self) -> None:
        """Map now each file of this segment not mapped yet, so that this object goes on
        reading the files it has now whatever happens to their paths next. Maps are
        otherwise made by path on first read, and lock-free readers may hold a segment
        after it left the log: the cleaner's swap renames shorter files over its names,
        and a log started over at the same base offset makes new files there. Call it,
        under the log's lock, before either; ``delete`` does."""
        if self._mapped is None:
            self._map_len = self._file_len
        self._map  # noqa: B018  (the property maps)
        for index in (self.offset_index, self.time_index, self.batch_index):
            index.keep_mapped()

    def _remap(self) -> None:
        length = self._file_len
        if length == self._map_len:
            return
        self._drop_map()
        self._map_len = max(length, 0)  # mapped when next read

    def _drop_map(self) -> None:
        self._map_len = 0
        m, self._mapped = self._mapped, None
        release_map(m)

    def unmap(self) -> None:
        """Let go of the maps of the log and its indexes (mapped again when next
        read). Only where no lock-free reader can hold the segment yet: after loading."""
        m, self._mapped = self._mapped, None
        release_map(m)
        self.batch_index.first_entry()  # kept: the append path reads these, and then maps nothing
        for index in (self.offset_index, self.time_index, self.batch_index):
            index.last_entry()
            index.unmap()


def _rewrite_positions(path: Path, positions: array) -> None:
    """Replace a ``.positions`` file atomically; none is kept for no batches."""
    if not positions:
        path.unlink(missing_ok=True)
        return
    from .recovery import write_atomic  # recovery imports this module

    write_atomic(path, pack_positions(positions))
