"""TransactionCoordinator: transactional ids, their producer ids and epochs,
the partitions and groups of each open transaction, and how it ends.

Kafka's state machine, on one broker: Empty → Ongoing → PrepareCommit /
PrepareAbort → CompleteCommit / CompleteAbort. Ending a transaction writes a
COMMIT or ABORT control batch into every partition it touched (through the
injected ``write_marker``) and makes its transactional offset commits
visible (``commit_offsets``) or drops them. Markers are local writes, so the
Prepare states last only as long as that loop; they are still recorded, so a
crash between them is finished on restart. A transaction open longer than its
timeout is aborted and its producer epoch bumped, fencing the old producer.

State survives restarts in ``transactions.log`` (length-prefixed, CRC-32C
msgpack records of the whole state of one transactional id; the last record
of an id wins; rewritten compactly at start). A state too large for one
record (many partitions, long offset metadata) is written as pieces of
``_PIECE`` bytes (``["more", id, partitions, groups, offsets]``) that the
state's own record, written last in the same write, completes; pieces with no
state after them (a torn write) are not read. No record is ever larger than
the log reads back (``record_log.MAX_RECORD``), and a write that fails (a
full disk) is cut off the file again: otherwise the next start would drop
that record and every later one, fencing included. With ``fsync`` (the
power-loss durability mode) every record is fsynced before the request it
serves is answered; without it a process crash loses nothing, a power loss
may lose the latest records.

Hanging transactions (KIP-664): a partition whose last stable offset is held
by an open transaction the coordinator does not know as open there (its
state lost or stale after a power loss) is found by :meth:`hanging` and
aborted once the transaction's timeout has passed (its own timeout when the
coordinator still knows the producer, else ``max_timeout_ms``), counted from
the append time of the transaction's first batch in that partition: no live
transaction can be older, so only a dead one is aborted.
"""
from __future__ import annotations

import logging
import os
from collections.abc import Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import kafka.errors as Errors

from kafka_wire.coordinator.clock import Clock
from kafka_wire.coordinator.record_log import MAX_RECORD, RecordTooLarge, append, frame, framed, packed, scan
from kafka_wire.log.recovery import fsync_dir, write_atomic

log = logging.getLogger(__name__)

NONE = Errors.NoError.errno
MAX_EPOCH = 32767
EMPTY, ONGOING, PREPARE_COMMIT, PREPARE_ABORT, COMPLETE_COMMIT, COMPLETE_ABORT, DEAD = (
    "Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead")
MAX_TIMEOUT_MS = 15 * 60 * 1000  # Kafka's transaction.max.timeout.ms (Event Hubs: 15 min too)
# The longest string the protocol's non-flexible versions carry (an int16 length): an id
# longer than that is out of reach of most clients, and every piece of its state names it.
TRANSACTIONAL_ID_MAX_BYTES = 32_767
OFFSET_METADATA_MAX = 4096  # Kafka's offset.metadata.max.bytes, for TxnOffsetCommit as OffsetCommit
_WHOLE = MAX_RECORD  # a state past this is written in pieces (rare: thousands of partitions)
_PIECE = MAX_RECORD // 4  # of this size (plus one item, itself bounded)
_MORE = "more"
COORDINATOR_EPOCH = 0

# write_marker(topic, partition, producer_id, producer_epoch, commit) -> None
MarkerWriter = Callable[[str, int, int, int, bool], None]
# commit_offsets(group, [(topic, partition, offset, leader_epoch, metadata)]) -> None
OffsetCommitter = Callable[[str, list], None]


@dataclass
class TxnState:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: str = EMPTY
    partitions: set = field(default_factory=set)          # {(topic, partition)}
    groups: set = field(default_factory=set)
    pending_offsets: dict = field(default_factory=dict)    # group -> {(t, p): (offset, epoch, meta)}
    start_ms: int = -1
    update_ms: int = 0
    last_producer_id: int = -1
    last_producer_epoch: int = -1
    # Read back after an unclean shutdown without fsync (crash durability): a power loss may
    # have kept an older state than the partitions', so the producer id's epochs and
    # sequences may already be used there. Not stored.
    stale: bool = field(default=False, compare=False)

    def to_row(self) -> list:
        return [self.transactional_id, self.producer_id, self.producer_epoch, self.timeout_ms, self.state,
                sorted([t, p] for t, p in self.partitions), sorted(self.groups),
                {g: [[t, p, *v] for (t, p), v in offs.items()] for g, offs in self.pending_offsets.items()},
                self.start_ms, self.update_ms, self.last_producer_id, self.last_producer_epoch]

    @classmethod
    def from_row(cls, row: list) -> "TxnState":
        (tid, pid, epoch, timeout, state, parts, groups, pending, start, update, lpid, lepoch) = row
        return cls(tid, pid, epoch, timeout, state, {(t, p) for t, p in parts}, set(groups),
                   {g: {(t, p): (o, e, m) for t, p, o, e, m in offs} for g, offs in pending.items()},
                   start, update, lpid, lepoch)


class TxnError(Exception):
    def __init__(self, error_code: int, message: str = "") -> None:
        super().__init__(message or str(error_code))
        self.error_code = error_code  # a Kafka error code


def _txn_row(row):
    """A transaction-log record: a state row, ["del", transactional id], or a piece of
    the state row that follows it (["more", id, partitions, groups, pending offsets])."""
    if not isinstance(row, list) or not row:
        raise ValueError("record is not a list")
    if row[0] == _MORE:
        if not (len(row) == 5 and isinstance(row[1], str) and isinstance(row[2], list)
                and isinstance(row[3], list) and isinstance(row[4], dict)):
            raise ValueError("unreadable piece of a state")
    elif row[0] != "del":
        try:
            TxnState.from_row(row)
        except Exception as exc:  # a row of another shape: the log ends here, as at a torn write
            raise ValueError(f"unreadable record ({exc})") from None
    return row


def encode_state(st: TxnState) -> list[bytes]:
    """The records of ``st``: one, or (a state over ``_WHOLE`` bytes) its partitions,
    groups and pending offsets in pieces, then the state row holding the rest; raises
    RecordTooLarge, writing nothing, if one partition, group or offset alone is too large."""
    row = st.to_row()
    payload = packed(row)
    if len(payload) <= _WHOLE:
        return [framed(payload)]
    tid = st.transactional_id
    partitions, groups, pending = row[5], row[6], row[7]
    row[5], row[6], row[7] = [], [], {}
    records: list[bytes] = []
    piece: list = [[], [], {}]
    size = len(packed([_MORE, tid, [], [], {}]))
    base = size

    def add(where: int, item, item_size: int, group: str | None = None) -> None:
        nonlocal piece, size
        if size + item_size > _PIECE and size > base:
            records.append(frame([_MORE, tid, *piece]))
            piece, size = [[], [], {}], base
        if group is None:
            piece[where].append(item)
        elif item is None:  # a group with no offsets (yet) is kept too
            piece[2].setdefault(group, [])
        else:
            piece[2].setdefault(group, []).append(item)
        size += item_size

    for item in partitions:
        add(0, item, len(packed(item)))
    for group in groups:
        add(1, group, len(packed(group)))
    for group, offsets in pending.items():
        key_size = len(packed(group))
        for item in offsets or [None]:
            add(2, item, len(packed(item)) + key_size, group)
    if size > base:
        records.append(frame([_MORE, tid, *piece]))
    records.append(frame(row))
    return records


class TransactionStore:
    """The durable record of transaction states."""

    def __init__(self, directory: Path, *, fsync: bool = False) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.path = self.directory / "transactions.log"
        self.clean_marker = self.directory / "clean-shutdown"
        self.fsync = fsync
        self._fd: int | None = None
        self._size = 0

    def load(self) -> dict[str, TxnState]:
        states: dict[str, TxnState] = {}
        clean = self.clean_marker.exists()
        if clean:
            self.clean_marker.unlink()
            fsync_dir(self.directory)  # a power loss must not bring the marker back
        if self.path.exists():
            data = self.path.read_bytes()
            result, rows = scan(data, 0, _txn_row)
            pieces: dict[str, list] = {}  # id -> [partitions, groups, pending] read so far
            for row in rows:
                if row[0] == _MORE:
                    got = pieces.setdefault(row[1], [[], [], {}])
                    got[0] += row[2]
                    got[1] += row[3]
                    for group, offsets in row[4].items():
                        got[2].setdefault(group, []).extend(offsets)
                elif row[0] == "del":
                    pieces.pop(row[1], None)
                    states.pop(row[1], None)
                else:
                    got = pieces.pop(row[0], None)
                    if got is not None:
                        row[5], row[6] = got[0] + row[5], got[1] + row[6]
                        for group, offsets in row[7].items():
                            got[2].setdefault(group, []).extend(offsets)
                        row[7] = got[2]
                    st = TxnState.from_row(row)
                    states[st.transactional_id] = st
            if result.problem is not None:
                log.warning("transaction log %s: dropped %d bytes at the tail (%s)", self.path,
                            len(data) - result.end, result.problem)
            if pieces:  # a state's last write, torn before its own record: never acknowledged
                log.warning("transaction log %s: the unfinished last write of %s is dropped",
                            self.path, ", ".join(map(repr, pieces)))
        if not clean and not self.fsync:
            for st in states.values():
                st.stale = True
        self._rewrite(states)
        return states

    def _rewrite(self, states: dict[str, TxnState]) -> None:
        blob = b"".join(record for st in states.values() for record in encode_state(st))
        write_atomic(self.path, blob)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self._size = len(blob)

    def put(self, st: TxnState) -> None:
        """Write ``st`` (one write); RecordTooLarge, with nothing written, if it cannot be."""
        self._write(b"".join(encode_state(st)))

    def delete(self, transactional_id: str) -> None:
        self._write(frame(["del", transactional_id]))

    def _write(self, records: bytes) -> None:
        self._size = append(self._fd, records, self._size, sync=self.fsync, path=self.path)

    def close(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None
            write_atomic(self.clean_marker, b"")


class TransactionCoordinator:
    def __init__(self, clock: Clock, store: TransactionStore, *, allocate_producer_id: Callable[[], int],
                 write_marker: MarkerWriter, commit_offsets: OffsetCommitter,
                 partition_exists: Callable[[str, int], bool],
                 open_txn_start: Callable[[str, int, int], int | None] | None = None,
                 max_timeout_ms: int = MAX_TIMEOUT_MS,
                 expiration_ms: int = 7 * 24 * 3600 * 1000) -> None:
        self.clock = clock
        self.store = store
        self.allocate = allocate_producer_id
        self.write_marker = write_marker
        self.commit_offsets = commit_offsets
        self.partition_exists = partition_exists
        # (topic, partition, producer id) -> append time of the first batch of the producer's
        # open transaction there, or None: how a PrepareCommit recovered from a stale state
        # tells its transaction from a later one of the same producer (see start()).
        self.open_txn_start = open_txn_start
        self.max_timeout_ms = max_timeout_ms
        self.expiration_ms = expiration_ms
        self.txns = store.load()
        self._by_pid: dict[int, TxnState] | None = None  # producer id -> its state, made on use
        # group -> {(topic, partition): how many open transactions hold an offset for it}, and
        # what each transactional id counts there: OffsetFetch's require_stable asks it per request.
        self._pending: dict[str, dict[tuple[str, int], int]] = {}
        self._pending_of: dict[str, frozenset[tuple[str, str, int]]] = {}
        for st in self.txns.values():
            self._index_pending(st)
        self._timers: dict[str, Any] = {}
        self._closed = False

    def start(self) -> None:
        """Finish what a crash interrupted and re-arm the timeouts."""
        for st in list(self.txns.values()):
            if st.state == PREPARE_COMMIT:
                self._complete(st, commit=True, recovered=True)
            elif st.state == PREPARE_ABORT:
                self._complete(st, commit=False)
            elif st.state == ONGOING:
                self._arm(st)

    def close(self) -> None:
        self._closed = True
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self.store.close()

    # -- InitProducerId -----------------------------------------------------------
    def init_producer_id(self, transactional_id: str, timeout_ms: int,
                         producer_id: int = -1, producer_epoch: int = -1) -> tuple[int, int, int]:
        """(error, producer id, epoch) for a transactional producer starting up."""
        if not transactional_id or len(transactional_id.encode("utf-8")) > TRANSACTIONAL_ID_MAX_BYTES:
            return Errors.InvalidRequestError.errno, -1, -1
        if timeout_ms <= 0 or timeout_ms > self.max_timeout_ms:
            return Errors.InvalidTransactionTimeoutError.errno, -1, -1
        now = self.clock.now_ms()
        st = self.txns.get(transactional_id)
        if st is None:
            st = TxnState(transactional_id, self.allocate(), 0, timeout_ms, EMPTY, update_ms=now)
            self._save(st)
            return NONE, st.producer_id, st.producer_epoch
        if producer_id >= 0 and (producer_id, producer_epoch) not in (
                (st.producer_id, st.producer_epoch), (st.last_producer_id, st.last_producer_epoch)):
            # KIP-360: only the current (or just-replaced) producer may bump its epoch.
            return Errors.ProducerFencedError.errno, -1, -1
        if st.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return Errors.ConcurrentTransactionsError.errno, -1, -1
        if st.state == ONGOING:
            # A new incarnation aborts whatever the old one left open, fencing the old one
            # (Kafka's prepareFenceProducerEpoch): the markers must carry the producer id the
            # partitions hold the transaction under. Only then may the epoch be exhausted.
            fenced = st.producer_id, st.producer_epoch
            self._fence_epoch(st)
            self._end(st, commit=False)
            if st.producer_epoch >= MAX_EPOCH:  # never handed out: a new id, as Kafka's retry gets
                st.producer_id, st.producer_epoch = self.allocate(), 0
                st.last_producer_id, st.last_producer_epoch = fenced  # its retry is not fenced
        else:
            self._bump_epoch(st)
        if st.stale:
            # The state may be older than the partitions' (crash durability, then a power
            # loss): this epoch and its sequences may be in use there already. A new producer
            # id starts clean (KIP-360 allows the change); the old one is fenced.
            st.producer_id, st.producer_epoch = self.allocate(), 0
            st.stale = False
        st.timeout_ms = timeout_ms
        st.update_ms = now
        self._save(st)
        return NONE, st.producer_id, st.producer_epoch

    def _bump_epoch(self, st: TxnState) -> None:
        """The next producer's id and epoch, with no transaction open: a new producer id
        once the epochs are exhausted (no producer is given MAX_EPOCH; Kafka's
        prepareIncrementProducerEpoch / prepareProducerIdRotation)."""
        st.last_producer_id, st.last_producer_epoch = st.producer_id, st.producer_epoch
        if st.producer_epoch + 1 >= MAX_EPOCH:
            st.producer_id, st.producer_epoch = self.allocate(), 0
        else:
            st.producer_epoch += 1

    @staticmethod
    def _fence_epoch(st: TxnState) -> None:
        """Fence the producer of an open transaction before aborting it: the same producer
        id at the next epoch, at most MAX_EPOCH (no producer holds that one), so the ABORT
        markers end the transaction the partitions hold under that id; a new id would leave
        it open, holding the last stable offset until the hanging-transaction check."""
        st.last_producer_id, st.last_producer_epoch = st.producer_id, st.producer_epoch
        st.producer_epoch = min(st.producer_epoch + 1, MAX_EPOCH)

    # -- validation -----------------------------------------------------------------
    def _current(self, transactional_id: str, producer_id: int, producer_epoch: int) -> TxnState:
        st = self.txns.get(transactional_id)
        if st is None or st.producer_id != producer_id:
            raise TxnError(Errors.InvalidProducerIdMappingError.errno,
                           f"transactional id {transactional_id!r} does not belong to producer {producer_id}")
        if producer_epoch != st.producer_epoch:
            raise TxnError(Errors.ProducerFencedError.errno,
                           f"producer epoch {producer_epoch} is not the current epoch {st.producer_epoch}")
        if st.state in (PREPARE_COMMIT, PREPARE_ABORT):
            raise TxnError(Errors.ConcurrentTransactionsError.errno)
        return st

    def _open(self, st: TxnState) -> None:
        if st.state != ONGOING:
            st.state = ONGOING
            st.partitions.clear()
            st.groups.clear()
            st.pending_offsets.clear()
            st.start_ms = self.clock.now_ms()
            self._arm(st)
        st.update_ms = self.clock.now_ms()

    # -- AddPartitionsToTxn / AddOffsetsToTxn / TxnOffsetCommit -----------------------
    def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                       partitions: Iterable[tuple[str, int]], verify_only: bool = False) -> dict:
        partitions = list(partitions)
        try:
            st = self._current(transactional_id, producer_id, producer_epoch)
        except TxnError as exc:
            return {tp: exc.error_code for tp in partitions}
        unknown = [tp for tp in partitions if not self.partition_exists(*tp)]
        if unknown:
            # Kafka refuses the whole request: the bad ones get the error, the rest OPERATION_NOT_ATTEMPTED.
            return {tp: (Errors.UnknownTopicOrPartitionError.errno if tp in unknown
                         else Errors.OperationNotAttemptedError.errno) for tp in partitions}
        if verify_only:
            ok = st.state == ONGOING
            return {tp: NONE if ok and tp in st.partitions else Errors.InvalidTxnStateError.errno
                    for tp in partitions}
        self._open(st)
        before = set(st.partitions)
        st.partitions.update(partitions)
        if not self._save_or_undo(st, lambda: setattr(st, "partitions", before)):
            return {tp: Errors.UnknownServerError.errno for tp in partitions}
        return {tp: NONE for tp in partitions}

    def add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str) -> int:
        try:
            st = self._current(transactional_id, producer_id, producer_epoch)
        except TxnError as exc:
            return exc.error_code
        self._open(st)
        if group_id in st.groups:
            self._save(st)
            return NONE
        st.groups.add(group_id)
        if not self._save_or_undo(st, lambda: st.groups.discard(group_id)):
            return Errors.InvalidGroupIdError.errno
        return NONE

    def txn_offset_commit(self, transactional_id: str, group_id: str, producer_id: int,
                          producer_epoch: int, offsets: list[tuple[str, int, int, int, str | None]]) -> int:
        try:
            st = self._current(transactional_id, producer_id, producer_epoch)
        except TxnError as exc:
            return exc.error_code
        if st.state != ONGOING or group_id not in st.groups:
            return Errors.InvalidTxnStateError.errno if st.state != ONGOING else \
                Errors.InvalidTxnStateError.errno
        if any(metadata is not None and len(metadata) > OFFSET_METADATA_MAX for *_, metadata in offsets):
            return Errors.OffsetMetadataTooLargeError.errno
        had = st.pending_offsets.get(group_id)
        before = None if had is None else dict(had)
        pending = st.pending_offsets.setdefault(group_id, {})
        for topic, partition, offset, leader_epoch, metadata in offsets:
            pending[(topic, partition)] = (offset, leader_epoch, metadata)
        st.update_ms = self.clock.now_ms()

        def undo() -> None:
            if before is None:
                st.pending_offsets.pop(group_id, None)
            else:
                st.pending_offsets[group_id] = before
        if not self._save_or_undo(st, undo):
            return Errors.InvalidCommitOffsetSizeError.errno  # Kafka's answer for offsets too large to log
        return NONE

    # -- EndTxn ---------------------------------------------------------------------
    def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool) -> int:
        st = self.txns.get(transactional_id)
        if st is None or st.producer_id != producer_id:
            return Errors.InvalidProducerIdMappingError.errno
        if producer_epoch != st.producer_epoch:
            # A retry of an end the timeout already did for the previous epoch.
            if st.last_producer_epoch == producer_epoch and st.state == COMPLETE_ABORT and not commit:
                return NONE
            return Errors.ProducerFencedError.errno
        if st.state == ONGOING:
            self._end(st, commit)
            return NONE
        done = COMPLETE_COMMIT if commit else COMPLETE_ABORT
        if st.state == done:
            return NONE  # a retried EndTxn
        if st.state == EMPTY and not commit:
            return NONE  # aborting nothing is fine (Kafka 3.x+)
        return Errors.InvalidTxnStateError.errno

    def _end(self, st: TxnState, commit: bool) -> None:
        st.state = PREPARE_COMMIT if commit else PREPARE_ABORT
        st.update_ms = self.clock.now_ms()
        self._save(st)
        self._complete(st, commit)

    def _complete(self, st: TxnState, commit: bool, recovered: bool = False) -> None:
        timer = self._timers.pop(st.transactional_id, None)
        if timer is not None:
            timer.cancel()
        for topic, partition in sorted(st.partitions):
            if recovered and commit and self._later_txn_open(st, topic, partition):
                continue
            try:
                self.write_marker(topic, partition, st.producer_id, st.producer_epoch, commit)
            except Exception as exc:  # a deleted topic, a full disk: log it, don't wedge the txn
                log.error("marker for %s to %s-%d failed: %s", st.transactional_id, topic, partition, exc)
        if commit:
            for group, offsets in st.pending_offsets.items():
                self.commit_offsets(group, [(t, p, o, e, m) for (t, p), (o, e, m) in offsets.items()])
        st.state = COMPLETE_COMMIT if commit else COMPLETE_ABORT
        st.partitions.clear()
        st.groups.clear()
        st.pending_offsets.clear()
        st.update_ms = self.clock.now_ms()
        self._save(st)

    def _later_txn_open(self, st: TxnState, topic: str, partition: int) -> bool:
        """A PrepareCommit read back at start may be stale (a power loss kept an older
        state than the partitions'): if the producer's transaction open in the partition
        began after the commit was prepared, it is a later transaction, which this COMMIT
        must not complete. It is left to the hanging-transaction check, which aborts it."""
        if self.open_txn_start is None:
            return False
        try:
            started = self.open_txn_start(topic, partition, st.producer_id)
        except Exception as exc:  # a deleted topic: the marker write reports it
            log.debug("no open-transaction state for %s-%d: %r", topic, partition, exc)
            return False
        if started is None or started <= st.update_ms:
            return False
        log.warning("transaction %s: not completing its recovered PrepareCommit in %s-%d: the producer's "
                    "transaction open there began after the commit was prepared (a stale coordinator "
                    "state); it will be aborted when its timeout passes", st.transactional_id, topic, partition)
        return True

    # -- timeouts -------------------------------------------------------------------
    def _arm(self, st: TxnState) -> None:
        if self._closed:
            return
        old = self._timers.pop(st.transactional_id, None)
        if old is not None:
            old.cancel()
        due = max(0, st.start_ms + st.timeout_ms - self.clock.now_ms())
        tid = st.transactional_id
        self._timers[tid] = self.clock.call_later(due, lambda: self._expire(tid))

    def _expire(self, transactional_id: str) -> None:
        self._timers.pop(transactional_id, None)
        st = self.txns.get(transactional_id)
        if st is None or st.state != ONGOING:
            return
        log.info("transaction %s timed out after %d ms: aborting and fencing its producer",
                 transactional_id, st.timeout_ms)
        self._fence_epoch(st)  # the next InitProducerId moves to a new id if this exhausted it
        self._end(st, commit=False)

    # -- inspection -----------------------------------------------------------------
    def list(self, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
             min_duration_ms: int = -1) -> list[TxnState]:
        states = set(states)
        pids = set(producer_ids)
        now = self.clock.now_ms()
        out = []
        for st in self.txns.values():
            if states and st.state not in states:
                continue
            if pids and st.producer_id not in pids:
                continue
            if min_duration_ms >= 0 and (st.state != ONGOING or now - st.start_ms < min_duration_ms):
                continue
            out.append(st)
        return out

    def groups_in_transactions(self) -> set[str]:
        """Groups an open transaction may commit offsets to (AddOffsetsToTxn named them):
        the group cleanup keeps these, as Kafka's keeps groups with open transactions."""
        return {g for st in self.txns.values() if st.state in (ONGOING, PREPARE_COMMIT, PREPARE_ABORT)
                for g in (*st.groups, *st.pending_offsets)}

    def pending_offsets(self, group_id: str) -> Set[tuple[str, int]]:
        """The (topic, partition)s of ``group_id`` an open transaction (Ongoing, or being
        ended) holds an offset commit for, not yet the group's: an OffsetFetch with
        require_stable answers them UNSTABLE_OFFSET_COMMIT (KIP-447). A live view, kept up
        to date at each save: read it at once."""
        return self._pending.get(group_id, {}).keys()

    def _index_pending(self, st: TxnState) -> None:
        """Count ``st``'s pending offsets in ``_pending`` in place of what it counted before."""
        now = frozenset((g, t, p) for g, offsets in st.pending_offsets.items() for t, p in offsets) \
            if st.state in (ONGOING, PREPARE_COMMIT, PREPARE_ABORT) else frozenset()
        before = self._pending_of.get(st.transactional_id, frozenset())
        if now == before:
            return
        for g, t, p in before - now:
            counts = self._pending[g]
            counts[(t, p)] -= 1
            if not counts[(t, p)]:
                del counts[(t, p)]
                if not counts:
                    del self._pending[g]
        for g, t, p in now - before:
            counts = self._pending.setdefault(g, {})
            counts[(t, p)] = counts.get((t, p), 0) + 1
        if now:
            self._pending_of[st.transactional_id] = now
        else:
            self._pending_of.pop(st.transactional_id, None)

    def describe(self, transactional_id: str) -> TxnState | None:
        return self.txns.get(transactional_id)

    # -- hanging transactions (KIP-664) ---------------------------------------------------
    def knows_open(self, producer_id: int, topic: str, partition: int) -> bool:
        """Is ``producer_id``'s transaction open here, with this partition in it?"""
        for st in self.txns.values():
            if st.producer_id == producer_id and st.state in (ONGOING, PREPARE_COMMIT, PREPARE_ABORT):
                return (topic, partition) in st.partitions
        return False

    def timeout_of(self, producer_id: int) -> int:
        """The transaction timeout of the producer's transactional id, or the
        longest any transaction may have when the coordinator does not know it."""
        for st in self.txns.values():
            if st.producer_id == producer_id or st.last_producer_id == producer_id:
                return st.timeout_ms
        return self.max_timeout_ms

    def hanging(self, open_txns: Iterable[tuple[str, int, int, int, int, int]],
                *, max_timeout_ms: int | None = None) -> list[tuple[str, int, int, int, int, int]]:
        """Of the partitions' open transactions ``(topic, partition, producer id,
        producer epoch, first offset, first append ms)``, those hanging: not open
        in this coordinator with that partition, and older than their timeout
        (``max_timeout_ms`` overrides it, as kafka-transactions find-hanging's
        --max-transaction-timeout does)."""
        now = self.clock.now_ms()
        out = []
        for txn in open_txns:
            topic, partition, pid, _epoch, _first, first_ms = txn
            if self.knows_open(pid, topic, partition):
                continue
            limit = self.timeout_of(pid) if max_timeout_ms is None else max_timeout_ms
            if now - first_ms >= limit:
                out.append(txn)
        return out

    def verify(self, producer_id: int, producer_epoch: int, topic: str, partition: int) -> int:
        """0 when a transactional batch of ``producer_id`` at ``producer_epoch`` may be written
        to the partition, else the error Kafka's verification (KIP-890) answers, in its
        order: a fenced producer (an older epoch, or the id a transactional id had before)
        INVALID_PRODUCER_EPOCH; a transaction being ended CONCURRENT_TRANSACTIONS; no
        ongoing transaction holding the partition (a made-up producer id opened one that
        nothing would end, holding read_committed readers 15 minutes) INVALID_TXN_STATE."""
        index = self._by_pid
        if index is None:
            index = self._by_pid = {}
            for st in self.txns.values():
                self._index(st)
        st = index.get(producer_id)
        if st is None:
            return Errors.InvalidTxnStateError.errno
        if st.producer_id != producer_id or st.producer_epoch != producer_epoch:
            return Errors.InvalidProducerEpochError.errno
        if st.state in (PREPARE_COMMIT, PREPARE_ABORT):
            return Errors.ConcurrentTransactionsError.errno
        if st.state != ONGOING or (topic, partition) not in st.partitions:
            return Errors.InvalidTxnStateError.errno
        return NONE

    def _index(self, st: TxnState) -> None:
        """Keep ``st`` findable by its producer id and by the one it had before (kept up to
        date, not rebuilt: a save per transactional request)."""
        index = self._by_pid
        if index is None:
            return  # made on first use
        index[st.producer_id] = st
        if st.last_producer_id >= 0:
            index.setdefault(st.last_producer_id, st)

    def _save(self, st: TxnState) -> None:
        self._index(st)
        self._index_pending(st)
        self.txns[st.transactional_id] = st
        self.store.put(st)

    def _save_or_undo(self, st: TxnState, undo: Callable[[], None]) -> bool:
        """Save ``st`` after a change that made it larger; if one of its parts is too large
        for the log (nothing is written then), take the change back and say so."""
        try:
            self._save(st)
        except RecordTooLarge as exc:
            undo()
            log.warning("transaction %s: change refused: %s", st.transactional_id, exc)
            self._save(st)  # what else the request changed (a transaction it opened)
            return False
        return True
