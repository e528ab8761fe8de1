"""``eventhubs``: a PySpark streaming source over event hub partitions.

    spark.dataSource.register(EventHubsSource)
    df = (spark.readStream.format("eventhubs")
          .option("dataDir", "./data").option("namespace", "emulatorNs1")
          .option("eventHubs", "orders,payments")
          .load())

One row per event: ``namespace, event_hub, partition, sequence_number,
offset`` (the Event Hubs byte offset), ``enqueued_time_ms, key, headers``
(Kafka's, in order), ``body``, and ``capture_file``.

Options:

- ``dataDir`` + ``namespace`` (default ``emulatorNs1``): read the broker's log
  directory (log.reader; safe while the broker writes), or ``bootstrap``:
  read through the Kafka protocol (``kafka.*`` options go to the client,
  e.g. ``kafka.sasl.plain.password``), so the job can run anywhere;
- ``eventHubs``: comma-separated hub names (required);
- ``startingPosition``: ``earliest`` (default), ``latest``, or a time in ms
  since the epoch: the first event enqueued then or later (Capture enabled at
  that time starts there); only a new checkpoint reads it;
- capture windows, when ``windowSeconds`` is set: ``sizeLimitBytes``,
  ``skipEmpty``, ``graceSeconds`` (default 2: how long after a window's end
  its events may still be in flight in the broker), ``closeOpenWindows``
  (``--once``: also close the windows still open). Each micro-batch then ends
  at closed capture files (capture.windows), every row says in
  ``capture_file`` (the file's name time, ms) which file it belongs to, and an
  empty file is one row whose ``sequence_number`` is null.

With ``rows`` = ``plans`` a row is the plan of one partition's micro-batch
instead (``namespace, event_hub, partition, start, end, start_pos, files``,
the planned files as JSON: PLAN_SCHEMA), and no event is read here: the
capture job's choice, whose sink reads the log range and writes the files, so
no event crosses into the JVM and back.

Offsets are per partition, keyed ``"<hub>/<partition>"``: the next sequence
number and, with windows, the window state (capture.windows.WindowState).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from kafka_wire.capture.events import EventBatch, decode_batch
from kafka_wire.capture.windows import PlannedFile, WindowPolicy, WindowState, plan

from .backend import first_offset, open_backend

logger = logging.getLogger(__name__)

SOURCE_NAME = "eventhubs"
SCHEMA = (
    "namespace string, event_hub string, partition int, sequence_number long, offset long, "
    "enqueued_time_ms long, key binary, headers array<struct<key: string, value: binary>>, body binary, "
    "capture_file long"
)
HEADER = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
ARROW_SCHEMA = pa.schema(
    [
        ("namespace", pa.string()), ("event_hub", pa.string()), ("partition", pa.int32()),
        ("sequence_number", pa.int64()), ("offset", pa.int64()), ("enqueued_time_ms", pa.int64()),
        ("key", pa.binary()), ("headers", HEADER), ("body", pa.binary()), ("capture_file", pa.int64()),
    ]
)
ROWS_PER_CHUNK = 8192
PLAN_SCHEMA = "namespace string, event_hub string, partition int, start long, end long, start_pos long, files string"
PLAN_ARROW_SCHEMA = pa.schema(
    [
        ("namespace", pa.string()), ("event_hub", pa.string()), ("partition", pa.int32()), ("start", pa.int64()),
        ("end", pa.int64()), ("start_pos", pa.int64()), ("files", pa.string()),
    ]
)


def _flag(options, name: str, default: bool = False) -> bool:
    value = options.get(name)
    return default if value is None else str(value).strip().lower() in ("1", "true", "yes", "on")


def lower_keys(options) -> dict:
    """Spark hands options over case-insensitively (as lower case): we look them up that way."""
    return {str(k).lower(): v for k, v in options.items()}


def plan_rows(options) -> bool:
    rows = (options.get("rows") or "events").lower()
    if rows not in ("events", "plans"):
        raise ValueError(f"option rows={rows!r}: use events or plans")
    return rows == "plans"


def window_policy(options) -> WindowPolicy | None:
    seconds = options.get("windowseconds")
    if seconds is None:
        return None
    return WindowPolicy(
        interval_ms=int(float(seconds) * 1000),
        size_limit_bytes=int(options.get("sizelimitbytes") or WindowPolicy.size_limit_bytes),
        skip_empty=_flag(options, "skipempty"),
    )


class EventHubsSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return PLAN_SCHEMA if plan_rows(lower_keys(self.options)) else SCHEMA

    def streamReader(self, schema) -> DataSourceStreamReader:
        return EventHubsStreamReader(lower_keys(self.options))


class EventHubsStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: dict):
        self.options = options
        hubs = [h.strip() for h in (options.get("eventhubs") or "").split(",")]
        self.hubs = [h for h in hubs if h]
        if not self.hubs:
            raise ValueError("the eventhubs source needs option eventHubs (comma-separated event hub names)")
        self.namespace = options.get("namespace") or "emulatorNs1"
        self.policy = window_policy(options)
        self.grace_ms = int(float(options.get("graceseconds") or 2) * 1000)
        self.close_open = _flag(options, "closeopenwindows")
        self.plan_rows = plan_rows(options)
        self._backend = None  # driver side; executors open their own in read()
        self._target: dict[str, int] | None = None  # Trigger.AvailableNow: where to stop
        self._target_now = 0

    @property
    def backend(self):
        if self._backend is None:
            self._backend = open_backend(self.options)
        return self._backend

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_backend"] = None  # file handles and sockets stay on the driver
        return state

    # -- driver: offsets and planning ---------------------------------------------------

    def _keys(self) -> list[tuple[str, int]]:
        return [(hub, p) for hub in self.hubs for p in range(self.backend.partition_count(hub))]

    def initialOffset(self) -> dict:
        position = (self.options.get("startingposition") or "earliest").lower()
        out = {}
        for hub, p in self._keys():
            start = self.backend.log_start(hub, p)
            if position != "earliest":
                refs, end = self.backend.refs(hub, p, start)
                if position != "latest":  # enqueued at or after a time: batches share one append time
                    since = int(position)
                    end = next((r.base_offset for r in refs if r.append_time_ms >= since), end)
                start = max(start, end)
            out[f"{hub}/{p}"] = self._with_pos(hub, p, WindowState(start))
        return out

    def _with_pos(self, hub: str, p: int, state: WindowState) -> dict:
        """The offsets entry: the window state, and the byte position of its
        next offset where the backend cannot see positions (Kafka)."""
        out = state.to_json()
        if self.backend.needs_positions:
            out["pos"] = self.backend.position_of(hub, p, state.next_offset)
        return out

    def prepareForTriggerAvailableNow(self) -> None:
        """``--once``: capture up to the end of each partition as it is now,
        closing windows by the clock as it is now, so the query converges."""
        ends = self.backend.end_offsets(self._keys())
        self._target = {f"{hub}/{p}": end for (hub, p), end in ends.items()}
        self._target_now = int(time.time() * 1000)

    def latestOffset(self, start: dict | None = None, limit=None) -> dict:
        # Spark < 4.2 calls latestOffset() without a start: then plan from the last end we gave.
        if start is None:
            start = getattr(self, "_last_end", None) or self.initialOffset()
        now = self._target_now if self._target is not None else int(time.time() * 1000)
        end = {}
        for hub, p in self._keys():
            key = f"{hub}/{p}"
            entry = start.get(key) or {"next": 0}
            state = WindowState.from_json(entry)
            stop = None
            if self._target is not None:
                stop = max(self._target.get(key, state.next_offset), state.next_offset)
            refs, stable_end = self.backend.refs(hub, p, state.next_offset, stop, start_pos=entry.get("pos"))
            if self.policy is None:
                end[key] = self._with_pos(hub, p, WindowState(stable_end))
                continue
            close_before = self.policy.window_of(now - self.grace_ms)
            _, new = plan(state, refs, stable_end, self.policy, close_before=close_before, close_file=self.close_open)
            end[key] = self._with_pos(hub, p, new)
        for key, value in start.items():
            end.setdefault(key, value)  # a hub deleted meanwhile keeps its position
        self._last_end = end
        return end

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        parts = []
        for key, value in sorted(end.items()):
            hub, _, p = key.rpartition("/")
            entry = start.get(key) or {"next": 0}
            s, e, pos = WindowState.from_json(entry), WindowState.from_json(value), entry.get("pos")
            if self.policy is None:
                if e.next_offset > s.next_offset:
                    parts.append(InputPartition((hub, int(p), s.next_offset, e.next_offset, pos, None)))
                continue
            files = self.replan(hub, int(p), s, e, pos)
            if files:
                parts.append(InputPartition((hub, int(p), s.next_offset, e.next_offset, pos, [tuple(f) for f in files])))
        return parts

    def replan(self, hub: str, partition: int, start: WindowState, end: WindowState,
               start_pos: int | None = None) -> list[PlannedFile]:
        """The files of a micro-batch, from its recorded start and end alone
        (so a batch Spark replays after a restart writes the same files)."""
        refs, _ = self.backend.refs(hub, partition, start.next_offset, end.next_offset, start_pos=start_pos)
        files, state = plan(start, refs, end.next_offset, self.policy, close_before=end.window_start, close_file=True)
        if state != end:
            logger.warning(
                "%s/%d: the log changed since offsets %s..%s were planned (retention or compaction?); "
                "writing what it holds now", hub, partition, start, end,
            )
        return files

    def commit(self, end: dict) -> None:
        pass  # nothing to release: the log is read, never consumed

    def stop(self) -> None:
        if self._backend is not None:
            self._backend.close()
            self._backend = None

    # -- executors: rows ----------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        hub, p, start, end, start_pos, files = partition.value
        if self.plan_rows:
            if files is None:
                raise ValueError("option rows=plans needs capture windows (option windowSeconds)")
            values = [self.namespace, hub, p, start, end, start_pos, json.dumps(files)]
            yield pa.RecordBatch.from_arrays([pa.array([v], f.type) for v, f in zip(values, PLAN_ARROW_SCHEMA)],
                                             schema=PLAN_ARROW_SCHEMA)
            return
        backend = open_backend(self.options)
        try:
            first = first_offset(backend, hub, p, start)
            batches = Peekable(backend.read(hub, p, start, end, start_pos))
            if files is None:
                yield from self._chunks(hub, p, batches, None, end, first)
                return
            for f in map(PlannedFile._make, files):
                if f.empty:
                    yield self._marker(hub, p, f.name_ms)
                else:
                    yield from self._chunks(hub, p, batches, f.name_ms, f.end_offset, first)
        finally:
            backend.close()

    def _chunks(self, hub: str, p: int, batches, capture_file: int | None, end: int,
                first: int) -> Iterator[pa.RecordBatch]:
        """Decode the batches below ``end``, events from ``first`` on; the first
        batch at or past ``end`` stays for the next file."""
        events = EventBatch()
        while (b := batches.peek()) is not None and b.base_offset < end:
            next(batches)
            decode_batch(b.data, b.position, b.append_time_ms, events, first)
            if len(events) >= ROWS_PER_CHUNK:
                yield self._rows(hub, p, events, capture_file)
                events = EventBatch()
        if len(events):
            yield self._rows(hub, p, events, capture_file)

    def _rows(self, hub: str, p: int, events: EventBatch, capture_file: int | None) -> pa.RecordBatch:
        n = len(events)
        headers = [[{"key": k, "value": v} for k, v in h] for h in events.headers]
        return pa.RecordBatch.from_arrays(
            [
                pa.array([self.namespace] * n, pa.string()),
                pa.array([hub] * n, pa.string()),
                pa.array([p] * n, pa.int32()),
                pa.array(events.sequence_numbers, pa.int64()),
                pa.array(events.offsets, pa.int64()),
                pa.array(events.enqueued_ms, pa.int64()),
                pa.array(events.keys, pa.binary()),
                pa.array(headers, HEADER),
                pa.array(events.bodies, pa.binary()),
                pa.array([capture_file] * n, pa.int64()),
            ],
            schema=ARROW_SCHEMA,
        )

    def _marker(self, hub: str, p: int, capture_file: int) -> pa.RecordBatch:
        """The row standing for an empty capture file."""
        values = [[self.namespace], [hub], [p], [None], [None], [None], [None], [None], [None], [capture_file]]
        return pa.RecordBatch.from_arrays(
            [pa.array(v, f.type) for v, f in zip(values, ARROW_SCHEMA)], schema=ARROW_SCHEMA
        )


class Peekable:
    """An iterator that can show its next item without consuming it."""

    _END = object()

    def __init__(self, it):
        self._it = iter(it)
        self._next = self._END

    def peek(self):
        if self._next is self._END:
            self._next = next(self._it, None)
        return self._next

    def __iter__(self):
        return self

    def __next__(self):
        item = self.peek()
        self._next = self._END
        if item is None:
            raise StopIteration
        return item
