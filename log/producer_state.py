"""Producer state of one partition: idempotence and transactions.

This is Kafka's ProducerStateManager. For every producer id that wrote to the
partition it keeps the epoch, the last five batches' sequence and offset ranges
(a producer has at most five requests in flight, so a retry duplicates one of
them), the coordinator epoch of its last transaction marker, and the first
offset of its open transaction, which holds back the last stable offset.

Checks on append (``validate``) follow Kafka's ProducerAppendInfo:

- an epoch older than the known one: InvalidProducerEpoch;
- a newer epoch must start at sequence 0, else OutOfOrderSequence;
- same epoch: a batch equal (first and last sequence) to one of the cached five
  is a duplicate: nothing is written, the original offsets are returned;
  otherwise its first sequence must follow the last one (wrapping at INT32_MAX),
  else OutOfOrderSequence;
- an unknown producer must start at sequence 0. Kafka 2.5+ accepts any sequence
  there; we are stricter: UnknownProducerId when state for it may have been
  lost (it expired, or the log was rebuilt without its head), else
  OutOfOrderSequence;
- a non-transactional batch while the producer has an open transaction:
  InvalidTxnState.

Snapshots, ``{offset:020d}.snapshot``, hold the state as of an offset (that
offset's batch and later ones not yet applied): taken when a segment rolls
(named by the new segment's base offset) and at a clean close (the log end
offset). The format is ours: a CRC-32C (4 bytes, big-endian) then a msgpack
map. On open the latest snapshot at or below the log end is loaded and the
batches after it are replayed from their headers (markers from their one
control record) without decoding data records. Producers are kept when the log
start offset moves (as in Kafka 3.x, so retried sends keep their sequence) and
expire after ``producer_id_expiration_ms`` without a write and without an open
transaction.
"""

from __future__ import annotations

import logging
import os
import re
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, NamedTuple

import msgpack
from crc32c import crc32c

from . import batch as rb
from . import records as rec
from .batch import BatchHeader
from .errors import (
    InvalidProducerEpoch,
    InvalidTxnState,
    OutOfOrderSequence,
    TransactionCoordinatorFenced,
    UnknownProducerId,
)
from .index import AbortedTxn
from .recovery import write_atomic

if TYPE_CHECKING:
    from .segment import LogSegment

logger = logging.getLogger(__name__)

BATCHES_TO_RETAIN = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN: max.in.flight.requests
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_SNAPSHOT_NAME = re.compile(r"^(\d{20})\.snapshot$")
_CRC = struct.Struct(">I")


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int  # the batch's maxTimestamp as stored


class ProducerInfo(NamedTuple):
    """One row of DescribeProducers (-1 where there is nothing)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


class CompletedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    aborted: bool


class Duplicate(NamedTuple):
    """A produce request that repeats a batch already in the log."""

    batch: BatchMetadata


class ProducerStateEntry:
    __slots__ = (
        "producer_id", "producer_epoch", "batches", "coordinator_epoch", "current_txn_first_offset",
        "last_timestamp", "last_update_ms",
    )

    def __init__(self, producer_id: int, producer_epoch: int = -1):
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.batches: list[BatchMetadata] = []
        self.coordinator_epoch = -1
        self.current_txn_first_offset = -1
        self.last_timestamp = -1
        self.last_update_ms = 0  # broker clock, for expiration

    def __repr__(self) -> str:
        return (
            f"ProducerStateEntry(pid={self.producer_id}, epoch={self.producer_epoch}, "
            f"last_seq={self.last_seq}, txn={self.current_txn_first_offset})"
        )

    def copy(self) -> ProducerStateEntry:
        other = ProducerStateEntry(self.producer_id, self.producer_epoch)
        other.batches = list(self.batches)
        other.coordinator_epoch = self.coordinator_epoch
        other.current_txn_first_offset = self.current_txn_first_offset
        other.last_timestamp = self.last_timestamp
        other.last_update_ms = self.last_update_ms
        return other

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else rb.NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        if header.producer_epoch != self.producer_epoch:
            return None
        last_seq = rb.last_sequence(header)
        for meta in self.batches:
            if meta.first_seq == header.base_sequence and meta.last_seq == last_seq:
                return meta
        return None

    def update_epoch(self, epoch: int) -> None:
        if epoch != self.producer_epoch:
            self.batches = []
            self.producer_epoch = epoch

    def add_batch(self, header: BatchHeader, now_ms: int) -> None:
        self.update_epoch(header.producer_epoch)
        self.batches.append(
            BatchMetadata(
                header.base_sequence, rb.last_sequence(header), header.base_offset, header.last_offset,
                header.max_timestamp,
            )
        )
        if len(self.batches) > BATCHES_TO_RETAIN:
            del self.batches[0]
        self.last_timestamp = header.max_timestamp
        self.last_update_ms = max(self.last_update_ms, now_ms)

    def to_list(self) -> list:
        return [
            self.producer_id, self.producer_epoch, self.coordinator_epoch, self.current_txn_first_offset,
            self.last_timestamp, self.last_update_ms, [list(b) for b in self.batches],
        ]

    @classmethod
    def from_list(cls, row: list) -> ProducerStateEntry:
        pid, epoch, coordinator_epoch, txn_first, last_ts, last_update, batches = row
        entry = cls(int(pid), int(epoch))
        entry.coordinator_epoch = int(coordinator_epoch)
        entry.current_txn_first_offset = int(txn_first)
        entry.last_timestamp = int(last_ts)
        entry.last_update_ms = int(last_update)
        entry.batches = [BatchMetadata(*(int(x) for x in b)) for b in batches][-BATCHES_TO_RETAIN:]
        return entry


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == rb.INT32_MAX)


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


class ProducerStateManager:
    """The producer state of one partition and its snapshot files.

    Not thread-safe by itself: PartitionLog calls it under its lock; the
    read-only queries (``first_unstable_offset``) are safe from the owner thread.
    """

    def __init__(self, directory: Path, expiration_ms: int):
        self.directory = directory
        self.expiration_ms = expiration_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.forgotten: dict[int, int] = {}  # expired producer id -> when (broker ms)
        self.incomplete = False  # rebuilt without the log's head: some producers may be unknown
        self.map_end_offset = 0  # batches below this offset are applied
        self._snapshots: list[int] = self._scan_snapshots()

    # -- queries ----------------------------------------------------------------

    def first_unstable_offset(self) -> int | None:
        ongoing = self.ongoing
        return min(ongoing.values()) if ongoing else None

    def last_stable_offset_after(self, completed: CompletedTxn) -> int:
        """Kafka's lastStableOffset(completedTxn): the first offset of the
        earliest other open transaction, else just past the marker."""
        others = [first for pid, first in self.ongoing.items() if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def describe(self) -> list[ProducerInfo]:
        return [
            ProducerInfo(
                e.producer_id, e.producer_epoch, e.last_seq, e.last_timestamp, e.coordinator_epoch,
                e.current_txn_first_offset,
            )
            for e in sorted(self.producers.values(), key=lambda e: e.producer_id)
        ]

    # -- append path ------------------------------------------------------------

    def validate(self, headers: list[BatchHeader], now_ms: int) -> dict[int, ProducerStateEntry] | Duplicate:
        """Check a request's batches (offsets assigned) against the state.

        Returns the updated entries to ``commit`` once the bytes are written,
        or a Duplicate (the request repeats a batch in the log: write nothing).
        Raises a ProducerStateError; the state is unchanged either way.
        """
        pending: dict[int, ProducerStateEntry] = {}
        for header in headers:
            pid = header.producer_id
            if pid < 0:
                continue
            current = self.producers.get(pid)
            # As Kafka: a request holding a duplicate is answered with the duplicate's offsets.
            if current is not None:
                dup = current.find_duplicate(header)
                if dup is not None:
                    return Duplicate(dup)
            entry = pending.get(pid)
            if entry is None:
                entry = current.copy() if current is not None else None
            self._check_data_batch(entry, header)
            if entry is None:
                entry = ProducerStateEntry(pid, header.producer_epoch)
            entry.add_batch(header, now_ms)
            if entry.current_txn_first_offset >= 0 and not header.is_transactional:
                raise InvalidTxnState(
                    f"producer {pid} sent a non-transactional batch at offset {header.base_offset} "
                    f"while its transaction from offset {entry.current_txn_first_offset} is open"
                )
            if entry.current_txn_first_offset < 0 and header.is_transactional:
                entry.current_txn_first_offset = header.base_offset
            pending[pid] = entry
        return pending

    def _check_data_batch(self, entry: ProducerStateEntry | None, header: BatchHeader) -> None:
        pid, epoch, first_seq = header.producer_id, header.producer_epoch, header.base_sequence
        if entry is None:
            if first_seq != 0:
                if pid in self.forgotten or self.incomplete:
                    raise UnknownProducerId(
                        f"no state is left for producer {pid} (it expired or its data was deleted) "
                        f"and its batch starts at sequence {first_seq}: the producer must reset its sequence"
                    )
                raise OutOfOrderSequence(
                    f"producer {pid} is new to this partition but its first batch has sequence "
                    f"{first_seq}, not 0: an earlier batch is missing (the producer retries it)"
                )
            return
        if epoch < entry.producer_epoch:
            raise InvalidProducerEpoch(
                f"producer {pid} sent epoch {epoch} but the partition has seen epoch "
                f"{entry.producer_epoch}: a newer instance of this producer took over"
            )
        if epoch != entry.producer_epoch:
            if first_seq != 0:
                raise OutOfOrderSequence(
                    f"producer {pid} moved to epoch {epoch} with sequence {first_seq}: a new epoch "
                    "must start at sequence 0"
                )
            return
        if not in_sequence(entry.last_seq, first_seq):
            raise OutOfOrderSequence(
                f"producer {pid} epoch {epoch}: batch at sequence {first_seq} does not follow the "
                f"last sequence {entry.last_seq}"
            )

    def commit(self, pending: dict[int, ProducerStateEntry], end_offset: int) -> None:
        for pid, entry in pending.items():
            self.producers[pid] = entry
            self.forgotten.pop(pid, None)
            if entry.current_txn_first_offset >= 0:
                self.ongoing.setdefault(pid, entry.current_txn_first_offset)
        self.map_end_offset = max(self.map_end_offset, end_offset)

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Kafka's checks before an end-transaction marker is written."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.producer_epoch:
            raise InvalidProducerEpoch(
                f"transaction marker for producer {producer_id} has epoch {producer_epoch} but the "
                f"partition has seen epoch {entry.producer_epoch}"
            )
        if coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFenced(
                f"transaction marker for producer {producer_id} comes from coordinator epoch "
                f"{coordinator_epoch}, older than {entry.coordinator_epoch}"
            )

    def complete_txn(
        self, producer_id: int, producer_epoch: int, marker_offset: int, aborted: bool, coordinator_epoch: int,
        timestamp: int, now_ms: int,
    ) -> CompletedTxn | None:
        """Apply a marker; returns the completed transaction (None when this
        producer had no data in an open transaction here)."""
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerStateEntry(producer_id, producer_epoch)
            self.forgotten.pop(producer_id, None)
        completed = None
        if entry.current_txn_first_offset >= 0:
            completed = CompletedTxn(producer_id, entry.current_txn_first_offset, marker_offset, aborted)
        entry.update_epoch(producer_epoch)
        entry.current_txn_first_offset = -1
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = timestamp
        entry.last_update_ms = max(entry.last_update_ms, now_ms)
        self.ongoing.pop(producer_id, None)
        self.map_end_offset = max(self.map_end_offset, marker_offset + 1)
        return completed

    # -- expiration -------------------------------------------------------------

    def expire(self, now_ms: int) -> list[int]:
        """Forget producers idle for expiration_ms with no open transaction."""
        cutoff = now_ms - self.expiration_ms
        gone = [
            pid for pid, e in self.producers.items()
            if e.current_txn_first_offset < 0 and e.last_update_ms <= cutoff
        ]
        for pid in gone:
            del self.producers[pid]
            self.forgotten[pid] = now_ms
        for pid in [p for p, t in self.forgotten.items() if t <= cutoff]:
            del self.forgotten[pid]  # remembered for one more period, then truly unknown
        return gone

    # -- replay -----------------------------------------------------------------

    def replay_segment(self, seg: LogSegment, start: int, rebuild_txn_index: bool) -> None:
        """Apply the batches of ``seg`` at or after ``start`` from their headers,
        with their append times from ``.batches``. With ``rebuild_txn_index``
        the segment's ``.txnindex`` is rewritten from the ABORT markers seen."""
        aborted: list[AbortedTxn] = []
        if seg.size:
            view = seg.view(0, seg.size)
            entries = seg.batch_index.all_entries()
            try:
                for (pos, header), (_, _, append_ms) in zip(rb.iter_batches(view), entries):
                    if header.last_offset < start:
                        continue
                    self.apply(header, view, pos, append_ms, aborted)
            finally:
                view.release()
        if rebuild_txn_index:
            if list(seg.txn_index.entries) != aborted or seg.txn_index.damaged:
                logger.info("%s: rebuilt .txnindex (%d aborted transactions)", seg.log_path, len(aborted))
                seg.txn_index.replace(aborted)

    def apply(self, header: BatchHeader, buf, pos: int, append_ms: int, aborted: list[AbortedTxn]) -> None:
        """Apply one stored batch without checks (replay)."""
        self.map_end_offset = max(self.map_end_offset, header.next_offset)
        pid = header.producer_id
        if pid < 0:
            return
        if header.is_control:
            kind, coordinator_epoch = rec.read_control(buf[pos : pos + header.size], header)
            if kind < 0:
                return
            completed = self.complete_txn(
                pid, header.producer_epoch, header.base_offset, kind == rec.CONTROL_ABORT, coordinator_epoch,
                header.max_timestamp, append_ms,
            )
            if completed is not None and completed.aborted:
                # Like Kafka, the LSO is computed with this transaction already gone.
                aborted.append(
                    AbortedTxn(pid, completed.first_offset, completed.last_offset,
                               self.last_stable_offset_after(completed))
                )
            return
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerStateEntry(pid, header.producer_epoch)
            self.forgotten.pop(pid, None)
        entry.add_batch(header, append_ms)
        if header.is_transactional and entry.current_txn_first_offset < 0:
            entry.current_txn_first_offset = header.base_offset
            self.ongoing[pid] = header.base_offset

    def reset(self, offset: int) -> None:
        self.producers.clear()
        self.ongoing.clear()
        self.forgotten.clear()
        self.map_end_offset = offset

    def rebuild(
        self, segments: Iterable[LogSegment], *, upto: int, replay_from: int | None = None,
        rebuild_txn_index: Iterable[LogSegment] = (),
    ) -> None:
        """Load the latest usable snapshot at or below ``replay_from`` (default:
        ``upto``, the log end offset) and replay the segments from there.
        Snapshots above ``upto`` are deleted first."""
        segments = list(segments)
        self.delete_snapshots(above=upto)
        limit = upto if replay_from is None else min(upto, replay_from)
        first_base = segments[0].base_offset if segments else upto
        loaded = None
        for offset in reversed([o for o in self._snapshots if o <= limit]):
            if self._read_snapshot(offset):
                loaded = offset
                break
        if loaded is None:
            self.reset(first_base)
            self.incomplete = first_base > 0
            start = first_base
        else:
            start = loaded
            self.incomplete = self.incomplete or loaded < first_base
        rebuild = {id(s) for s in rebuild_txn_index}
        for seg in segments:
            if seg.next_offset > start or id(seg) in rebuild:
                self.replay_segment(seg, start, id(seg) in rebuild)
        self.map_end_offset = max(start, upto)

    # -- snapshots --------------------------------------------------------------

    def _scan_snapshots(self) -> list[int]:
        found = []
        for path in self.directory.iterdir() if self.directory.exists() else ():
            m = _SNAPSHOT_NAME.match(path.name)
            if m:
                found.append(int(m.group(1)))
        return sorted(found)

    def take_snapshot(self, offset: int, *, durable: bool = False) -> None:
        """Write the state as of ``offset`` (raises OSError). Not durable by
        default: a torn or missing snapshot only means a longer replay."""
        body = msgpack.packb(
            {
                "version": SNAPSHOT_VERSION,
                "offset": offset,
                "incomplete": self.incomplete,
                "producers": [e.to_list() for e in self.producers.values()],
                "forgotten": [[pid, t] for pid, t in self.forgotten.items()],
            }
        )
        write_atomic(snapshot_path(self.directory, offset), _CRC.pack(crc32c(body)) + body, durable=durable)
        if offset not in self._snapshots:
            self._snapshots.append(offset)
            self._snapshots.sort()

    def _read_snapshot(self, offset: int) -> bool:
        path = snapshot_path(self.directory, offset)
        try:
            data = path.read_bytes()
            if len(data) < 4 or _CRC.unpack_from(data)[0] != crc32c(data[4:]):
                raise ValueError("CRC-32C mismatch")
            raw = msgpack.unpackb(data[4:])
            if raw.get("version") != SNAPSHOT_VERSION or raw.get("offset") != offset:
                raise ValueError(f"unknown version {raw.get('version')} or wrong offset")
            producers = [ProducerStateEntry.from_list(row) for row in raw["producers"]]
            forgotten = {int(pid): int(t) for pid, t in raw.get("forgotten", [])}
        except (OSError, ValueError, KeyError, TypeError, msgpack.UnpackException) as exc:
            logger.warning("%s is unusable (%s); deleting it and trying an older one", path, exc)
            self._delete_snapshot(offset)
            return False
        self.reset(offset)
        self.incomplete = bool(raw.get("incomplete", False))
        for entry in producers:
            self.producers[entry.producer_id] = entry
            if entry.current_txn_first_offset >= 0:
                self.ongoing[entry.producer_id] = entry.current_txn_first_offset
        self.forgotten = forgotten
        return True

    def delete_snapshots(self, *, above: int | None = None, below: int | None = None) -> None:
        for offset in list(self._snapshots):
            if (above is not None and offset > above) or (below is not None and offset < below):
                self._delete_snapshot(offset)

    def _delete_snapshot(self, offset: int) -> None:
        try:
            os.unlink(snapshot_path(self.directory, offset))
        except FileNotFoundError:
            pass
        if offset in self._snapshots:
            self._snapshots.remove(offset)
