"""PartitionReader: read a partition directory from another process, never writing.

Event Hubs Capture reads the broker's log while the broker appends to it, so
nothing here may disturb the writer or trust more than it has finished:

- Only batches listed in ``.batches`` are read, and each is checked (its
  header names the offset the entry says, magic 2, whole inside the file,
  CRC-32C valid) before it is used. The broker writes the ``.log`` bytes
  before it acknowledges a produce, and the ``.batches`` entry then or soon
  after: entries recovery can rebuild exactly wait in the broker's memory
  until its log flusher's pass (about once a second), a roll, a close or 64
  of them (``index.BatchIndex``), so this reader may trail the broker by
  that much. A batch passing these checks is one the broker has appended;
  the first entry that fails them (a zero-filled preallocated tail, a write
  in flight, an append being undone) ends the readable log.
- Files are read with ``os.pread``, never mapped: the broker shrinks a
  preallocated ``.log`` when it seals a segment, and touching a mapped page
  past the new end would kill this process with SIGBUS.
- Nothing is created, truncated, locked or renamed. A segment deleted by
  retention or replaced by the cleaner while we read is re-listed; a start
  offset below the new log start moves up to it (those events are gone).
- A segment the cleaner rewrote lists its batches' Event Hubs positions in
  ``.positions``, which the broker serves too; it is read before ``.batches``,
  which a swap renames first, so it is never older than the entries it names.

Transactions: control batches (markers) are never returned. A transactional
batch is returned once its producer's COMMIT marker is in the log; it is
dropped when the producer's ABORT marker follows it or when a ``.txnindex``
entry (Kafka's aborted-transaction index, in the segment holding the ABORT)
covers it. Until then it is unresolved, and :meth:`PartitionReader.stable_end`
(the reader's own last stable offset) stops before it, as read_committed does.

Validated batch headers are cached per segment file (keyed by inode, so a
segment the cleaner replaced is read afresh): a reader polled every few
seconds checks each byte once. With them each segment keeps what
:meth:`PartitionReader.ends` needs of it (its open transactions, its
markers' producers), updated as batches are added: a poll costs what is
new, not the retained log.
"""

from __future__ import annotations

import bisect
import logging
import operator
import os
import re
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, NamedTuple

from crc32c import crc32c

from . import batch as rb
from .batch import BatchHeader
from .index import BATCH_INDEX_HEADER, BATCH_INDEX_MAGIC, TXN_ENTRY, BatchIndex, unpack_positions
from .records import CONTROL_ABORT, CONTROL_COMMIT, read_control

logger = logging.getLogger(__name__)

LOG_START_OFFSET_FILE = "log-start-offset"
_SEGMENT_LOG = re.compile(r"^(\d{20})\.log$")
_ENTRY = BatchIndex.ENTRY  # (relative offset uint32, position uint32, append time int64)


class StoredBatch(NamedTuple):
    """One batch as stored: where it is, when it was appended, and (when
    asked for) its bytes."""

    base_offset: int
    next_offset: int
    position: int  # Event Hubs position: the segment's base position + file position, or from .positions
    append_time_ms: int  # broker append time = Event Hubs enqueued time
    size: int  # bytes on disk, header included
    segment: int  # base offset of the segment holding it
    header: BatchHeader
    data: bytes | None = None
    file_position: int = -1  # where it starts in its segment's .log


@dataclass
class _Segment:
    """What has been validated of one segment file so far, and what ends() needs of
    it, kept as batches are added (a poll then walks the new batches, not all)."""

    base_offset: int
    inode: int
    base_position: int = -1
    batches: list[StoredBatch] = field(default_factory=list)  # headers only, in order
    complete: bool = False  # sealed and fully read: nothing more will appear
    controls: dict[int, int] = field(default_factory=dict)  # a marker's file position -> its control kind
    index_prefix: bytes = b""  # the .batches bytes the cached batches were read from (header included)
    # producer id -> its transactional data batches that no marker of its follows in this segment
    open_txns: dict[int, list[StoredBatch]] = field(default_factory=dict)
    markers: dict[int, int] = field(default_factory=dict)  # producer id -> next offset of its last marker here
    ordered: bool = True  # each batch starts at or past the previous one's end (as the broker writes them)

    def add(self, b: StoredBatch) -> None:
        h = b.header
        if self.batches and b.base_offset < self.batches[-1].next_offset:
            self.ordered = False  # (never written so: ends() and scan() then walk the batches)
        self.batches.append(b)
        if h.is_control:
            self.open_txns.pop(h.producer_id, None)  # its marker follows them: resolved
            self.markers[h.producer_id] = b.next_offset
        elif h.records_count and h.is_transactional:
            self.open_txns.setdefault(h.producer_id, []).append(b)

    def from_offset(self, start: int) -> list[StoredBatch]:
        """The batches holding an offset at or past ``start``."""
        if self.ordered:  # next offsets increase: bisect, not a walk of the segment
            return self.batches[bisect.bisect_right(self.batches, start, key=_NEXT_OFFSET):]
        return [b for b in self.batches if b.next_offset > start]


_NEXT_OFFSET = operator.attrgetter("next_offset")


class PartitionReader:
    """Read-only view of one partition directory (``DATA_DIR/<ns>/<hub>-<p>``)."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self._path = os.fspath(self.directory)
        self._segments: dict[int, _Segment] = {}
        self._txn_files: dict[int, tuple[tuple, list[tuple[int, int, int]]]] = {}  # base -> (stat key, entries)
        self._aborted: tuple[tuple, _Aborted] | None = None  # built from the files of these stat keys

    def __repr__(self) -> str:
        return f"PartitionReader({self.directory})"

    # -- directory state ----------------------------------------------------------

    def segment_bases(self) -> list[int]:
        return _segment_bases(self._names())

    def _names(self) -> list[str]:
        try:
            return os.listdir(self.directory)
        except FileNotFoundError:
            return []

    def log_start_offset(self, names: list[str] | None = None) -> int:
        """The first offset still in the log (retention moves it up); ``names``:
        the directory's listing, if just taken."""
        bases = _segment_bases(self._names() if names is None else names)
        first = bases[0] if bases else 0
        try:
            persisted = int((self.directory / LOG_START_OFFSET_FILE).read_text().strip() or 0)
        except (FileNotFoundError, ValueError):
            persisted = 0
        return max(first, persisted)

    # -- scanning -----------------------------------------------------------------

    def scan(self, start: int = 0, names: list[str] | None = None) -> Iterator[StoredBatch]:
        """Every valid batch (data, control, transactional alike; headers only)
        from the one holding ``start`` to the first invalid or incomplete one
        (``names``: the directory's listing, if just taken)."""
        for seg, lo in self._walk(start, names):
            yield from seg.from_offset(lo)

    def _walk(self, start: int, names: list[str] | None = None) -> Iterator[tuple[_Segment, int]]:
        """The readable segments from the one holding ``start``, each with the
        offset its batches are taken from (moved up when a segment vanished)."""
        for _ in range(3):  # a segment vanishing under us (retention, cleaner) means: list again
            try:
                for seg in self._readable(start, self._names() if names is None else names):
                    yield seg, start
                return
            except LogChanged as gone:
                start = max(start, gone.resume_at)
                names = None
        logger.warning("%s: segments keep changing under the reader; stopping this scan", self.directory)

    def _readable(self, start: int, names: list[str]) -> Iterator[_Segment]:
        bases = _segment_bases(names)
        for stale in self._segments.keys() - set(bases):
            del self._segments[stale]
        expected = None  # the next offset the previous segment ended at
        for n, base in enumerate(bases):
            nxt = bases[n + 1] if n + 1 < len(bases) else None
            if nxt is not None and nxt <= start:
                # Wholly below start: skipped, but kept in the cache (bounded by the segments on
                # disk, pruned above): Capture's next ends() scans from the log start again, and
                # dropping it here had every poll re-read and CRC-check the whole retained log.
                continue
            seg = self._load(base, last=nxt is None)
            if seg is None:
                raise LogChanged(base)
            if expected is not None and seg.batches and seg.batches[0].base_offset < expected:
                logger.warning("%s: segment %d overlaps the previous one; stopping", self.directory, base)
                return
            yield seg
            if not seg.complete:
                return  # an unfinished segment: nothing after it is readable yet
            expected = seg.batches[-1].next_offset if seg.batches else expected

    def _load(self, base: int, *, last: bool) -> _Segment | None:
        """Validate what is new in segment ``base``; None if it is gone."""
        log_path = os.path.join(self._path, f"{base:020d}.log")  # (not a Path: built for every segment at each pass)
        try:
            fd = os.open(log_path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            st = os.fstat(fd)
            seg = self._segments.get(base)
            if seg is None or seg.inode != st.st_ino:
                seg = self._segments[base] = _Segment(base, st.st_ino)
            if seg.complete and not last:
                return seg  # (a sealed segment that is last again: the segments after it were cut)
            positions = self._positions(base)
            try:
                index = (self.directory / f"{base:020d}.batches").read_bytes()
            except FileNotFoundError:
                index = b""  # written right after the .log is created, and rebuilt after a cut
            if seg.batches and not _still_holds(seg, fd, index):
                # Truncated (PartitionLog.truncate_to: a geo promotion, a replica cut): the cut
                # file keeps its inode and length and the index is rebuilt, so only the cached
                # entries and bytes tell; read what the segment holds now.
                seg = self._segments[base] = _Segment(base, st.st_ino)
            self._extend(seg, fd, index, st.st_size, positions)
            # A segment followed by another is sealed: once its entries are read through, it is done.
            consumed = BATCH_INDEX_HEADER.size + len(seg.batches) * _ENTRY.size
            seg.complete = not last and consumed >= len(index)
            return seg
        finally:
            os.close(fd)

    def _positions(self, base: int) -> array | None:
        """The Event Hubs positions compaction kept for segment ``base``, if any."""
        path = self.directory / f"{base:020d}.positions"
        try:
            return unpack_positions(path.read_bytes())
        except FileNotFoundError:
            return None
        except ValueError as exc:  # the broker falls back the same way when it loads the segment
            logger.warning("%s: %s; using file positions", path, exc)
            return None

    def _extend(self, seg: _Segment, fd: int, index: bytes, file_size: int, positions: array | None) -> None:
        if len(index) < BATCH_INDEX_HEADER.size:
            return  # being created
        magic, version, _, base_position = BATCH_INDEX_HEADER.unpack_from(index)
        if magic != BATCH_INDEX_MAGIC or version != 1 or base_position < 0:
            return  # header not written yet (or damaged: the broker's recovery rebuilds it)
        seg.base_position = base_position
        i = len(seg.batches)
        prev = seg.batches[-1] if seg.batches else None
        hdr = BATCH_INDEX_HEADER.size
        while hdr + (i + 1) * _ENTRY.size <= len(index):
            rel, pos, append_ms = _ENTRY.unpack_from(index, hdr + i * _ENTRY.size)
            if prev is None:
                if pos != 0:
                    return
            elif rel <= prev.base_offset - seg.base_offset or pos != prev.file_position + prev.size:
                return  # the zero tail of the growable index, or a stale entry of an undone append
            if positions is not None and i >= len(positions):
                return  # not the batches these positions were written for
            header = _check_batch(fd, pos, file_size, seg.base_offset + rel)
            if header is None:
                return
            position = positions[i] if positions is not None else base_position + pos
            prev = StoredBatch(
                header.base_offset, header.next_offset, position, append_ms, header.size, seg.base_offset, header,
                file_position=pos,
            )
            seg.add(prev)
            i += 1
        seg.index_prefix = index[: hdr + i * _ENTRY.size] if seg.batches else b""

    # -- reading --------------------------------------------------------------------

    def read(self, batch: StoredBatch) -> bytes:
        """The bytes of a batch returned by :meth:`scan`, CRC checked again.
        Raises LogChanged if its segment was deleted or replaced meanwhile."""
        seg = self._segments.get(batch.segment)
        if seg is None:
            raise LogChanged(batch.base_offset)
        try:
            fd = os.open(self.directory / f"{batch.segment:020d}.log", os.O_RDONLY)
        except FileNotFoundError:
            raise LogChanged(batch.base_offset) from None
        try:
            data = os.pread(fd, batch.size, batch.file_position)
        finally:
            os.close(fd)
        if len(data) != batch.size or crc32c(memoryview(data)[rb.ATTRIBUTES_OFFSET:]) != batch.header.crc:
            raise LogChanged(batch.base_offset)  # replaced by the cleaner between scan and read
        return data

    def batches(self, start: int, end: int | None = None, *, with_data: bool = True) -> Iterator[StoredBatch]:
        """The committed data batches holding offsets in [start, end): control
        batches, aborted and empty batches left out, unresolved transactional
        ones never reached (``end`` defaults to :meth:`stable_end`)."""
        names = self._names()  # one listing for the log start, the scan and the .txnindex files
        start = max(start, self.log_start_offset(names))
        stop = self.stable_end(start) if end is None else end
        for b, keep in self._resolved(start, names=names):
            if b.base_offset >= stop:
                return
            if keep:
                yield b._replace(data=self.read(b)) if with_data else b

    def stable_end(self, start: int = 0) -> int:
        """The end of what may be read from ``start``: just past the last valid
        batch, or the first offset of the earliest unresolved transaction."""
        return self.ends(start)[0]

    def ends(self, start: int = 0) -> tuple[int, StoredBatch | None]:
        """:meth:`stable_end`, and the last valid batch the same scan reached
        (None if none from ``start``): where the listed log ends, without a
        second scan.

        Answered from the segments' summaries (their open transactions and
        markers), not by walking their batches: Capture asks at every poll,
        and a walk from the log start cost what the log retains."""
        names = self._names()  # one listing for the log start, the scan and the .txnindex files
        start = max(start, self.log_start_offset(names))
        walked = list(self._walk(start, names))
        if not all(seg.ordered for seg, _ in walked):
            return self._ends_by_walk(start, names)
        tail = None
        for seg, lo in walked:
            if seg.batches and seg.batches[-1].next_offset > lo:
                tail = seg.batches[-1]
        # The first unresolved transactional batch: one no marker of its producer follows
        # in the readable log and no .txnindex entry covers. Found from the last segment
        # back, gathering the producers with a marker after the segment looked at.
        first, later, aborted = None, set(), None
        for seg, lo in reversed(walked):
            for pid, txn in seg.open_txns.items():
                if pid in later:
                    continue
                aborted = self._aborted_index(names) if aborted is None else aborted
                for b in txn:
                    if b.next_offset > lo and not aborted.holds(pid, b.base_offset):
                        if first is None or b.base_offset < first.base_offset:
                            first = b
                        break
            if seg.batches and seg.batches[0].base_offset >= lo:
                later.update(seg.markers)
            else:  # the segment holding lo: its markers below it were not reached
                later.update(pid for pid, nxt in seg.markers.items() if nxt > lo)
        if first is not None:
            return first.base_offset, tail
        return (tail.next_offset if tail is not None else start), tail

    def _ends_by_walk(self, start: int, names: list[str]) -> tuple[int, StoredBatch | None]:
        """ends() by a walk of every batch from ``start``: for a segment whose batches
        overlap (never written so), where the summaries' order does not hold."""
        end, tail = start, [None]
        for b, keep in self._resolved(start, tail, names):
            if keep is None:
                return b.base_offset, tail[0]
            end = b.next_offset
        return end, tail[0]

    def _resolved(self, start: int, tail: list | None = None,
                  names: list[str] | None = None) -> Iterator[tuple[StoredBatch, bool | None]]:
        """(batch, keep) in offset order from ``start``; keep is None for the
        first unresolved transactional batch, after which nothing is yielded.
        ``tail[0]`` is set to each batch scanned."""
        aborted = self._aborted_index(names)
        # Every batch queues in offset order; the front leaves once its fate is known.
        pending: list[list] = []  # [batch, keep: True | False | None (unresolved)]
        open_txn: dict[int, list[list]] = {}
        for b in self.scan(start, names):
            if tail is not None:
                tail[0] = b
            h = b.header
            if h.is_control:
                kind = self._control_kind(b)
                if kind not in (CONTROL_ABORT, CONTROL_COMMIT):
                    logger.warning("%s: unknown control record at offset %d", self.directory, b.base_offset)
                for item in open_txn.pop(h.producer_id, []):
                    item[1] = kind == CONTROL_COMMIT
                pending.append([b, False])
            elif not h.records_count:
                pending.append([b, False])  # emptied by compaction
            elif not h.is_transactional:
                pending.append([b, True])
            elif aborted.holds(h.producer_id, b.base_offset):
                pending.append([b, False])
            else:
                item = [b, None]
                open_txn.setdefault(h.producer_id, []).append(item)
                pending.append(item)
            n = 0
            while n < len(pending) and pending[n][1] is not None:
                yield pending[n][0], pending[n][1]
                n += 1
            del pending[:n]
        if pending:
            yield pending[0][0], None

    def _control_kind(self, b: StoredBatch) -> int:
        """Read once per segment file, as its headers are: a reader asked several
        times a micro-batch read every marker's bytes at each ask."""
        seg = self._segments.get(b.segment)
        kind = seg.controls.get(b.file_position) if seg is not None else None
        if kind is None:
            try:
                kind = read_control(self.read(b), b.header)[0]
            except LogChanged:
                return -1
            if seg is not None:
                seg.controls[b.file_position] = kind
        return kind

    def _aborted_index(self, names: list[str] | None = None) -> _Aborted:
        """The aborted transactions every ``.txnindex`` lists (all segments; entries
        are few), a file read again only when it changed: Capture asks several
        times a micro-batch (planning, replanning, reading), and a file changes only
        when an abort appends to it or the broker rewrites it (truncation, recovery,
        cleaning) or deletes it with its segment."""
        names = self._names() if names is None else names
        present = set(names)
        files, seen = self._txn_files, []
        for base in _segment_bases(names):
            if f"{base:020d}.txnindex" not in present:
                continue
            path = self.directory / f"{base:020d}.txnindex"
            try:
                # Stat before reading: a change racing the read leaves a key that no longer
                # matches, so it is read again next time (never old entries under a new key).
                st = os.stat(path)
                key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
                cached = files.get(base)
                if cached is None or cached[0] != key:
                    cached = files[base] = (key, _txn_entries(path.read_bytes()))
            except FileNotFoundError:
                continue  # deleted with its segment meanwhile
            seen.append((base, key))
        for gone in files.keys() - {base for base, _ in seen}:
            del files[gone]
        state = tuple(seen)
        if self._aborted is None or self._aborted[0] != state:
            self._aborted = (state, _Aborted([e for base, _ in seen for e in files[base][1]]))
        return self._aborted[1]

    def end_offset(self) -> int:
        """The next offset the partition will assign, as far as its checked
        batches show (a write in flight counts as not written)."""
        bases = self.segment_bases()
        end = bases[-1] if bases else 0
        for seg, lo in self._walk(end):
            if held := seg.from_offset(lo):
                end = held[-1].next_offset
        return end


def _segment_bases(names) -> list[int]:
    return sorted(int(m.group(1)) for m in map(_SEGMENT_LOG.match, names) if m)


def _txn_entries(data: bytes) -> list[tuple[int, int, int]]:
    """(producer id, first offset, last offset) of a ``.txnindex``'s entries
    (a torn last entry of an append in flight left out)."""
    return [(pid, first, last)
            for version, pid, first, last, _ in TXN_ENTRY.iter_unpack(data[: len(data) - len(data) % TXN_ENTRY.size])
            if version == 0 and first <= last]


class _Aborted:
    """Aborted transactions by producer, sorted by first offset: whether a batch is in one
    is a bisection, not a walk of every entry (a partition of 20,000 aborted transactions
    took Capture's --once 35 s to plan; 2 s so)."""

    def __init__(self, entries: list[tuple[int, int, int]]) -> None:
        self._by_producer: dict[int, tuple[list[int], list[int]]] = {}
        for pid, first, last in sorted(entries, key=lambda e: (e[0], e[1])):
            firsts, lasts = self._by_producer.setdefault(pid, ([], []))
            firsts.append(first)
            lasts.append(last)

    def holds(self, producer_id: int, offset: int) -> bool:
        found = self._by_producer.get(producer_id)
        if found is None:
            return False
        firsts, lasts = found
        i = bisect.bisect_right(firsts, offset) - 1
        # (one producer's transactions never overlap: the last to start at or before it)
        return i >= 0 and offset <= lasts[i]


def read_topic_partitions(namespace_dir: str | os.PathLike, only: str | None = None) -> dict[str, int]:
    """Topic name -> partition count from a namespace directory's topic metadata
    (of topic ``only``, when given), read-only; a file being replaced right now,
    or not ours, is skipped."""
    import json

    from .manager import TOPICS_DIR

    out: dict[str, int] = {}
    topics = Path(namespace_dir) / TOPICS_DIR
    if not topics.is_dir():
        return out
    for path in [topics / f"{only}.json"] if only is not None else sorted(topics.glob("*.json")):
        try:
            meta = json.loads(path.read_text())
            out[str(meta["name"])] = int(meta["partitions"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


def is_namespace_dir(path: str | os.PathLike) -> bool:
    from .manager import TOPICS_DIR

    return (Path(path) / TOPICS_DIR).is_dir()


class LogChanged(Exception):
    """A segment disappeared (retention) or was replaced (cleaner) while being
    read; read again from ``resume_at``."""

    def __init__(self, resume_at: int):
        super().__init__(resume_at)
        self.resume_at = resume_at


def _still_holds(seg: _Segment, fd: int, index: bytes) -> bool:
    """Whether segment ``seg``'s files still hold its cached batches: its index
    starts with the entries they were read from, and the last one's header is
    still in the ``.log`` (a batch appended after a cut at the same offset,
    position and time has another CRC)."""
    if not index.startswith(seg.index_prefix):
        return False
    last = seg.batches[-1]
    head = os.pread(fd, rb.HEADER_SIZE, last.file_position)
    if len(head) < rb.HEADER_SIZE:
        return False
    now, then = rb.parse_header(head), last.header
    return (now.base_offset, now.batch_length, now.crc) == (then.base_offset, then.batch_length, then.crc)


def _check_batch(fd: int, pos: int, file_size: int, expected_offset: int) -> BatchHeader | None:
    """The header of the complete, CRC-valid v2 batch at ``pos`` holding
    ``expected_offset`` as its base, else None."""
    if pos + rb.HEADER_SIZE > file_size:
        return None
    head = os.pread(fd, rb.HEADER_SIZE, pos)
    if len(head) < rb.HEADER_SIZE:
        return None
    header = rb.parse_header(head)
    size = header.batch_length + rb.LOG_OVERHEAD
    if (
        header.magic != 2
        or header.base_offset != expected_offset
        or header.batch_length < rb.MIN_BATCH_LENGTH
        or header.last_offset_delta < 0
        or pos + size > file_size
    ):
        return None
    data = os.pread(fd, size, pos)
    if len(data) != size or crc32c(memoryview(data)[rb.ATTRIBUTES_OFFSET:]) != header.crc:
        return None
    return header

