"""LogCleaner: compaction of topics with cleanup.policy containing ``compact``.

Kafka's LogCleaner, simplified where a single local broker allows it:

- The cleanable part of a log is its sealed segments, from the first, up to
  the first one that holds an offset at or above the last stable offset or
  that was written to less than min.compaction.lag.ms ago (by its last append
  time in ``.batches``, which is what Kafka's largest timestamp is for the
  default LogAppendTime).
- An offset map (key -> latest offset) is built over the dirty part, from the
  ``cleaner-offset-checkpoint`` of the partition (lowered by a truncation below
  it, as Kafka's is) to the end of the cleanable part; records of aborted
  transactions and control records do not count.
- Every cleanable segment is rewritten keeping a record unless a later offset
  of its key is in the map. Records with a null key are kept. A tombstone (null
  value) is dropped once its segment's last append is older than
  delete.retention.ms. Data of aborted transactions is dropped. Transaction
  markers are kept (Kafka removes them later; keeping them is always safe).
- A batch that loses records keeps its base offset, lastOffsetDelta, producer
  fields and base timestamp (Kafka's ``buildRetainedRecordsInto``): offsets never
  change and the producer's last sequence survives. Surviving records are
  copied byte for byte and recompressed with the batch's codec. A batch that
  loses every record is dropped, unless it is its producer's last one: then it
  stays as an empty batch so the producer state survives a reload.
- Consecutive segments are merged while their old sizes fit segment.bytes,
  as Kafka's groupSegmentsBySize does.

Event Hubs offsets: a surviving batch keeps the position it was written at.
A rewritten segment keeps its byte range's start (``base_position``) and gets
a ``.positions`` file listing each batch's original position, taken from the
segment it came from (its own ``.positions`` if it was compacted before), so
event offsets survive compaction, restarts and recovery, and stay strictly
increasing across the partition. A client that checkpointed the offset of an
event compaction removed resumes at the first event after it, as with any gap.

The rewrite runs on the cleaner's thread reading its own maps of the sealed
segments, each made when the segment is read and let go after (a map holds no
descriptor: ``mapping``), so a backlog of thousands of segments compacts with
a handful of descriptors; the partition lock is taken only to take a
consistent view and for the final swap, which writes a marker so a crash
leaves the old or the new segments (``recovery.swap_segments``). A round the
log was truncated under (a geo-replica following its primary, the old primary
after a promotion) is abandoned at the swap: truncation cuts a segment in
place, and the copy made before would bring the records past the cut back.
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
import threading
from array import array
from pathlib import Path
from typing import Callable, NamedTuple

from . import batch as rb
from . import records as rec
from .errors import LogClosed, LogError, StorageError, UnknownTopic
from .index import TXN_ENTRY, BatchIndex, AbortedTxn, pack_positions
from .manager import LogManager
from .mapping import map_read_only, release_map
from .partition_log import CLEANER_CHECKPOINT_FILE, CompactionView, PartitionLog, SegmentInfo
from .recovery import CLEANED_SUFFIX, SWAP_FILE, write_atomic
from .segment import INT32_MAX, POSITIONS_SUFFIX, SUFFIXES, TXN_INDEX_SUFFIX, LogSegment, segment_path

logger = logging.getLogger(__name__)

CHECKPOINT_FILE = CLEANER_CHECKPOINT_FILE
_WRITE_CHUNK = 1 << 20


class CleanResult(NamedTuple):
    topic: str
    partition: int
    first_dirty_offset: int
    end_offset: int  # the cleaned range is [log start, end_offset)
    segments_before: int
    segments_after: int
    bytes_before: int
    bytes_after: int
    records_removed: int
    batches_removed: int


class _Stats:
    def __init__(self) -> None:
        self.records_removed = 0
        self.batches_removed = 0


def read_checkpoint(directory: Path) -> int:
    try:
        return int((directory / CHECKPOINT_FILE).read_text().strip())
    except (FileNotFoundError, ValueError):
        return 0


def write_checkpoint(directory: Path, offset: int) -> None:
    write_atomic(directory / CHECKPOINT_FILE, f"{offset}\n".encode())


class LogCleaner:
    """Compacts the logs of a LogManager on a background thread.

    >>> cleaner = LogCleaner(manager, interval_ms=15_000)
    >>> cleaner.start()            # picks the dirtiest log every interval
    >>> cleaner.clean_now("t", 0)  # or clean one partition now (tests, tools)
    >>> cleaner.stop()
    """

    def __init__(self, manager: LogManager, interval_ms: int = 15_000, *, clock: Callable[[], int] | None = None):
        self.manager = manager
        self.interval_ms = interval_ms
        self._clock = clock or manager.now_ms
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cleaning = threading.Lock()  # one cleaning at a time

    # -- lifecycle --------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="log-cleaner", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = 30.0) -> None:
        """Stop the thread, waiting for a cleaning in progress to finish."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.interval_ms / 1000):
            try:
                while not self._stop.is_set() and self.run_once() is not None:
                    pass
            except Exception:  # keep cleaning the other logs; the next round retries
                logger.exception("log cleaner round failed")

    # -- choosing ---------------------------------------------------------------

    def run_once(self, now_ms: int | None = None) -> CleanResult | None:
        """Clean the dirtiest compacted log whose dirty ratio reaches its
        min.cleanable.dirty.ratio (or whose dirty data is older than
        max.compaction.lag.ms). None if no log needs it."""
        now = self._clock() if now_ms is None else now_ms
        best: tuple[float, tuple[str, int]] | None = None
        for key, log in self.manager.logs().items():
            if log.closed or not log.config.compact_enabled:
                continue
            try:
                ratio, must = self.dirty_ratio(log, now)
            except LogClosed:
                continue
            if ratio <= 0:
                continue
            if must or ratio >= log.config.min_cleanable_dirty_ratio:
                score = 2.0 + ratio if must else ratio
                if best is None or score > best[0]:
                    best = (score, key)
        if best is None:
            return None
        return self.clean_now(*best[1], now_ms=now)

    def dirty_ratio(self, log: PartitionLog, now_ms: int) -> tuple[float, bool]:
        """(dirty bytes / cleanable bytes, max.compaction.lag.ms exceeded)."""
        view = log.compaction_view(producers=False)
        cleanable = _cleanable(view, now_ms)
        if not cleanable:
            return 0.0, False
        first_dirty = read_checkpoint(log.directory)
        total = sum(s.size for s in cleanable)
        dirty = [s for s in cleanable if s.next_offset > first_dirty]
        dirty_bytes = sum(s.size for s in dirty)
        must = bool(
            dirty and dirty[0].first_append_ms is not None
            and now_ms - dirty[0].first_append_ms >= view.config.max_compaction_lag_ms
        )
        return (dirty_bytes / total if total else 0.0), must

    # -- cleaning ---------------------------------------------------------------

    def clean_now(self, topic: str, partition: int, *, now_ms: int | None = None) -> CleanResult | None:
        """Compact one partition now, whatever its dirty ratio. Returns None
        when nothing is cleanable or the log changed under the cleaner (a
        later round retries)."""
        log = self.manager.get_log(topic, partition)
        if log is None:
            raise UnknownTopic(f"no partition {topic}-{partition}")
        now = self._clock() if now_ms is None else now_ms
        with self._cleaning:
            try:
                return _Cleaning(log, topic, partition, now).run()
            except LogClosed:
                return None


def _cleanable(view: CompactionView, now_ms: int) -> list[SegmentInfo]:
    """The leading sealed segments below the LSO and older than min.compaction.lag.ms."""
    out = []
    lag_cutoff = now_ms - view.config.min_compaction_lag_ms
    for info in view.segments:
        if info.next_offset > view.last_stable_offset or (info.last_append_ms or 0) > lag_cutoff:
            break
        out.append(info)
    return out


class _SourceSegment:
    """A sealed segment read through the cleaner's own map, made for each pass over it
    and let go after: the owner deleting the segment meanwhile cannot pull the bytes
    away, and the cleaner holds one map at a time (no descriptor), however many
    segments it cleans."""

    def __init__(self, info: SegmentInfo):
        self.info = info
        self.positions = info.segment.positions  # never changed in place: a reload replaces it
        self._times: list[int] | None = None

    @property
    def times(self) -> list[int]:
        """Append times of the batches, from ``.batches`` (read once, on first use)."""
        if self._times is None:
            raw = self.info.segment.batch_index.path.read_bytes()
            self._times = [t for _, _, t in BatchIndex.ENTRY.iter_unpack(raw[BatchIndex.HEADER_SIZE :])]
        return self._times

    def batches(self):
        """(header, batch bytes, append time, Event Hubs position) of each batch; the
        bytes are views of a map that goes when the last of them does."""
        if not self.info.size:
            return
        seg = self.info.segment
        # The file the segment opened, not one renamed over its path since (StorageError).
        buf = map_read_only(seg.log_path, None, self.info.size, seg.file_id)
        try:
            times = self.times
            positions = self.positions if self.positions is not None else ()
            for n, (pos, header) in enumerate(rb.iter_batches(buf)):
                t = times[n] if n < len(times) else header.max_timestamp
                yield (header, buf[pos : pos + header.size], t,
                       positions[n] if n < len(positions) else self.info.base_position + pos)
        finally:
            release_map(buf)


class _Cleaning:
    def __init__(self, log: PartitionLog, topic: str, partition: int, now_ms: int):
        self.log = log
        self.topic = topic
        self.partition = partition
        self.now = now_ms

    def run(self) -> CleanResult | None:
        log = self.log
        view = log.compaction_view()
        cfg = view.config
        if not cfg.compact_enabled:
            return None
        cleanable = _cleanable(view, self.now)
        if not cleanable:
            return None
        end = cleanable[-1].next_offset
        first_dirty = min(max(read_checkpoint(log.directory), cleanable[0].base_offset), end)
        self.aborted = _aborted_ranges(view.aborted)
        self.last_offsets = view.producer_last_offsets
        self.tombstone_horizon = self.now - cfg.delete_retention_ms
        sources = [_SourceSegment(info) for info in cleanable]
        written: list[int] = []
        try:
            offset_map = self._build_offset_map([s for s in sources if s.info.next_offset > first_dirty])
            stats = _Stats()
            groups = []
            for group in _group_by_size(sources, cfg.segment_bytes):
                written.append(group[0].info.base_offset)
                changed = self._write_group(group, offset_map, cfg, stats)
                if changed or len(group) > 1:
                    groups.append(group)
                else:
                    _delete_cleaned(log.directory, group[0].info.base_offset)
                    written.pop()
            before = sum(s.info.size for s in sources)
            swapped = [([s.info.segment for s in g], g[0].info.base_offset) for g in groups]
            ok = not swapped or log.swap_cleaned(swapped, truncations=view.truncations)
            if not ok:
                logger.info("%s: the log changed during cleaning; retrying later", log.directory)
                return None
            written.clear()
            # Not over a truncation since the view (it lowered the checkpoint below ``end``).
            log.set_cleaner_checkpoint(end, truncations=view.truncations)
        except FileNotFoundError as exc:  # a segment was deleted under us (retention, topic deletion)
            logger.info("%s: cleaning abandoned: %s", log.directory, exc)
            return None
        except OSError as exc:
            raise StorageError(
                f"cannot compact {log.directory}: {exc.strerror or exc}", errno=exc.errno
            ) from exc
        finally:
            if not (log.directory / SWAP_FILE).exists():  # never under a committed swap
                for base in written:
                    _delete_cleaned(log.directory, base)
        after_segments = [s for s in log.segments if s.base_offset < end]
        result = CleanResult(
            self.topic, self.partition, first_dirty, end, len(cleanable), len(after_segments), before,
            sum(s.size for s in after_segments), stats.records_removed, stats.batches_removed,
        )
        logger.info(
            "%s: compacted offsets below %d: %d -> %d bytes, %d records and %d batches removed",
            log.directory, end, result.bytes_before, result.bytes_after, stats.records_removed,
            stats.batches_removed,
        )
        return result

    # -- the offset map ---------------------------------------------------------

    def _build_offset_map(self, dirty: list[_SourceSegment]) -> dict[bytes, int]:
        latest: dict[bytes, int] = {}
        for src in dirty:
            for header, data, _, _ in src.batches():
                if header.is_control or not header.records_count or self._is_aborted(header):
                    continue
                try:
                    records = rec.read_records(data, header)
                except LogError as exc:
                    # Unreadable here means kept whole; its keys cannot supersede older records.
                    logger.warning("%s: batch at offset %d is kept as is: %s", src.info.segment.log_path,
                                   header.base_offset, exc)
                    continue
                base = header.base_offset
                for r in records:
                    if r.key is not None:
                        latest[r.key] = base + r.offset_delta
        return latest

    def _is_aborted(self, header: rb.BatchHeader) -> bool:
        if not header.is_transactional:
            return False
        ranges = self.aborted.get(header.producer_id)
        if not ranges:
            return False
        i = bisect.bisect_right(ranges, (header.base_offset, 2**63)) - 1
        return i >= 0 and ranges[i][0] <= header.base_offset <= ranges[i][1]

    # -- rewriting --------------------------------------------------------------

    def _write_group(self, group: list[_SourceSegment], offset_map: dict[bytes, int], cfg, stats: _Stats) -> bool:
        """Write the cleaned segment replacing ``group``; True if it differs."""
        first = group[0].info
        directory = self.log.directory
        out_cfg = dataclasses.replace(cfg, preallocate=False)
        cleaned = LogSegment.create(directory, first.base_offset, first.base_position, out_cfg,
                                    file_suffix=CLEANED_SUFFIX)
        changed = False
        positions = array("q")  # where each kept batch was first written: its Event Hubs position
        try:
            chunk, headers, times = bytearray(), [], []
            for src in group:
                horizon_passed = (src.info.last_append_ms or 0) < self.tombstone_horizon
                for header, original, t, position in src.batches():
                    out = self._clean_batch(original, header, offset_map, horizon_passed, stats)
                    if out is not original:
                        changed = True
                    if out is None:
                        continue
                    chunk += out
                    headers.append(rb.parse_header(out))
                    times.append(t)
                    positions.append(position)
                    if len(chunk) >= _WRITE_CHUNK:
                        cleaned.append(chunk, headers, times)  # type: ignore[arg-type]
                        chunk, headers, times = bytearray(), [], []
            if headers:
                cleaned.append(chunk, headers, times)  # type: ignore[arg-type]
            cleaned.seal()
            cleaned.flush()
        finally:
            cleaned.close()
        # Every suffix is written, an empty .txnindex included: the swap relies on it.
        entries = [e for src in group for e in src.info.segment.txn_index.entries]
        write_atomic(segment_path(directory, first.base_offset, TXN_INDEX_SUFFIX + CLEANED_SUFFIX),
                      b"".join(TXN_ENTRY.pack(0, *e) for e in entries))
        write_atomic(segment_path(directory, first.base_offset, POSITIONS_SUFFIX + CLEANED_SUFFIX),
                     pack_positions(positions))
        return changed

    def _clean_batch(self, original, header: rb.BatchHeader, offset_map: dict[bytes, int], horizon_passed: bool,
                     stats: _Stats):
        """The batch to write: ``original`` unchanged, a rebuilt one, or None."""
        if header.is_control or not header.records_count:
            return original
        if self._is_aborted(header):
            kept: list[rec.Record] = []
            removed = header.records_count
        else:
            try:
                records = rec.read_records(original, header)
            except LogError:
                return original
            base = header.base_offset
            kept = []
            for r in records:
                if r.key is not None:
                    if offset_map.get(r.key, -1) > base + r.offset_delta:
                        continue  # superseded
                    if r.null_value and horizon_passed:
                        continue  # a tombstone past delete.retention.ms
                kept.append(r)
            removed = len(records) - len(kept)
            if not removed:
                return original
        stats.records_removed += removed
        if kept:
            try:
                return rec.rebuild_batch(header, kept)
            except rec.UnsupportedCodec:
                stats.records_removed -= removed
                return original
        if header.producer_id >= 0 and self.last_offsets.get(header.producer_id) == header.last_offset:
            return rec.rebuild_batch(header, [])  # the producer's last batch: its state must survive
        stats.batches_removed += 1
        return None


def _aborted_ranges(entries: tuple[AbortedTxn, ...]) -> dict[int, list[tuple[int, int]]]:
    ranges: dict[int, list[tuple[int, int]]] = {}
    for e in entries:
        ranges.setdefault(e.producer_id, []).append((e.first_offset, e.last_offset))
    for value in ranges.values():
        value.sort()
    return ranges


def _group_by_size(sources: list[_SourceSegment], max_bytes: int) -> list[list[_SourceSegment]]:
    """Runs of consecutive segments whose sizes add up to at most segment.bytes
    and whose offsets fit one segment (Kafka's groupSegmentsBySize)."""
    groups: list[list[_SourceSegment]] = []
    for src in sources:
        if groups:
            group = groups[-1]
            size = sum(s.info.size for s in group) + src.info.size
            if size <= min(max_bytes, INT32_MAX) and src.info.next_offset - 1 - group[0].info.base_offset <= INT32_MAX:
                group.append(src)
                continue
        groups.append([src])
    return groups



def _delete_cleaned(directory: Path, base_offset: int) -> None:
    for suffix in SUFFIXES:
        segment_path(directory, base_offset, suffix + CLEANED_SUFFIX).unlink(missing_ok=True)
