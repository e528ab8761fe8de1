"""``eventhubs-capture``: a streaming sink writing Event Hubs Capture files.

It expects the rows of the ``eventhubs`` source with capture windows: either
one per event, where each task receives one partition's rows in order, runs
of equal ``capture_file`` form one file and a row with a null
``sequence_number`` is an empty file; or (option ``rows`` = ``plans``, what
the capture job uses) one plan per partition and micro-batch, whose log range
this sink reads itself (the source's ``dataDir``/``bootstrap`` options are
given to it too) to write the planned files. capture.writers writes each file
under its final name atomically.

Options: ``path`` (output directory, required), ``format`` (``avro`` or
``parquet``), ``nameFormat``, ``partitionKey`` (``true``: Kafka key ->
``x-opt-partition-key``), ``journal`` (directory of the commit journal,
normally inside the Spark checkpoint), ``blobConnectionString`` and
``blobContainer`` (files are staged in ``path`` and uploaded as block blobs,
capture.blob).

Commit (driver, once every task of micro-batch N succeeded): the
CaptureFileCreated records are first saved in ``journal/N.json``, then
appended to ``<path>/_capture_events.jsonl``, then ``journal/N.done`` is
written. Batches whose records cannot be read are left out of the files: each
one is logged and appended to ``<path>/_capture/unreadable_batches.jsonl``
(the job's ``CaptureTotals.unreadable_batches`` counts them). A commit repeated for the same N (Spark replays the last batch
after a crash) finds ``N.done`` and does nothing, or finds ``N.json`` and
re-appends the same records only if they are not already the file's tail.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, WriterCommitMessage

from kafka_wire.capture.events import EventBatch, UnreadableBatch, decode_batch
from kafka_wire.capture.naming import DEFAULT_NAME_FORMAT, check_name_format, file_name
from kafka_wire.capture.windows import PlannedFile
from kafka_wire.capture.notifications import EVENTS_FILE, append_events, capture_file_created
from kafka_wire.capture.writers import CaptureWriter, FileInfo, normalize_encoding
from kafka_wire.log.recovery import write_atomic

from .source import lower_keys

logger = logging.getLogger(__name__)

SINK_NAME = "eventhubs-capture"
CRASH_BEFORE_JOURNAL = "KAFKA_WIRE_CAPTURE_CRASH_BEFORE_JOURNAL"  # a micro-batch id (tests' fault)
# Seconds each write task waits before it starts (tests' fault): keeps tasks running long
# enough for a test to kill an executor mid-task, whatever the machine's speed.
TASK_DELAY = "KAFKA_WIRE_CAPTURE_TASK_DELAY_S"
ARROW_BATCH_ROWS = 10_000  # Spark's default spark.sql.execution.arrow.maxRecordsPerBatch
JOURNAL_KEEP = 100  # micro-batches whose journal entries are kept (Spark keeps as many)


@dataclass
class CaptureCommit(WriterCommitMessage):
    files: list[tuple[str, str, FileInfo]] = field(default_factory=list)  # (namespace, hub, info)
    # batches left out because they cannot be read: (namespace, hub, partition, UnreadableBatch)
    unreadable: list[tuple[str, str, int, UnreadableBatch]] = field(default_factory=list)


class EventHubsCaptureSink(DataSource):
    @classmethod
    def name(cls) -> str:
        return SINK_NAME

    def streamWriter(self, schema, overwrite: bool) -> CaptureStreamWriter:
        return CaptureStreamWriter(lower_keys(self.options))


class CaptureStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: dict):
        self.out_dir = options.get("path")
        if not self.out_dir:
            raise ValueError("the eventhubs-capture sink needs option path (the output directory)")
        self.encoding = normalize_encoding(options.get("format") or "avro")
        self.name_format = options.get("nameformat") or DEFAULT_NAME_FORMAT
        check_name_format(self.name_format)
        self.partition_key = str(options.get("partitionkey", "true")).lower() in ("1", "true", "yes", "on")
        self.journal = options.get("journal") or str(Path(self.out_dir) / "_capture" / "journal")
        self.source = options  # plan rows: where the events are (the source's dataDir or bootstrap options)
        # A Blob storage container: files are staged in ``path``, then uploaded there.
        self.blob = (options.get("blobconnectionstring"), options.get("blobcontainer"))
        if bool(self.blob[0]) != bool(self.blob[1]):
            raise ValueError("the eventhubs-capture sink needs both blobConnectionString and blobContainer")

    # -- executors ----------------------------------------------------------------------

    def write(self, iterator) -> CaptureCommit:
        delay = os.environ.get(TASK_DELAY)
        if delay:
            logger.warning("%s=%s: this write task waits before it starts", TASK_DELAY, delay)
            time.sleep(float(delay))
        done: list[tuple[str, str, FileInfo]] = []
        unreadable: list[tuple[str, str, int, UnreadableBatch]] = []
        writer: CaptureWriter | None = None
        current = None  # (namespace, hub, partition, capture_file)
        try:
            for rb in iterator:
                if "files" in rb.schema.names:  # plan rows: read the log here
                    for plan in rb.to_pylist():
                        done.extend(self._write_plan(plan, unreadable))
                    continue
                cols = {name: rb.column(name).to_pylist() for name in rb.schema.names}
                files, parts, hubs = cols["capture_file"], cols["partition"], cols["event_hub"]
                n, i = rb.num_rows, 0
                while i < n:
                    key = (cols["namespace"][i], hubs[i], parts[i], files[i])
                    if key[3] is None:
                        raise ValueError("rows without capture_file: give the eventhubs source option windowSeconds")
                    j = i + 1
                    while j < n and files[j] == key[3] and parts[j] == key[2] and hubs[j] == key[1]:
                        j += 1
                    if key != current:
                        if writer is not None:
                            done.append((current[0], current[1], self._published(writer.close())))
                        writer = self._writer(*key)
                        current = key
                    writer.write(_events(cols, i, j))
                    i = j
            if writer is not None:
                done.append((current[0], current[1], self._published(writer.close())))
                writer = None
        except BaseException:
            if writer is not None:
                writer.abort()
            raise
        return CaptureCommit(done, unreadable)

    def _writer(self, namespace: str, hub: str, partition: int, capture_file: int) -> CaptureWriter:
        name = file_name(self.name_format, namespace, hub, partition, capture_file, self.encoding)
        return CaptureWriter(self.out_dir, name, partition, self.encoding, partition_key=self.partition_key)

    def _write_plan(self, plan: dict, unreadable: list) -> list[tuple[str, str, FileInfo]]:
        """The files of one partition's micro-batch, read from the log (or
        Kafka) here: the planned files in order, each from its batches; the
        batches that cannot be read are left out and entered in ``unreadable``."""
        from .backend import first_offset, open_backend
        from .source import Peekable

        ns, hub, p = plan["namespace"], plan["event_hub"], plan["partition"]
        backend = open_backend(self.source)
        done = []
        try:
            pending = _Pending(first_offset(backend, hub, p, plan["start"]))
            batches = Peekable(backend.read(hub, p, plan["start"], plan["end"], plan["start_pos"]))
            for f in map(PlannedFile._make, json.loads(plan["files"])):
                writer = self._writer(ns, hub, p, f.name_ms)
                try:
                    if f.empty:
                        pending.spend(1)  # the row an empty file had
                    while (b := batches.peek()) is not None and b.base_offset < f.end_offset:
                        next(batches)
                        pending.add(b.data, b.position, b.append_time_ms, writer)
                    pending.write_to(writer)
                    info = writer.close()
                except BaseException:
                    writer.abort()
                    raise
                done.append((ns, hub, self._published(info)))
        finally:
            backend.close()
        unreadable.extend((ns, hub, p, u) for u in pending.unreadable)
        return done

    def _published(self, info: FileInfo) -> FileInfo:
        """The closed file where readers find it: uploaded, with a Blob container."""
        if not self.blob[0]:
            return info
        from kafka_wire.capture.blob import BlobContainer

        return BlobContainer(*self.blob).upload(info)

    # -- driver -------------------------------------------------------------------------

    def commit(self, messages, batchId: int) -> None:
        journal = Path(self.journal)
        journal.mkdir(parents=True, exist_ok=True)
        done_marker = journal / f"{batchId}.done"
        if done_marker.exists():
            logger.info("micro-batch %d was committed before; nothing to do", batchId)
            return
        if os.environ.get(CRASH_BEFORE_JOURNAL) == str(batchId):  # a fault tests inject: files written, no journal
            logger.error("%s=%d: the commit's process dies before the journal, as a killed one would",
                         CRASH_BEFORE_JOURNAL, batchId)
            os._exit(137)
        entry = journal / f"{batchId}.json"
        if entry.exists():
            records = json.loads(entry.read_text())["records"]
        else:
            now = int(time.time() * 1000)
            infos = [f for m in messages if m is not None for f in m.files]
            infos.sort(key=lambda x: (x[1], x[2].partition, x[2].name))
            records = [capture_file_created(info, ns, hub, now) for ns, hub, info in infos]
            unreadable = sorted(unreadable_entry(batchId, *u) for m in messages if m is not None
                                for u in getattr(m, "unreadable", ()))
            write_atomic(entry, json.dumps({"batch": batchId, "records": records,
                                            "unreadable": unreadable}).encode())
        append_events(Path(self.out_dir) / EVENTS_FILE, records)
        unreadable = json.loads(entry.read_text()).get("unreadable", [])
        if unreadable:
            append_unreadable(Path(self.out_dir) / UNREADABLE_FILE, unreadable)
        write_atomic(done_marker, b"")
        events = sum(r["data"]["eventCount"] for r in records)
        logger.info("micro-batch %d: %d events in %d capture files", batchId, events, len(records))
        for u in unreadable:
            logger.warning("micro-batch %d left out %s/%s/%d sequence numbers %d..%d: their batch cannot be "
                           "read: %s", batchId, u["namespace"], u["eventHub"], u["partition"],
                           u["firstSequenceNumber"], u["lastSequenceNumber"], u["reason"])
        for old in journal.glob("*.json"):
            stem = old.stem
            if stem.isdigit() and int(stem) < batchId - JOURNAL_KEEP:
                old.unlink(missing_ok=True)
                (journal / f"{stem}.done").unlink(missing_ok=True)

    def abort(self, messages, batchId: int) -> None:
        # Files already renamed into place are whole; the retried batch rewrites them
        # under the same names, so there is nothing to undo.
        logger.warning("micro-batch %d aborted; it will be retried", batchId)


def _events(cols: dict, i: int, j: int) -> EventBatch:
    """Rows [i, j) as an EventBatch, leaving out empty-file marker rows."""
    seqs = cols["sequence_number"][i:j]
    if seqs and seqs[0] is None:
        return EventBatch()  # a marker: the file stays empty
    headers = [[(h["key"], h["value"]) for h in hs] if hs else [] for hs in cols["headers"][i:j]]
    return EventBatch(seqs, cols["offset"][i:j], cols["enqueued_time_ms"][i:j], cols["key"][i:j], headers,
                      cols["body"][i:j])


UNREADABLE_FILE = "_capture/unreadable_batches.jsonl"  # one line a batch Capture left out


def unreadable_entry(batch_id: int, namespace: str, hub: str, partition: int, u: UnreadableBatch) -> dict:
    return {"namespace": namespace, "eventHub": hub, "partition": partition,
            "firstSequenceNumber": u.first_sequence_number, "lastSequenceNumber": u.last_sequence_number,
            "reason": u.reason, "microBatch": batch_id}


def append_unreadable(path: Path, entries: list[dict]) -> None:
    """Append the journal's entries, unless a replayed commit appended them already
    (they are then the file's tail: the journal entry is the same)."""
    lines = b"".join(json.dumps(e).encode() + b"\n" for e in entries)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as f:
        size = f.seek(0, os.SEEK_END)
        if size >= len(lines):
            f.seek(size - len(lines))
            if f.read() == lines:
                return
        f.write(lines)
        f.flush()
        os.fsync(f.fileno())


class _Pending:
    """Decoded events, handed to the writer in the rhythm event rows had: Spark
    gave the sink Arrow batches of ARROW_BATCH_ROWS rows
    (spark.sql.execution.arrow.maxRecordsPerBatch) cut at file boundaries, an
    empty file's row counting as one, and each write is one Parquet row group;
    so files keep their bytes."""

    def __init__(self, first: int = 0) -> None:
        self.events = EventBatch()
        self.first = first  # events below it are not the range's (backend.first_offset)
        self.budget = ARROW_BATCH_ROWS  # rows left in the Arrow batch the event rows would be in
        self.unreadable: list[UnreadableBatch] = []  # batches left out: they cannot be read

    def add(self, data: bytes, position: int, append_time_ms: int, writer: CaptureWriter) -> None:
        decode_batch(data, position, append_time_ms, self.events, self.first, self.unreadable)
        while len(self.events) >= self.budget:
            head, self.events = _split(self.events, self.budget)
            writer.write(head)
            self.budget = ARROW_BATCH_ROWS

    def write_to(self, writer: CaptureWriter) -> None:
        """The file ends: what it holds is written."""
        if len(self.events):
            writer.write(self.events)
            self.spend(len(self.events))
            self.events = EventBatch()

    def spend(self, rows: int) -> None:
        self.budget -= rows
        if self.budget <= 0:
            self.budget = ARROW_BATCH_ROWS


def _split(events: EventBatch, n: int) -> tuple[EventBatch, EventBatch]:
    columns = events.columns()
    return EventBatch(*(c[:n] for c in columns)), EventBatch(*(c[n:] for c in columns))
