"""PartitionLog: the segments of one partition, in one directory.

Offsets are assigned here; the bytes are validated once (``batch``), patched
(base offset, log-append time) and written with one pwrite. Reads are
zero-copy slices of the segment maps. Opening a directory recovers it: after
an unclean shutdown the active segment is re-validated batch by batch and cut
at the first torn or corrupt batch; damaged or missing indexes are rebuilt.

Producer state (``producer_state``) makes appends idempotent and tracks open
transactions; ``append_control`` writes transaction markers and indexes
aborted transactions (``.txnindex``); the last stable offset bounds
read_committed fetches.

Single replica, so the high watermark is the log end offset. Mutations take a
lock (flush and the cleaner's segment swap run on other threads); reads are
lock-free from the owner: they take ``self._segments`` once and work on that
list, which a swap replaces whole rather than editing in place. A segment that
leaves the list (swapped, deleted) is first made to map its files
(``LogSegment.keep_mapped``): a reader still holding it reads what it held,
never a file that took its name since.

Descriptors: maps hold none, and the active segment's (up to four) write
descriptors are closed after loading and reopened by the first write; a shared
``FileHandleCache`` closes them again when this log is the least recently
written of too many. A ``lazy`` log (what LogManager opens) only makes its
directory: segments are loaded and recovered on first use.
"""

from __future__ import annotations

import bisect
import logging
import operator
import threading
from pathlib import Path
from typing import NamedTuple

from . import batch as rb
from . import records as rec
from .batch import BatchHeader
from .config import LogConfig
from .errors import InvalidRecord, LogClosed, LogError, OffsetOutOfRange, RecordTooLarge, StorageError
from .handles import FileHandleCache, shared_cache
from .index import AbortedTxn
from .producer_state import BatchMetadata, CompletedTxn, Duplicate, ProducerInfo, ProducerStateManager
from .recovery import (
    CLEAN_SHUTDOWN_FILE, CLEANED_SUFFIX, LOG_START_OFFSET_FILE, fsync_dir, load_segments, swap_segments,
    write_atomic, lower_recovery_point, read_recovery_point, recovery_point_known, write_position_anchor,
    write_recovery_point,
)
from .segment import INT32_MAX, LogSegment

logger = logging.getLogger(__name__)

_EMPTY = memoryview(b"")
_BASE = operator.attrgetter("base_offset")
_unpack_header = rb.HEADER.unpack_from
_make_header = BatchHeader._make


def _header_at(buf, pos: int) -> BatchHeader:
    """The header of a batch already validated whole (no length check)."""
    return _make_header(_unpack_header(buf, pos))


# An append tells the descriptor cache it used its files at most this often while it holds as
# many as it last reported: its LRU order and idle time are then this coarse (idle files close
# after handles.IDLE_CLOSE_S, 10 s), and 1,000 partitions written round robin skip a locked
# OrderedDict update per append.
TOUCH_EVERY_S = 0.5
# The end of what the cleaner has cleaned (Kafka's cleaner-offset-checkpoint, one per partition
# here): compaction's dirty part starts there. Written by the cleaner, lowered by truncation.
CLEANER_CHECKPOINT_FILE = "cleaner-offset-checkpoint"
# Set by _load: a lazy log reaches them through __getattr__ until then.
_LOADED_ON_FIRST_USE = frozenset({"_segments", "_producers", "log_start_offset", "_last_append_ms"})


def _writable(buf) -> bool:
    if isinstance(buf, bytearray):
        return True
    return isinstance(buf, memoryview) and not buf.readonly and buf.contiguous


def _flush_sealed(seg: LogSegment, directory: Path, lock=None, still_there=None) -> None:
    """fsync a sealed segment, then record that the log below its end is on disk
    (the recovery point: recovery trusts segments below it to have kept their data),
    unless it left the log meanwhile (truncation, retention: ``still_there``)."""
    try:
        if seg.dirty:
            seg.flush()  # a deleted segment's files are skipped
        fsync_dir(directory)
        if lock is None:
            write_recovery_point(directory, seg.next_offset)
            return
        with lock:
            if still_there():
                write_recovery_point(directory, seg.next_offset)
    except OSError as exc:  # only weakens power-loss survival; a crash loses nothing
        logger.warning("%s: cannot fsync rolled segment %d: %s", directory, seg.base_offset, exc)


def _index_of(segments: list[LogSegment], offset: int) -> int:
    """Index of the segment that would hold ``offset`` (0 if it is below them all)."""
    return max(bisect.bisect_right(segments, offset, key=_BASE) - 1, 0)


class AppendInfo(NamedTuple):
    base_offset: int
    last_offset: int
    append_time_ms: int  # broker time of the append (Event Hubs enqueued time)
    log_append_time: bool  # True if batches were stamped LogAppendTime
    log_start_offset: int
    position: int  # Event Hubs offset (byte position) of the first batch
    headers: list[BatchHeader]  # as stored: offsets assigned, timestamps patched
    duplicate: bool = False  # an idempotent retry: nothing written, the original offsets


class SegmentInfo(NamedTuple):
    segment: LogSegment
    base_offset: int
    next_offset: int
    size: int
    base_position: int
    first_append_ms: int | None
    last_append_ms: int | None


class CompactionView(NamedTuple):
    """What the cleaner needs, taken under the partition lock."""

    segments: tuple[SegmentInfo, ...]  # every segment but the active one
    last_stable_offset: int
    log_start_offset: int
    aborted: tuple[AbortedTxn, ...]  # every .txnindex entry, the active segment's included
    producer_last_offsets: dict[int, int]  # producer id -> offset of its last data batch (-1: none)
    config: LogConfig
    # PartitionLog.truncations when the view was taken: swap_cleaned refuses a copy made
    # before a truncation (the segments it copied may have been cut in place since).
    truncations: int = 0


class PartitionLog:
    _segments: list[LogSegment]
    _producers: ProducerStateManager
    log_start_offset: int
    _last_append_ms: int

    def __init__(self, directory: Path, config: LogConfig, *, now_ms: int,
                 handles: FileHandleCache | None = None, lazy: bool = False):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.config = config
        self._lock = threading.RLock()
        self._closed = False
        self._handles = handles if handles is not None else shared_cache()
        self._unflushed = 0
        self._last_flush_ms = now_ms
        # A segment file (or this directory) was made since the last flush: fsync the directory too.
        self._dir_dirty = True
        self._rolled: list[LogSegment] = []  # sealed, not yet fsynced (crash durability)
        # How many times the log was cut (truncate_to, started over): see swap_cleaned.
        self.truncations = 0
        if not lazy:
            self._load()

    def __repr__(self) -> str:
        if not self.loaded:
            return f"PartitionLog({self.directory}, not loaded)"
        return f"PartitionLog({self.directory}, [{self.log_start_offset}, {self.log_end_offset}))"

    def __getattr__(self, name: str):
        # Reached only for attributes not set: a lazy log's state, loaded now.
        if name in _LOADED_ON_FIRST_USE and "_lock" in self.__dict__:
            self._ensure_loaded()
            return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def loaded(self) -> bool:
        return "_segments" in self.__dict__

    def _ensure_loaded(self) -> None:
        with self._lock:
            if self.loaded:
                return
            if self._closed:
                raise LogClosed(f"{self.directory} is closed")
            try:
                self._load()
            except OSError as exc:
                raise StorageError(f"cannot open {self.directory}: {exc.strerror or exc}", errno=exc.errno) from exc

    # -- state ------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        return self._segments[-1].next_offset

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return tuple(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def size_bytes(self) -> int:
        return sum(seg.size for seg in self._segments)

    @property
    def closed(self) -> bool:
        return self._closed

    def update_config(self, config: LogConfig) -> None:
        """Apply altered topic configs; index sizes apply from the next segment."""
        with self._lock:
            self.config = config
            for seg in self.__dict__.get("_segments", ()):
                seg.config = config

    # -- append -----------------------------------------------------------------

    def append(self, records, *, now_ms: int, base_offset: int | None = None,
               in_place: bool = False, headers: list[BatchHeader] | None = None,
               leader_epoch: int | None = None) -> AppendInfo:
        """Validate, assign offsets and write a Produce request's records blob.

        All batches are validated before anything is written; on any error the
        log is unchanged. OSError becomes StorageError after the partial write is
        undone. ``base_offset`` (default: the log end offset) may leave a gap
        but never go backwards. ``headers``: what ``validate_records`` already
        returned for ``records`` (the caller validated them: not walked twice).
        ``leader_epoch``: stamped on every batch as its partitionLeaderEpoch, as
        Kafka's LogValidator does (clients write 0 or -1); None keeps what it has.
        """
        if headers is None:
            headers = rb.validate_records(records)
        limit = self.config.max_message_bytes
        for header in headers:  # .size and .is_control, without their property calls
            if header.batch_length + rb.LOG_OVERHEAD > limit:
                raise RecordTooLarge(
                    f"record batch of {header.size} bytes exceeds max.message.bytes={limit}: "
                    "send smaller batches (producer batch.size / max.request.size)"
                )
            if header.attributes & rb.CONTROL_BIT:
                raise InvalidRecord("a produce request may not hold control batches: only the broker writes them")
        with self._lock:
            self._check_open()
            leo = self._segments[-1].next_offset
            if base_offset is None:
                base_offset = leo
            elif base_offset < leo:
                raise ValueError(f"base offset {base_offset} is below the log end offset {leo}")
            append_time = max(now_ms, self._last_append_ms)  # keep enqueued times monotonic
            log_append_time = self.config.log_append_time
            # ``in_place``: the caller owns a writable buffer we may patch (the
            # server's request frame), saving a copy; otherwise the caller's bytes stay as they are.
            buf = records if in_place and _writable(records) else bytearray(records)
            stored: list[BatchHeader] = []
            pos, offset = 0, base_offset
            idempotent = False
            for header in headers:
                rb.patch_base_offset(buf, pos, offset)
                if leader_epoch is not None and header.partition_leader_epoch != leader_epoch:
                    rb.patch_leader_epoch(buf, pos, leader_epoch)
                size = header.batch_length + rb.LOG_OVERHEAD
                # A batch the broker built already stamped (Event Hubs sends) keeps its CRC: no second pass.
                if log_append_time and (header.max_timestamp != append_time
                                        or not header.attributes & rb.TIMESTAMP_TYPE_BIT):
                    rb.stamp_log_append_time(buf, pos, size, header.attributes, append_time)
                stored.append(_header_at(buf, pos))
                idempotent = idempotent or header.producer_id >= 0
                offset += header.last_offset_delta + 1
                pos += size
            pending = None
            if idempotent:
                pending = self._producers.validate(stored, append_time)
                if isinstance(pending, Duplicate):
                    return self._duplicate_info(pending.batch)
            seg, position = self._write(buf, stored, now_ms, append_time)
            if pending:
                self._producers.commit(pending, offset)
            self._producers.map_end_offset = offset
            return AppendInfo(
                base_offset, offset - 1, append_time, log_append_time, self.log_start_offset,
                seg.base_position + position, stored,
            )

    def append_as_follower(self, data, append_ms: list[int]) -> int:
        """Kafka's appendAsFollower: write batches exactly as another log stored them
        (offsets assigned, log-append times set, control batches included), each with
        its append time from ``append_ms``. The first must start at or after the log
        end offset (a gap, as compaction leaves, is allowed); the bytes are validated
        (CRC) but never patched, and producer state follows them as on replay.
        Returns the new log end offset."""
        headers = [h for _pos, h in rb.iter_batches(data)]
        if sum(h.size for h in headers) != len(data):
            raise InvalidRecord("replicated data does not end at a batch boundary")
        pos = 0
        for h in headers:  # stored bytes, but they crossed a link: check them
            if rb.crc32c(data[pos + rb.ATTRIBUTES_OFFSET:pos + h.size]) != h.crc:
                raise InvalidRecord(f"replicated batch at offset {h.base_offset} fails its CRC-32C check")
            pos += h.size
        if len(headers) != len(append_ms):
            raise ValueError(f"{len(headers)} batches but {len(append_ms)} append times")
        with self._lock:
            self._check_open()
            leo = self.log_end_offset
            if headers and headers[0].base_offset < leo:
                raise ValueError(f"replicated batch at offset {headers[0].base_offset} is below the "
                                 f"log end offset {leo}")
            pos = 0
            for header, ms in zip(headers, append_ms):
                one = data[pos:pos + header.size]
                aborted: list[AbortedTxn] = []
                self._producers.apply(header, one, 0, ms, aborted)
                self._write(one, [header], ms, ms, aborted[0] if aborted else None)
                pos += header.size
            return self.log_end_offset

    def _write(
        self, buf, stored: list[BatchHeader], now_ms: int, append_time: int, aborted: AbortedTxn | None = None
    ) -> tuple[LogSegment, int]:
        """Write batches with offsets assigned (and an ABORT's .txnindex entry)."""
        base_offset, last_offset = stored[0].base_offset, stored[-1].last_offset
        try:
            seg = self._segment_for_append(base_offset, last_offset, len(buf), len(stored), now_ms)
            if aborted is not None:
                seg.txn_index.append(aborted)  # first: a crash then leaves an entry recovery drops
            try:
                position = seg.append(buf, stored, append_time)
            except BaseException:
                if aborted is not None:
                    seg.txn_index.remove_last()
                raise
        except OSError as exc:
            self._handles.touch(self, self._segments[-1].open_descriptors)  # reopened, maybe
            raise StorageError(f"cannot write to {self.directory}: {exc.strerror or exc}", errno=exc.errno) from exc
        self._last_append_ms = append_time
        self._unflushed += len(stored)
        fds = seg.open_descriptors
        if not self._handles.touched_within(self, fds, TOUCH_EVERY_S):
            self._handles.touch(self, fds)
        cfg = self.config
        if cfg.flush_messages is not None or cfg.flush_ms is not None:
            self._maybe_flush(now_ms)
        return seg, position

    def _duplicate_info(self, meta: BatchMetadata) -> AppendInfo:
        found = self.batch_position(meta.first_offset)
        position, append_ms = found if found is not None else (-1, meta.timestamp)
        return AppendInfo(
            meta.first_offset, meta.last_offset, append_ms, self.config.log_append_time, self.log_start_offset,
            position, [], True,
        )

    def append_control(
        self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int, *, now_ms: int,
        leader_epoch: int = 0,
    ) -> AppendInfo:
        """Write a COMMIT or ABORT marker for ``producer_id`` (WriteTxnMarkers)
        and close its open transaction; an ABORT of a transaction with data
        here gets a ``.txnindex`` entry. Raises InvalidProducerEpoch for a
        stale producer epoch, TransactionCoordinatorFenced for a stale
        coordinator epoch."""
        with self._lock:
            self._check_open()
            producers = self._producers
            producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
            append_time = max(now_ms, self._last_append_ms)
            offset = self.log_end_offset
            buf = rec.control_batch(
                base_offset=offset, producer_id=producer_id, producer_epoch=producer_epoch, commit=commit,
                coordinator_epoch=coordinator_epoch, timestamp=append_time,
            )
            rb.patch_leader_epoch(buf, 0, leader_epoch)  # stamped as append() stamps a produced batch
            if self.config.log_append_time:
                rb.set_log_append_time(buf, 0, append_time)
            header = rb.parse_header(buf)
            aborted = None
            first = producers.ongoing.get(producer_id, -1)
            if not commit and first >= 0:
                done = CompletedTxn(producer_id, first, offset, True)
                aborted = AbortedTxn(producer_id, first, offset, producers.last_stable_offset_after(done))
            seg, position = self._write(buf, [header], now_ms, append_time, aborted)
            producers.complete_txn(
                producer_id, producer_epoch, offset, not commit, coordinator_epoch, header.max_timestamp, append_time
            )
            return AppendInfo(
                offset, offset, append_time, self.config.log_append_time, self.log_start_offset,
                seg.base_position + position, [header],
            )

    def _segment_for_append(self, base_offset: int, last_offset: int, size: int, batches: int, now_ms: int) -> LogSegment:
        seg = self._segments[-1]
        cfg = self.config
        if seg.size == 0:
            if base_offset != seg.base_offset:  # an explicit base offset: the empty segment moves
                return self._replace_empty_active(base_offset)
            return seg
        first = seg.first_append_ms
        if (
            seg.size + size > cfg.segment_bytes
            or (first is not None and now_ms - first >= cfg.segment_ms)
            or seg.index_room() < batches
            or last_offset - seg.base_offset > INT32_MAX
            or seg.size + size > INT32_MAX
        ):
            return self._roll(base_offset)
        return seg

    def _roll(self, base_offset: int | None = None) -> LogSegment:
        old = self._segments[-1]
        old.seal()  # fsyncs it first where the topic fsyncs (flush.messages / flush.ms)
        if self._fsyncs:
            _flush_sealed(old, self.directory)  # flushed by seal(): only the recovery point is left
        else:
            # As Kafka does on roll: the sealed segment is fsynced later, off the append path, by
            # the log flusher (flush_rolled), so a power loss in crash durability loses at most
            # the newest segments' data, not older ones.
            self._rolled.append(old)
        new = LogSegment.create(
            self.directory, old.next_offset if base_offset is None else base_offset, old.end_position, self.config,
        )
        self._segments.append(new)
        self._dir_dirty = True
        self._handles.touch(self, new.open_descriptors)
        logger.debug("%s: rolled to segment %d", self.directory, new.base_offset)
        try:
            # Durable where the topic asks for fsync (the power-loss durability mode).
            self._producers.take_snapshot(new.base_offset, durable=self._fsyncs)
        except OSError as exc:  # only costs a longer replay when the log is next opened
            logger.warning("%s: cannot write a producer state snapshot: %s", self.directory, exc)
        return new

    def _replace_empty_active(self, base_offset: int) -> LogSegment:
        old = self._segments.pop()
        old.delete()
        new = LogSegment.create(self.directory, base_offset, old.base_position, self.config)
        self._segments.append(new)
        self._dir_dirty = True
        return new

    def roll(self) -> None:
        """Seal the active segment and start a new one (no-op when it is empty)."""
        with self._lock:
            self._check_open()
            if self._segments[-1].size:
                self._roll()

    # -- read -------------------------------------------------------------------

    def read(
        self, offset: int, max_bytes: int, *, max_offset: int | None = None, min_one_batch: bool = True
    ) -> memoryview:
        """Whole batches from the one holding ``offset``: at most ``max_bytes``
        (but the first batch whole when ``min_one_batch``, as KIP-74 asks), none
        at or past ``max_offset`` or the log end offset, and from one segment
        only (call again from the next offset for more). Empty at the end."""
        if self._closed:
            raise LogClosed(f"{self.directory} is closed")
        segments = self._segments
        leo = segments[-1].next_offset
        if offset < self.log_start_offset or offset > leo:
            raise OffsetOutOfRange(
                f"offset {offset} is outside [{self.log_start_offset}, {leo}]",
                log_start_offset=self.log_start_offset, log_end_offset=leo,
            )
        upper = leo if max_offset is None else min(leo, max_offset)
        if offset >= upper:
            return _EMPTY
        last = segments[-1]
        # Most reads are of the active segment: no search of the segment list.
        for seg in (last,) if offset >= last.base_offset else segments[_index_of(segments, offset) :]:
            try:
                view = seg.read(offset, max_bytes, upper, min_one_batch)
            finally:
                if seg.corrupt_at is not None and seg is self._segments[-1]:
                    self._drop_corrupt_tail(seg)
            if view is not None:
                return view
        return _EMPTY

    def _drop_corrupt_tail(self, seg: LogSegment) -> None:
        """Bit rot found on read in the active segment: truncate there, as
        recovery would have (only the damaged tail goes; sealed segments are
        never truncated, their corrupt batches are just not served)."""
        pos, seg.corrupt_at = seg.corrupt_at, None
        offset = seg.offset_at_position(pos)
        if offset is None:
            return
        logger.warning("%s: dropped %d bytes from offset %d on: torn or corrupt batch found on read",
                       self.directory, seg.size - pos, offset)
        self.truncate_to(offset)

    def offset_for_timestamp(self, ts_ms: int) -> tuple[int, int] | None:
        """(timestamp, offset) of the first record stamped >= ts_ms, as
        ListOffsets wants; None if there is none. For compressed CreateTime
        batches the answer is the batch (base offset, maxTimestamp): finding the
        record would mean decompressing on the request path. Under the lock: the
        active segment's .timeindex writes its pending entries when read (index.py)."""
        with self._lock:
            for seg in list(self._segments):
                if seg.max_timestamp >= ts_ms:
                    found = seg.find_timestamp(ts_ms, self.log_start_offset)
                    if found is not None:
                        return found
            return None

    def max_timestamp(self) -> tuple[int, int]:
        """(timestamp, offset) of the first record with the largest timestamp
        (batch granularity for compressed batches); (-1, -1) if empty."""
        best, holder = (-1, -1), None
        for seg in list(self._segments):
            if seg.max_timestamp > best[0]:
                best, holder = (seg.max_timestamp, seg.offset_of_max_timestamp), seg
        if holder is not None:  # the segment knows the batch; find the record
            best = (best[0], holder.offset_of_timestamp_in_batch(best[1], best[0]))
        return best

    def batch_position(self, offset: int) -> tuple[int, int] | None:
        """(Event Hubs byte offset, append time ms) of the batch holding ``offset``."""
        segments = self._segments
        if offset < self.log_start_offset or offset >= segments[-1].next_offset:
            return None
        return segments[_index_of(segments, offset)].batch_position(offset)

    def stored_batches(self, offset: int, max_bytes: int) -> list[tuple[int, int, memoryview]]:
        """What :meth:`read` returns, batch by batch with its Event Hubs byte offset
        and append time: [(position, append_time_ms, batch bytes)]."""
        view = self.read(offset, max_bytes)
        if not len(view):
            return []
        first = rb.parse_header(view, 0).base_offset
        segments = self._segments
        seg = segments[_index_of(segments, first)]
        loc = seg.locate(first)
        bi, i = seg.batch_index, loc.index
        out, p, end = [], 0, len(view)
        while p < end:
            size = rb.parse_header(view, p).size
            out.append((seg.position_of(i), bi.entry(i)[2], view[p:p + size]))
            p += size
            i += 1
        return out

    def event_position(self, offset: int) -> tuple[int, int] | None:
        """(Event Hubs offset, append time ms) of the event at Kafka ``offset``."""
        segments = self._segments
        if offset < self.log_start_offset or offset >= segments[-1].next_offset:
            return None
        return segments[_index_of(segments, offset)].event_position(offset)

    def last_event_offset_ever(self) -> int:
        """An Event Hubs offset at or past every event's this partition has ever held (-1
        for none): its last record's, in the active segment, which the cleaner never
        rewrites. Not the last event's now: compaction can take that away, and an offset
        handed to a reader for it (a checkpoint, an SDK's reconnection) stays valid."""
        active = self._segments[-1]
        if active.next_offset > active.base_offset:
            where = self.event_position(active.next_offset - 1)
            if where is not None:
                return where[0]
        return active.base_position * rb.EVENTS_PER_POSITION - 1  # (where the next batch goes, less one)

    def offset_at_event_offset(self, event_offset: int) -> int:
        """The Kafka offset of the first event whose Event Hubs offset is at or
        after ``event_offset`` (the log end offset when there is none)."""
        position, delta = divmod(max(event_offset, 0), rb.EVENTS_PER_POSITION)
        for seg in list(self._segments):
            bi = seg.batch_index
            if not bi.entries or seg.position_of(bi.entries - 1) < position:
                continue
            i = seg.first_at_position(position)
            if i >= bi.entries:
                continue
            rel = bi.entry(i)[0]
            if seg.position_of(i) == position and delta:
                # Inside this batch: its events from the delta on (or the next batch's first).
                if i + 1 < bi.entries:
                    return max(seg.base_offset + min(rel + delta, bi.entry(i + 1)[0]), self.log_start_offset)
                return max(min(seg.base_offset + rel + delta, seg.next_offset), self.log_start_offset)
            return max(seg.base_offset + rel, self.log_start_offset)
        return self.log_end_offset

    def offset_for_append_time(self, ts_ms: int, inclusive: bool = True) -> int:
        """The first Kafka offset of the first batch appended at or after ``ts_ms``
        (after, when not ``inclusive``): Event Hubs' enqueued-time position. The
        log end offset when there is none."""
        for seg in list(self._segments):
            bi = seg.batch_index
            n = bi.entries
            first = bi.first_entry()  # kept by the index: the usual answer (retention) without a map
            if first is not None and (first[2] >= ts_ms if inclusive else first[2] > ts_ms):
                return max(seg.base_offset + first[0], self.log_start_offset)
            if not n or (bi.entry(n - 1)[2] < ts_ms if inclusive else bi.entry(n - 1)[2] <= ts_ms):
                continue
            lo, hi = 0, n - 1  # append times never decrease within a partition
            while lo < hi:
                mid = (lo + hi) // 2
                t = bi.entry(mid)[2]
                if t >= ts_ms if inclusive else t > ts_ms:
                    hi = mid
                else:
                    lo = mid + 1
            return max(seg.base_offset + bi.entry(lo)[0], self.log_start_offset)
        return self.log_end_offset

    # -- transactions -----------------------------------------------------------

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the earliest open transaction (never below the
        log start offset), else the high watermark: read_committed consumers
        read below it."""
        hw = self.high_watermark
        first = self._producers.first_unstable_offset()
        if first is None:
            return hw
        return min(hw, max(first, self.log_start_offset))

    def hidden(self, header) -> bool:
        """Is the batch ``header`` heads one a read_committed reader skips: a transaction
        marker, or a batch of an aborted transaction? (Callers test the attribute bits
        first: most batches are neither.)"""
        if header.attributes & rb.CONTROL_BIT:
            return True
        return bool(header.attributes & rb.TRANSACTIONAL_BIT) and any(
            pid == header.producer_id
            for pid, _ in self.aborted_transactions(header.base_offset, header.last_offset + 1))

    def aborted_transactions(self, fetch_offset: int, upper_offset: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions overlapping
        [fetch_offset, upper_offset), for a read_committed Fetch response."""
        segments = self._segments
        last = segments[-1]
        if fetch_offset >= last.base_offset and not last.txn_index.entries:
            return []  # a read of the active segment, which holds no aborted transaction
        found: list[AbortedTxn] = []
        for seg in segments[_index_of(segments, fetch_offset) :]:
            if seg.txn_index.collect(fetch_offset, upper_offset, found):
                break
        return [(e.producer_id, e.first_offset) for e in found]

    def open_transactions(self, *, load: bool = False) -> list[tuple[int, int, int, int]]:
        """(producer id, producer epoch, first offset, append time ms of that
        offset) of every transaction open here: what holds the last stable offset.
        A log not loaded yet has none to tell, unless ``load``."""
        if load:
            self._ensure_loaded()
        with self._lock:
            if self._closed or not self.loaded:
                return []
            out = []
            for pid, first in sorted(self._producers.ongoing.items(), key=lambda kv: kv[1]):
                entry = self._producers.producers.get(pid)
                epoch = entry.producer_epoch if entry is not None else -1
                found = self.batch_position(first)
                out.append((pid, epoch, first, found[1] if found is not None else self._last_append_ms))
            return out

    def describe_producers(self) -> list[ProducerInfo]:
        """DescribeProducers: every producer with state here."""
        with self._lock:
            return self._producers.describe()

    def adopt_producers(self, other: "PartitionLog") -> list[int]:
        """Take the idempotence state of ``other``'s producers where it is ahead of
        ours (a geo-replica promoted without the last batches the old primary took):
        their next batch follows on in sequence, and a retry of a batch only
        ``other`` holds is answered as the duplicate it is, with ``other``'s
        offsets. Transactional producers are dropped instead: their open
        transactions are not here (their next batch gets UNKNOWN_PRODUCER_ID).
        Returns the producer ids taken or dropped."""
        with self._lock, other._lock:
            mine, theirs = self._producers, other._producers
            changed = []
            for pid, entry in theirs.producers.items():
                have = mine.producers.get(pid)
                if have is not None and (have.producer_epoch, have.last_seq) == (entry.producer_epoch,
                                                                                 entry.last_seq):
                    continue
                changed.append(pid)
                if entry.current_txn_first_offset >= 0 or (have is not None and have.current_txn_first_offset >= 0):
                    if mine.producers.pop(pid, None) is not None:
                        mine.forgotten[pid] = entry.last_update_ms
                    continue
                mine.producers[pid] = entry.copy()
                mine.forgotten.pop(pid, None)
            return changed

    def expire_producers(self, now_ms: int) -> int:
        """Forget producers idle for producer_id_expiration_ms (and with no
        open transaction); returns how many. Call periodically."""
        with self._lock:
            if self._closed or not self.loaded:  # loading replays snapshots: expiry then
                return 0
            self._producers.expiration_ms = self.config.producer_id_expiration_ms
            return len(self._producers.expire(now_ms))

    # -- compaction support -----------------------------------------------------

    def compaction_view(self, *, producers: bool = True) -> CompactionView:
        with self._lock:
            self._check_open()
            # Only segments below the recovery point (fsynced) are cleaned: a gap compaction
            # leaves above it would read as lost data to recovery after a power loss.
            point = read_recovery_point(self.directory) if recovery_point_known(self.directory) else None
            infos = tuple(
                SegmentInfo(s, s.base_offset, s.next_offset, s.size, s.base_position, s.first_append_ms,
                            s.last_append_ms)
                for s in self._segments[:-1] if point is None or s.next_offset <= point
            )
            last_offsets = (
                {pid: e.last_data_offset for pid, e in self._producers.producers.items()} if producers else {}
            )
            aborted = tuple(e for s in self._segments for e in s.txn_index.entries) if producers else ()
            return CompactionView(
                infos, self.last_stable_offset, self.log_start_offset, aborted, last_offsets, self.config,
                self.truncations,
            )

    def swap_cleaned(self, groups: list[tuple[list[LogSegment], int]], *, truncations: int) -> bool:
        """Replace each run of segments by the cleaned segment written as
        ``{base:020d}.*.cleaned`` (see recovery.swap_segments). ``truncations``:
        the view's (``compaction_view``) the copies were made from. Returns False,
        changing nothing, if any of them left the log meanwhile (retention,
        truncation, close) or the log was cut since the view. Segments replaced
        keep their maps: reads in flight over them stay valid until they let go."""
        # The full check of the new segments' indexes (every entry) comes first, off the lock:
        # its cost is per batch (~120 ms for 200,000), which appends to this partition waited for.
        for _, new in groups:
            try:
                problem = LogSegment.replacement_problem(self.directory, new, self.config, CLEANED_SUFFIX)
            except (OSError, LogError) as exc:
                problem = str(exc)
            if problem is not None:
                logger.warning("%s: the cleaned segment %d fails its check (%s); not swapped in, compaction "
                               "retries later", self.directory, new, problem)
                return False
        with self._lock:
            if self._closed:
                return False
            if truncations != self.truncations:
                # A segment still listed may have been cut in place (truncate_to keeps the
                # object: a compacted one is sealed again): the copy holds records past the
                # cut, which would come back with offsets the log hands out again.
                return False
            current = {id(seg) for seg in self._segments[:-1]}
            if not all(id(seg) in current for olds, _ in groups for seg in olds):
                return False
            try:
                # Lock-free readers go on using these objects until self._segments is replaced
                # below, and maybe after: they must keep the files they have, not map by path
                # the shorter ones renamed there (SIGBUS).
                for olds, _ in groups:
                    for seg in olds:
                        seg.keep_mapped()
            except (OSError, StorageError) as exc:  # nothing changed yet: a later round retries
                logger.warning("%s: cannot map the segments to replace (%s); compaction retries later",
                               self.directory, exc)
                return False
            try:
                swap_segments(self.directory, [(new, [s.base_offset for s in olds]) for olds, new in groups])
                loaded = {
                    # Checked in full above: the first and last entries tell that the renames took.
                    id(olds[0]): LogSegment.load(self.directory, new, self.config, recover=False, full_check=False)
                    for olds, new in groups
                }
            except OSError as exc:
                # The swap is committed on disk and is finished when the log is next opened.
                self._closed = True
                raise StorageError(
                    f"compaction swap in {self.directory} failed: {exc.strerror or exc}; the log is offline "
                    "until it is reopened", errno=exc.errno,
                ) from exc
            replaced = {id(seg) for olds, _ in groups for seg in olds}
            segments = []
            for seg in self._segments:
                if id(seg) in loaded:
                    segments.append(loaded[id(seg)])
                elif id(seg) not in replaced:
                    segments.append(seg)
            self._segments = segments  # one assignment: lock-free readers see old or new
            return True

    # -- deletion ---------------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset`` (persisted)
        and delete segments entirely below it. Returns the log start offset."""
        with self._lock:
            self._check_open()
            if offset < 0 or offset > self.high_watermark:
                raise OffsetOutOfRange(
                    f"cannot delete records before {offset}: the high watermark is {self.high_watermark}",
                    log_start_offset=self.log_start_offset, log_end_offset=self.log_end_offset,
                )
            if offset > self.log_start_offset:
                self._set_log_start_offset(offset)
                n = 0
                while n < len(self._segments) and self._segments[n].next_offset <= offset:
                    n += 1
                self._delete_prefix(n)
            return self.log_start_offset

    def enforce_retention(self, now_ms: int) -> int:
        """Delete whole segments past retention.ms (by their last append time)
        or beyond retention.bytes, then move the log start offset past every
        batch appended before the retention cutoff, though its segment stays
        (Event Hubs removes each event when its retention has passed, whatever
        the segment size). Returns the number of segments deleted."""
        with self._lock:
            self._check_open()
            cfg = self.config
            if not cfg.delete_enabled:
                return 0
            n = 0
            segments = self._segments
            if cfg.retention_ms >= 0:
                cutoff = now_ms - cfg.retention_ms
                # An empty segment other than the active one (emptied by compaction) goes too.
                while (
                    n < len(segments) and (segments[n].size or n < len(segments) - 1)
                    and (segments[n].last_append_ms or 0) < cutoff
                ):
                    n += 1
            if cfg.retention_bytes >= 0:
                excess = self.size_bytes - sum(s.size for s in segments[:n]) - cfg.retention_bytes
                while n < len(segments) - 1 and excess >= segments[n].size:
                    excess -= segments[n].size
                    n += 1
            deleted = 0
            if n:
                new_start = segments[n - 1].next_offset
                deleted = self._delete_prefix(n)
                # Nothing is left below the first segment kept (a gap after a deleted empty one).
                new_start = max(new_start, min(self._segments[0].base_offset, self.log_end_offset))
                if new_start > self.log_start_offset:
                    self._set_log_start_offset(new_start)
                logger.info("%s: retention deleted %d segments; log start offset %d", self.directory,
                            deleted, self.log_start_offset)
            if cfg.retention_ms >= 0:
                first_kept = min(self.offset_for_append_time(now_ms - cfg.retention_ms), self.high_watermark)
                if first_kept > self.log_start_offset:
                    self._set_log_start_offset(first_kept)
                    logger.debug("%s: events before offset %d are past retention", self.directory,
                                 first_kept)
            return deleted

    def _delete_prefix(self, n: int) -> int:
        """Delete the first n segments; roll first if that includes the active one."""
        if n <= 0:
            return 0
        if n >= len(self._segments):
            n = len(self._segments)
            if self._segments[-1].size:
                self._roll()
            else:
                n -= 1  # the active segment is already empty: it stays
        doomed = self._segments[:n]
        first = self._segments[n]
        write_position_anchor(self.directory, first.base_offset, first.base_position)
        self._segments = self._segments[n:]
        for seg in doomed:
            seg.delete()
        self._producers.delete_snapshots(below=self._segments[0].base_offset)
        return len(doomed)

    def truncate_to(self, offset: int) -> None:
        """Drop the batch holding ``offset`` and everything after it (whole
        batches: the log end offset becomes that batch's base offset)."""
        with self._lock:
            self._check_open()
            if offset >= self.log_end_offset:
                return
            self.truncations += 1  # before any cut: a cleaning copied before it is refused
            if offset <= self._segments[0].base_offset:
                # Nothing survives: start over at offset, keeping Event Hubs positions increasing.
                self._start_over_at(offset, self._segments[0].base_position)
                return
            self._lower_cleaner_checkpoint(offset)  # first: a crash during the cut leaves it lowered
            i = _index_of(self._segments, offset)
            for seg in reversed(self._segments[i + 1 :]):
                seg.delete()
            self._segments = self._segments[: i + 1]
            self._segments[i].truncate_to(offset)
            lower_recovery_point(self.directory, self.log_end_offset)
            self._lower_cleaner_checkpoint(self.log_end_offset)
            if self.log_start_offset > self.log_end_offset:
                self._set_log_start_offset(self.log_end_offset, allow_decrease=True)
            self._producers.rebuild(self._segments, upto=self.log_end_offset)
            if self._segments[i].positions is not None:
                self._roll()  # a compacted segment takes no appends (see LogSegment)
            self._handles.touch(self, self._segments[-1].open_descriptors)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Kafka's truncateFullyAndStartAt: every segment goes, and the (empty) log
        starts at ``offset``, before or past its old end (a follower whose leader's
        retention removed what it lacked)."""
        with self._lock:
            self._check_open()
            self._start_over_at(offset, self._segments[-1].base_position + self._segments[-1].size)

    def _start_over_at(self, offset: int, position: int) -> None:
        self.truncations += 1
        self._lower_cleaner_checkpoint(offset)
        for seg in reversed(self._segments):
            seg.delete()
        self._segments = [LogSegment.create(self.directory, offset, position, self.config)]
        lower_recovery_point(self.directory, offset)
        write_position_anchor(self.directory, offset, position)
        self._set_log_start_offset(offset, allow_decrease=True)
        # As Kafka's truncateFullyAndStartAt: no producer state survives.
        self._producers.delete_snapshots(above=-1)
        self._producers.reset(offset)
        self._producers.incomplete = offset > 0
        self._handles.touch(self, self._segments[-1].open_descriptors)

    def _lower_cleaner_checkpoint(self, offset: int) -> None:
        """After a cut at ``offset``: the cleaner's checkpoint is never past it (Kafka's
        maybeTruncateCheckpoint). What is written at those offsets again is dirty: its keys
        must supersede older values (a tombstone there would otherwise never remove the
        value before it, which comes back once the tombstone goes)."""
        path = self.directory / CLEANER_CHECKPOINT_FILE
        try:
            checkpoint = int(path.read_text().strip())
        except (FileNotFoundError, ValueError):
            return
        if checkpoint > offset:
            write_atomic(path, f"{offset}\n".encode())

    def set_cleaner_checkpoint(self, offset: int, *, truncations: int) -> bool:
        """The cleaner's: record that the log below ``offset`` is cleaned, unless it was
        cut since its view (``truncations``: CompactionView's), which may have lowered it."""
        with self._lock:
            if self._closed or truncations != self.truncations:
                return False
            write_atomic(self.directory / CLEANER_CHECKPOINT_FILE, f"{offset}\n".encode())
            return True

    # -- durability -------------------------------------------------------------

    def _maybe_flush(self, now_ms: int) -> None:
        cfg = self.config
        if (cfg.flush_messages is not None and self._unflushed >= cfg.flush_messages) or (
            cfg.flush_ms is not None and now_ms - self._last_flush_ms >= cfg.flush_ms
        ):
            self._flush(now_ms)

    def flush_rolled(self) -> int:
        """fsync the segments rolled since the last call (the log flusher's thread
        calls this); returns how many."""
        if not self._rolled:  # the usual case, without the lock (an append may roll after either way)
            return 0
        with self._lock:
            rolled, self._rolled = self._rolled, []
        for seg in rolled:  # without the lock: appends go on meanwhile
            _flush_sealed(seg, self.directory, self._lock, lambda seg=seg: any(s is seg for s in self._segments))
        return len(rolled)

    def write_pending_entries(self) -> None:
        """Write the active segment's .batches entries kept in memory, so readers in other
        processes (Capture) see every batch within a flusher pass (the log flusher calls
        this about once a second). Skipped while another thread holds the log."""
        if not self.loaded:  # (a lazy log not used yet has nothing waiting: not loaded for this)
            return
        segments = self._segments
        if not segments or not segments[-1].batch_index.pending_entries:
            return
        if not self._lock.acquire(blocking=False):
            return
        try:
            if not self._closed:
                self._segments[-1].batch_index.write_pending()
        except OSError as exc:  # kept: the next append, roll or close writes them
            logger.warning("%s: cannot write .batches entries: %s", self.directory, exc)
        finally:
            self._lock.release()

    def maybe_flush(self, now_ms: int) -> None:
        """For a periodic task: fsync if flush.ms has elapsed with unflushed data."""
        with self._lock:
            if not self._closed and self._unflushed:
                self._maybe_flush(now_ms)

    def flush(self) -> None:
        """fsync every segment written since the last flush."""
        with self._lock:
            if not self._closed and self.loaded:
                self._flush(self._last_flush_ms)

    @property
    def _fsyncs(self) -> bool:
        """Does this topic fsync at all (flush.messages or flush.ms set)?"""
        return self.config.flush_messages is not None or self.config.flush_ms is not None

    def _flush(self, now_ms: int) -> None:
        try:
            for seg in self._segments:
                if seg.dirty:
                    seg.flush()
            if self._dir_dirty:
                # The new segment's files (and this directory) are found after a power loss.
                fsync_dir(self.directory)
                fsync_dir(self.directory.parent)
                self._dir_dirty = False
        except OSError as exc:
            raise StorageError(f"cannot fsync {self.directory}: {exc.strerror or exc}", errno=exc.errno) from exc
        self._unflushed = 0
        self._last_flush_ms = now_ms

    def close(self) -> None:
        """Flush, trim the active segment and leave a clean-shutdown marker."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._handles.forget(self)
            if not self.loaded:  # untouched: its files (and clean-shutdown marker) are as they were
                return
            try:
                self._flush(self._last_flush_ms)
                for seg in self._segments:
                    seg.close()
                self._producers.take_snapshot(self.log_end_offset, durable=True)
                write_atomic(self.directory / CLEAN_SHUTDOWN_FILE, b"")
            except OSError as exc:
                raise StorageError(f"cannot close {self.directory}: {exc.strerror or exc}", errno=exc.errno) from exc

    def abandon(self) -> None:
        """Release maps and descriptors without the clean-shutdown work (used
        before deleting the directory, and by tests to simulate a crash)."""
        with self._lock:
            self._closed = True
            self._handles.forget(self)
            for seg in self.__dict__.get("_segments", ()):
                seg.release()

    def close_idle_handles(self) -> bool:
        """For the FileHandleCache: close the active segment's write descriptors
        unless another thread is using this log (then False, at once)."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            segments = self.__dict__.get("_segments")
            if segments:
                segments[-1].close_handles()
            self._handles.forget(self)
            return True
        finally:
            self._lock.release()

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosed(f"{self.directory} is closed")

    # -- log start offset -------------------------------------------------------

    def _set_log_start_offset(self, offset: int, *, allow_decrease: bool = False) -> None:
        if offset < self.log_start_offset and not allow_decrease:
            return
        # Persist before deleting anything: a crash in between only re-deletes.
        write_atomic(self.directory / LOG_START_OFFSET_FILE, f"{offset}\n".encode())
        self.log_start_offset = offset

    def _load(self) -> None:
        segments, log_start_offset = load_segments(self.directory, self.config)
        try:
            producers = ProducerStateManager(self.directory, self.config.producer_id_expiration_ms)
            # Segments whose .txnindex may be wrong are replayed from a snapshot at or before them.
            suspects = [s for s in segments if s.txn_index_suspect]
            producers.rebuild(
                segments, upto=segments[-1].next_offset,
                replay_from=min((s.base_offset for s in suspects), default=None), rebuild_txn_index=suspects,
            )
            producers.delete_snapshots(below=segments[0].base_offset)
        except BaseException:
            for seg in segments:
                seg.release()
            raise
        segments[-1].close_handles()  # reopened by the first write
        self.log_start_offset = log_start_offset
        self._last_append_ms = max((s.last_append_ms or 0 for s in segments), default=0)
        for seg in segments:  # recovery read them; the next read maps what it needs again
            seg.unmap()
        self._producers = producers
        self._segments = segments  # last: the log counts as loaded from here
