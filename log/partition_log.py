"""PartitionLog: the segments of one partition, in one directory.

Offsets are assigned here; the bytes are validated once (``batch``), patched
(base offset, log-append time) and written with one pwrite. Reads are
zero-copy slices of the segment maps. Opening a directory recovers it: after
an unclean shutdown the active segment is re-validated batch by batch and cut
at the first torn or corrupt batch; damaged or missing indexes are rebuilt.

Single replica, so the high watermark is the log end offset. Mutations take a
lock (flush may run on another thread); reads are lock-free from the owner.
"""

from __future__ import annotations

import bisect
import logging
import threading
from pathlib import Path
from typing import NamedTuple

from . import batch as rb
from .batch import BatchHeader
from .config import LogConfig
from .errors import LogClosed, OffsetOutOfRange, RecordTooLarge, StorageError
from .recovery import CLEAN_SHUTDOWN_FILE, LOG_START_OFFSET_FILE, load_segments, write_atomic
from .segment import INT32_MAX, LogSegment

logger = logging.getLogger(__name__)

_EMPTY = memoryview(b"")


class AppendInfo(NamedTuple):
    base_offset: int
    last_offset: int
    append_time_ms: int  # broker time of the append (Event Hubs enqueued time)
    log_append_time: bool  # True if batches were stamped LogAppendTime
    log_start_offset: int
    position: int  # Event Hubs offset (byte position) of the first batch
    headers: list[BatchHeader]  # as stored: offsets assigned, timestamps patched


class PartitionLog:
    def __init__(self, directory: Path, config: LogConfig, *, now_ms: int):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.config = config
        self._lock = threading.RLock()
        self._closed = False
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        self.log_start_offset = 0
        self._unflushed = 0
        self._last_flush_ms = now_ms
        self._last_append_ms = 0
        self._load()

    def __repr__(self) -> str:
        return f"PartitionLog({self.directory}, [{self.log_start_offset}, {self.log_end_offset}))"

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
            for seg in self._segments:
                seg.config = config

    # -- append -----------------------------------------------------------------

    def append(self, records, *, now_ms: int, base_offset: int | None = None) -> AppendInfo:
        """Validate, assign offsets and write a Produce request's records blob.

        All batches are validated before anything is written; on any error the
        log is unchanged. OSError becomes StorageError after the partial write is
        undone. ``base_offset`` (default: the log end offset) may leave a gap
        but never go backwards.
        """
        headers = rb.validate_records(records)
        limit = self.config.max_message_bytes
        for header in headers:
            if header.size > limit:
                raise RecordTooLarge(
                    f"record batch of {header.size} bytes exceeds max.message.bytes={limit}: "
                    "send smaller batches (producer batch.size / max.request.size)"
                )
        with self._lock:
            self._check_open()
            leo = self.log_end_offset
            if base_offset is None:
                base_offset = leo
            elif base_offset < leo:
                raise ValueError(f"base offset {base_offset} is below the log end offset {leo}")
            append_time = max(now_ms, self._last_append_ms)  # keep enqueued times monotonic
            log_append_time = self.config.log_append_time
            buf = bytearray(records)
            stored: list[BatchHeader] = []
            pos, offset = 0, base_offset
            for header in headers:
                rb.patch_base_offset(buf, pos, offset)
                if log_append_time:
                    rb.set_log_append_time(buf, pos, append_time)
                stored.append(rb.parse_header(buf, pos))
                offset += header.last_offset_delta + 1
                pos += header.size
            try:
                seg = self._segment_for_append(base_offset, offset - 1, len(buf), len(headers), now_ms)
                position = seg.append(buf, stored, append_time)
            except OSError as exc:
                raise StorageError(
                    f"cannot write to {self.directory}: {exc.strerror or exc}", errno=exc.errno
                ) from exc
            self._last_append_ms = append_time
            self._unflushed += len(headers)
            self._maybe_flush(now_ms)
            return AppendInfo(
                base_offset, offset - 1, append_time, log_append_time, self.log_start_offset,
                seg.base_position + position, stored,
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
        old.seal()
        new = LogSegment.create(
            self.directory, old.next_offset if base_offset is None else base_offset,
            old.base_position + old.size, self.config,
        )
        self._segments.append(new)
        self._bases.append(new.base_offset)
        logger.debug("%s: rolled to segment %d", self.directory, new.base_offset)
        return new

    def _replace_empty_active(self, base_offset: int) -> LogSegment:
        old = self._segments.pop()
        self._bases.pop()
        old.delete()
        new = LogSegment.create(self.directory, base_offset, old.base_position, self.config)
        self._segments.append(new)
        self._bases.append(base_offset)
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
        i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        for seg in segments[i:]:
            view = seg.read(offset, max_bytes, upper, min_one_batch)
            if view is not None:
                return view
        return _EMPTY

    def offset_for_timestamp(self, ts_ms: int) -> tuple[int, int] | None:
        """(timestamp, offset) of the first record stamped >= ts_ms, as
        ListOffsets wants; None if there is none. For compressed CreateTime
        batches the answer is the batch (base offset, maxTimestamp): finding the
        record would mean decompressing on the request path."""
        for seg in self._segments:
            if seg.max_timestamp >= ts_ms:
                found = seg.find_timestamp(ts_ms, self.log_start_offset)
                if found is not None:
                    return found
        return None

    def max_timestamp(self) -> tuple[int, int]:
        """(timestamp, offset) of the first record with the largest timestamp
        (batch granularity for compressed batches); (-1, -1) if empty."""
        best, holder = (-1, -1), None
        for seg in self._segments:
            if seg.max_timestamp > best[0]:
                best, holder = (seg.max_timestamp, seg.offset_of_max_timestamp), seg
        if holder is not None:  # the segment knows the batch; find the record
            best = (best[0], holder.offset_of_timestamp_in_batch(best[1], best[0]))
        return best

    def batch_position(self, offset: int) -> tuple[int, int] | None:
        """(Event Hubs byte offset, append time ms) of the batch holding ``offset``."""
        if offset < self.log_start_offset or offset >= self.log_end_offset:
            return None
        i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        return self._segments[i].batch_position(offset)

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
        or beyond retention.bytes. Returns the number of segments deleted."""
        with self._lock:
            self._check_open()
            cfg = self.config
            if not cfg.delete_enabled:
                return 0
            n = 0
            segments = self._segments
            if cfg.retention_ms >= 0:
                cutoff = now_ms - cfg.retention_ms
                while n < len(segments) and segments[n].size and (segments[n].last_append_ms or 0) < cutoff:
                    n += 1
            if cfg.retention_bytes >= 0:
                excess = self.size_bytes - sum(s.size for s in segments[:n]) - cfg.retention_bytes
                while n < len(segments) - 1 and excess >= segments[n].size:
                    excess -= segments[n].size
                    n += 1
            if not n:
                return 0
            new_start = segments[n - 1].next_offset
            deleted = self._delete_prefix(n)
            if new_start > self.log_start_offset:
                self._set_log_start_offset(new_start)
            logger.info("%s: retention deleted %d segments; log start offset %d", self.directory, deleted, self.log_start_offset)
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
        del self._segments[:n]
        del self._bases[:n]
        for seg in doomed:
            seg.delete()
        return len(doomed)

    def truncate_to(self, offset: int) -> None:
        """Drop the batch holding ``offset`` and everything after it (whole
        batches: the log end offset becomes that batch's base offset)."""
        with self._lock:
            self._check_open()
            if offset >= self.log_end_offset:
                return
            if offset <= self._segments[0].base_offset:
                # Nothing survives: start over at offset, keeping Event Hubs positions increasing.
                first = self._segments[0]
                for seg in reversed(self._segments):
                    seg.delete()
                self._segments = [LogSegment.create(self.directory, offset, first.base_position, self.config)]
                self._bases = [offset]
                self._set_log_start_offset(offset, allow_decrease=True)
                return
            i = max(bisect.bisect_right(self._bases, offset) - 1, 0)
            for seg in reversed(self._segments[i + 1 :]):
                seg.delete()
            del self._segments[i + 1 :]
            del self._bases[i + 1 :]
            self._segments[i].truncate_to(offset)
            if self.log_start_offset > self.log_end_offset:
                self._set_log_start_offset(self.log_end_offset, allow_decrease=True)

    # -- durability -------------------------------------------------------------

    def _maybe_flush(self, now_ms: int) -> None:
        cfg = self.config
        if (cfg.flush_messages is not None and self._unflushed >= cfg.flush_messages) or (
            cfg.flush_ms is not None and now_ms - self._last_flush_ms >= cfg.flush_ms
        ):
            self._flush(now_ms)

    def maybe_flush(self, now_ms: int) -> None:
        """For a periodic task: fsync if flush.ms has elapsed with unflushed data."""
        with self._lock:
            if not self._closed and self._unflushed:
                self._maybe_flush(now_ms)

    def flush(self) -> None:
        """fsync every segment written since the last flush."""
        with self._lock:
            if not self._closed:
                self._flush(self._last_flush_ms)

    def _flush(self, now_ms: int) -> None:
        try:
            for seg in self._segments:
                if seg.dirty:
                    seg.flush()
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
            try:
                self._flush(self._last_flush_ms)
                for seg in self._segments:
                    seg.close()
                write_atomic(self.directory / CLEAN_SHUTDOWN_FILE, b"")
            except OSError as exc:
                raise StorageError(f"cannot close {self.directory}: {exc.strerror or exc}", errno=exc.errno) from exc

    def abandon(self) -> None:
        """Release maps and descriptors without the clean-shutdown work (used
        before deleting the directory, and by tests to simulate a crash)."""
        with self._lock:
            self._closed = True
            for seg in self._segments:
                seg.release()

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
        segments, self.log_start_offset = load_segments(self.directory, self.config)
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._last_append_ms = max((s.last_append_ms or 0 for s in segments), default=0)
