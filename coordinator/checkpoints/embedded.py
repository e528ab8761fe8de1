"""The embedded checkpoint store: a compacted, append-only log on local disk,
the way Kafka keeps committed offsets in ``__consumer_offsets``.

File ``checkpoints.log`` in the store directory::

    header   8 bytes   b"KWCKPT\\x00\\x01"
    record   uint32 length | uint32 CRC-32C of payload | payload (msgpack array)

    payload  [1, namespace, event_hub, group, partition, sequence_number, offset,
              leader_epoch, metadata, commit_time_ms]          put
             [2, namespace, event_hub, group, partition]       delete
             [3, namespace, group]                             delete group
             [4..11, namespace, group, ...]                    KIP-848 consumer groups
                                         (coordinator.consumer_group_records)

Opening replays the file; the first record that is short, fails its CRC or
does not decode ends the log: the file is truncated there (a torn write from
a crash) and one warning says how much was dropped. A whole record of a kind
this version does not know (a newer version wrote it: after a downgrade) is
passed over, counted in one log line, so the records after it are kept; the
next compaction drops it. Every put is one
``write`` of whole records, so a crash loses at most the records being
written; a write that fails (a full disk) is cut off the file before the
error is raised, and a checkpoint too large for the log (over
``record_log.MAX_RECORD``) is refused with ``RecordTooLarge`` before anything
is written, so no record after it can be lost at the next open. By default
there is no fsync, which survives a process crash (the page cache keeps the
data), and ``fsync="always"`` survives power loss too.

When dead records (superseded or deleted) outnumber live ones and exceed
``compact_min_dead``, a background thread writes the live set to
``checkpoints.log.compacting``, then, holding the append lock only briefly,
copies over the records appended meanwhile and renames it into place.

``read_only=True`` opens a store for inspection (``kafka-wire groups``
offline), safely even while a broker writes it: nothing is created,
truncated or removed, a torn or half-written tail is just not read, and
every write raises :class:`CheckpointStoreError`.
"""
from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any, Iterable

from kafka_wire.coordinator import consumer_group_records as group_records
from kafka_wire.coordinator.checkpoints.store import Checkpoint, CheckpointKey, CheckpointStore
from kafka_wire.coordinator.record_log import RecordTooLarge, Unknown, append, frame, scan
from kafka_wire.log.recovery import fsync_dir

__all__ = ["EmbeddedCheckpointStore", "CheckpointStoreError", "RecordTooLarge"]

log = logging.getLogger(__name__)

MAGIC = b"KWCKPT\x00\x01"
CHECKPOINTS_DIR = "_checkpoints"  # DATA_DIR/_checkpoints/<namespace>/
FILE_NAME = "checkpoints.log"
_TMP_SUFFIX = ".compacting"
_PUT, _DELETE, _DELETE_GROUP = 1, 2, 3
_KNOWN = frozenset((_PUT, _DELETE, _DELETE_GROUP)) | group_records.KINDS


class CheckpointStoreError(RuntimeError):
    """The store cannot be opened or written (not a torn tail, which is repaired)."""


_frame = frame


def _encode_put(c: Checkpoint) -> bytes:
    return _frame([_PUT, c.namespace, c.event_hub, c.consumer_group, c.partition,
                   c.sequence_number, c.offset, c.leader_epoch, c.metadata, c.commit_time_ms])


def _optional(value: Any, kind: type) -> bool:
    return value is None or isinstance(value, kind)


def _decode(fields: Any) -> list[Any]:
    """Validate one decoded record; ValueError if it is not a record we wrote."""
    if not isinstance(fields, list) or not fields:
        raise ValueError("record is not a list")
    kind = fields[0]
    if kind == _PUT and len(fields) == 10:
        _, ns, hub, group, part, seq, off, epoch, meta, ts = fields
        if (all(isinstance(s, str) for s in (ns, hub, group))
                and all(isinstance(i, int) for i in (part, seq, epoch, ts))
                and _optional(off, int) and _optional(meta, str)):
            return fields
    elif kind == _DELETE and len(fields) == 5:
        if all(isinstance(s, str) for s in fields[1:4]) and isinstance(fields[4], int):
            return fields
    elif kind == _DELETE_GROUP and len(fields) == 3:
        if all(isinstance(s, str) for s in fields[1:]):
            return fields
    elif kind in group_records.KINDS:
        return group_records.validate(fields)
    elif isinstance(kind, int) and not isinstance(kind, bool) and kind not in _KNOWN:
        return Unknown(kind)  # a newer version's: passed over, not the end of the log
    raise ValueError(f"malformed record of kind {kind!r}")


class EmbeddedCheckpointStore(CheckpointStore):
    """Durable checkpoints in ``directory/checkpoints.log``.

    Call it from one thread (the event loop); compaction runs on its own
    thread and synchronises with appends internally.
    """

    def __init__(self, directory: str | os.PathLike, *, fsync: str = "none",
                 compact_min_dead: int = 1000, background_compaction: bool = True,
                 read_only: bool = False) -> None:
        if fsync not in ("none", "always"):
            raise ValueError(f"fsync must be 'none' or 'always', not {fsync!r}")
        self.directory = Path(directory)
        self.path = self.directory / FILE_NAME
        self._fsync = fsync == "always"
        self._compact_min_dead = compact_min_dead
        self._background = background_compaction
        self._state: dict[CheckpointKey, Checkpoint] = {}
        self._groups = group_records.GroupRecords()
        self._lock = threading.Lock()  # guards _fd, _size, _records against the compactor
        self._records = 0
        self._size = 0
        self._compactor: threading.Thread | None = None
        self._compaction_error: BaseException | None = None
        self.compactions = 0
        self._fd: int | None = None
        self.read_only = read_only
        if read_only:
            self._replay_read_only()
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(FILE_NAME + _TMP_SUFFIX)
        if tmp.exists():
            tmp.unlink()  # a compaction interrupted by a crash; the log itself is intact
        self._replay()
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)

    # -- opening -------------------------------------------------------------------------

    def _replay(self) -> None:
        if not self.path.exists() or self.path.stat().st_size < len(MAGIC):
            with open(self.path, "wb") as f:
                f.write(MAGIC)
                f.flush()
                os.fsync(f.fileno())
            fsync_dir(self.directory)
            self._size = len(MAGIC)
            return
        data = self.path.read_bytes()
        if data[:len(MAGIC)] != MAGIC:
            raise CheckpointStoreError(
                f"{self.path} is not a kafka-wire checkpoint log (bad header); "
                "move it away or point the broker at another data directory")
        result, records = scan(data, len(MAGIC), _decode)
        for fields in records:
            self._apply(fields, result.end)  # (result.end: where this record starts)
            self._records += 1
        self._skipped(result)
        pos, reason = result.end, result.problem
        if self._groups.pending_since is not None:
            # Pieces of an assignment whose own record was never written: the tail of a
            # torn write, cut like any other (else later records would complete them).
            pos, reason = self._groups.pending_since, "pieces of a record cut short"
            self._groups.drop_pending()
        if reason is not None:
            log.warning("checkpoint log %s: dropped %d bytes from byte %d on (%s); "
                        "kept %d records — a torn write from an earlier crash",
                        self.path, len(data) - pos, pos, reason, self._records)
            with open(self.path, "r+b") as f:
                f.truncate(pos)
                f.flush()
                os.fsync(f.fileno())
        self._size = pos

    def _replay_read_only(self) -> None:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return  # no checkpoints yet
        if not data:
            return  # a broker creating the file right now
        if data[:len(MAGIC)] != MAGIC:
            raise CheckpointStoreError(f"{self.path} is not a kafka-wire checkpoint log "
                                       "(bad header)")
        result, records = scan(data, len(MAGIC), _decode)
        for fields in records:
            self._apply(fields, result.end)
            self._records += 1
        self._skipped(result)
        pos = result.end
        if self._groups.pending_since is not None:
            pos = self._groups.pending_since
            self._groups.drop_pending()
        if pos < len(data):
            log.info("checkpoint log %s: %d bytes at the tail not read (a write in progress, "
                     "or a torn write the broker repairs when it starts)",
                     self.path, len(data) - pos)
        self._size = pos

    def _skipped(self, result: Any) -> None:
        if result.skipped:
            self._records += sum(result.skipped.values())  # dead: compaction drops them
            log.warning("checkpoint log %s: %s", self.path, result.skipped_line())

    def _apply(self, fields: list[Any], position: int | None = None) -> None:
        kind = fields[0]
        if kind in group_records.KINDS:
            self._groups.apply(fields, position)
        elif kind == _PUT:
            c = Checkpoint(*fields[1:])
            self._state[c.key] = c
        elif kind == _DELETE:
            self._state.pop(tuple(fields[1:]), None)
        else:
            _, ns, group = fields
            for key in [k for k in self._state if k[0] == ns and k[2] == group]:
                del self._state[key]

    # -- writing -------------------------------------------------------------------------

    def _append(self, records: list[bytes]) -> None:
        if self.read_only:
            raise CheckpointStoreError(f"checkpoint store {self.path} is open read-only")
        if self._fd is None:
            raise CheckpointStoreError(f"checkpoint store {self.path} is closed")
        if self._compaction_error is not None:
            error, self._compaction_error = self._compaction_error, None
            log.error("checkpoint log %s: background compaction failed: %r", self.path, error)
        blob = b"".join(records)
        with self._lock:
            try:
                self._size = append(self._fd, blob, self._size, sync=self._fsync, path=self.path)
            except OSError as exc:  # cut off again: the log ends with the last whole write
                raise CheckpointStoreError(f"cannot write to {self.path}: {exc}") from exc
            self._records += len(records)

    def put(self, checkpoint: Checkpoint) -> None:
        self.put_many([checkpoint])

    def put_many(self, checkpoints: Iterable[Checkpoint]) -> None:
        checkpoints = list(checkpoints)
        if not checkpoints:
            return
        self._append([_encode_put(c) for c in checkpoints])
        for c in checkpoints:
            self._state[c.key] = c
        self._maybe_compact()

    def delete(self, namespace: str, group: str, topic: str, partition: int) -> None:
        if (namespace, topic, group, partition) not in self._state:
            return  # nothing to forget: keep the log short
        fields = [_DELETE, namespace, topic, group, partition]
        self._append([_frame(fields)])
        self._apply(fields)
        self._maybe_compact()

    def delete_many(self, keys: Iterable[CheckpointKey]) -> None:
        frames = [[_DELETE, ns, topic, group, partition] for ns, topic, group, partition in keys
                  if (ns, topic, group, partition) in self._state]
        if not frames:
            return
        self._append([_frame(fields) for fields in frames])  # one write (and fsync) for all
        for fields in frames:
            self._apply(fields)
        self._maybe_compact()

    def delete_group(self, namespace: str, group: str) -> None:
        if not any(k[0] == namespace and k[2] == group for k in self._state):
            return
        fields = [_DELETE_GROUP, namespace, group]
        self._append([_frame(fields)])
        self._apply(fields)
        self._maybe_compact()

    def load(self) -> list[Checkpoint]:
        return list(self._state.values())

    def write_group_records(self, namespace: str, group: str, bodies: list[list]) -> None:
        self.write_many_group_records([(namespace, group, bodies)])

    def write_many_group_records(self, groups: Iterable[tuple[str, str, list[list]]]) -> None:
        records = [[body[0], namespace, group, *body[1:]]
                   for namespace, group, bodies in groups for body in bodies]
        if not records:
            return
        # Framed before anything is written: a record too large raises RecordTooLarge here.
        self._append([blob for fields in records for blob in group_records.encode(fields)])
        for fields in records:
            self._groups.apply(fields)
        self._maybe_compact()

    def group_records(self) -> dict[tuple[str, str], dict[tuple[int, str], list]]:
        return dict(self._groups.groups)

    def get(self, namespace: str, group: str, topic: str, partition: int) -> Checkpoint | None:
        return self._state.get((namespace, topic, group, partition))

    def flush(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.fsync(self._fd)

    def close(self) -> None:
        self.wait_for_compaction()
        with self._lock:
            if self._fd is not None:
                os.fsync(self._fd)
                os.close(self._fd)
                self._fd = None

    # -- compaction ----------------------------------------------------------------------

    @property
    def dead_records(self) -> int:
        return self._records - len(self._state) - self._groups.live

    def _maybe_compact(self) -> None:
        dead = self.dead_records
        if dead < self._compact_min_dead or dead < len(self._state) + self._groups.live:
            return
        if self._compactor is not None and self._compactor.is_alive():
            return
        self.compact(wait=not self._background)

    def compact(self, wait: bool = True) -> None:
        """Rewrite the log with live records only (in a thread unless ``wait``)."""
        if self.read_only:
            raise CheckpointStoreError(f"checkpoint store {self.path} is open read-only")
        self.wait_for_compaction()
        with self._lock:
            snapshot = list(self._state.values())
            groups = self._groups.snapshot()
            base_size, base_records = self._size, self._records
        if wait:
            self._compact(snapshot, base_size, base_records, groups)
            return
        self._compactor = threading.Thread(
            target=self._compact_guarded, args=(snapshot, base_size, base_records, groups),
            name="checkpoint-compactor", daemon=True)
        self._compactor.start()

    def wait_for_compaction(self) -> None:
        if self._compactor is not None:
            self._compactor.join()
            self._compactor = None

    def _compact_guarded(self, *args: Any) -> None:
        try:
            self._compact(*args)
        except BaseException as exc:  # reported on the owner thread at the next write
            self._compaction_error = exc

    def _compact(self, snapshot: list[Checkpoint], base_size: int, base_records: int,
                 groups: list[list] = ()) -> None:
        tmp = self.path.with_name(FILE_NAME + _TMP_SUFFIX)
        written = len(snapshot)
        with open(tmp, "wb") as out:
            out.write(MAGIC)
            for c in snapshot:
                out.write(_encode_put(c))
            for fields in groups:
                blobs = group_records.encode(fields)
                out.write(b"".join(blobs))
                written += len(blobs)
            out.flush()
            os.fsync(out.fileno())
            with self._lock:
                if self._fd is None:
                    tmp.unlink()
                    return
                # Records appended while we wrote the snapshot follow it, in order.
                with open(self.path, "rb") as src:
                    src.seek(base_size)
                    tail = src.read()
                out.write(tail)
                out.flush()
                os.fsync(out.fileno())
                new_size = out.tell()
                os.replace(tmp, self.path)
                fsync_dir(self.directory)
                os.close(self._fd)
                self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
                before = self._size
                self._records = written + (self._records - base_records)
                self._size = new_size
        self.compactions += 1
        log.info("checkpoint log %s compacted: %d -> %d bytes, %d live records",
                 self.path, before, new_size, len(snapshot))
