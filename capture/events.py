"""Record batches from the log, decoded into Event Hubs events.

The mapping of a Kafka record onto an Event Hubs event:

- Kafka offset -> ``SequenceNumber`` (and ``x-opt-sequence-number``, long);
- the event's Event Hubs offset (its batch's byte position scaled, plus its
  place in the batch: ``kafka_wire.log.batch.event_offset``) -> ``Offset`` (and
  ``x-opt-offset``), a decimal string, as AMQP receivers and checkpoints see it;
- the broker's append time of the batch -> ``EnqueuedTimeUtc`` (formatted as
  real capture files show it, ``M/d/yyyy h:mm:ss AM|PM``, UTC) and
  ``x-opt-enqueued-time`` (long, ms since the epoch);
- Kafka headers -> ``Properties``, values as bytes (Kafka header values are
  raw bytes; a null header value stays null; a repeated header name keeps its
  last value, as a map must); events an AMQP client sent (their batch carries
  ``AMQP_HEADERS_BIT``) have typed properties, decoded from AMQP;
- Kafka key -> ``x-opt-partition-key`` when it is valid UTF-8. Event Hubs
  historically did not do this, but without it the key of
  a Kafka event would appear nowhere in the archive; ``partition_key=False``
  restores the historical behaviour;
- value -> ``Body`` (null for a tombstone).

Decoding is ``kafka_wire.log.records.read_event_columns`` (the log's own codecs:
gzip, snappy raw or in Kafka's xerial framing, lz4, zstd). A batch that cannot be
read (``UnreadableBatch``) is left out, logged and counted; Capture goes on past it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from typing import Iterator
from uuid import UUID

import pyarrow as pa
from proton import Data

from kafka_wire.log.batch import AMQP_HEADERS_BIT, AMQP_PROPERTIES_HEADER, EVENTS_PER_POSITION, parse_header
from kafka_wire.log.errors import CorruptRecord
from kafka_wire.log.records import read_event_columns

from .schema import ARROW_SCHEMA, PROPERTY_MAP, UNION_VALUE, union_member

logger = logging.getLogger(__name__)

SEQUENCE_NUMBER = "x-opt-sequence-number"
OFFSET = "x-opt-offset"
ENQUEUED_TIME = "x-opt-enqueued-time"
PARTITION_KEY = "x-opt-partition-key"


@dataclass
class EventBatch:
    """Events of one partition in columns (plain Python lists), in order."""

    sequence_numbers: list[int] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)  # byte positions
    enqueued_ms: list[int] = field(default_factory=list)
    keys: list[bytes | None] = field(default_factory=list)
    headers: list[list[tuple[str, bytes | None]]] = field(default_factory=list)
    bodies: list[bytes | None] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.sequence_numbers)

    def clear(self) -> None:
        for column in self.columns():
            column.clear()

    def columns(self) -> tuple[list, ...]:
        return self.sequence_numbers, self.offsets, self.enqueued_ms, self.keys, self.headers, self.bodies


@dataclass(frozen=True)
class UnreadableBatch:
    """A stored batch whose records cannot be read (they do not decompress, a
    decompression bomb past log.records.decompressed_limit, or they do not parse):
    Capture leaves its events out and goes on. Produce refuses such a batch since
    it checks compressed ones; an older broker stored some."""

    first_sequence_number: int
    last_sequence_number: int
    reason: str


def decode_batch(data: bytes, position: int, append_time_ms: int, out: EventBatch | None = None,
                 first_offset: int = 0, unreadable: list[UnreadableBatch] | None = None) -> EventBatch:
    """Append the records of one stored RecordBatch v2 to ``out`` (a new
    EventBatch if None), those at or past ``first_offset`` only: a read
    starting inside a batch (DeleteRecords moves the log start to any offset;
    a range may start anywhere) is served the whole stored batch, whose
    records below that start are not the reader's. Control batches hold no
    events and add nothing. A batch whose records cannot be read adds nothing
    either: it is logged and entered in ``unreadable`` (a codec library that is
    missing still raises UnsupportedCodec: those events can be read)."""
    out = EventBatch() if out is None else out
    header = parse_header(data, 0)
    if header.is_control:
        return out
    seqs, offs, times, keys, hdrs, bodies = out.columns()
    start = len(keys)
    deltas: list[int] = []
    try:
        read_event_columns(data, header, deltas, keys, hdrs, bodies)
    except CorruptRecord as exc:
        del keys[start:], hdrs[start:], bodies[start:]  # (what was read before the fault)
        logger.warning("capture leaves out sequence numbers %d..%d: their batch cannot be read: %s",
                       header.base_offset, header.last_offset, exc)
        if unreadable is not None:
            unreadable.append(UnreadableBatch(header.base_offset, header.last_offset, str(exc)))
        return out
    base = header.base_offset
    if base < first_offset:
        _drop_below(first_offset - base, deltas, keys, hdrs, bodies, start)
    seqs.extend([base + d for d in deltas])
    first = position * EVENTS_PER_POSITION
    last = EVENTS_PER_POSITION - 1
    offs.extend([first + (d if d < last else last) for d in deltas])  # log.batch.event_offset, inlined
    times.extend([append_time_ms] * len(deltas))
    if header.attributes & AMQP_HEADERS_BIT:  # typed properties, AMQP-encoded
        for i in range(start, len(hdrs)):
            h = hdrs[i]
            if h:
                if h[-1][0] == AMQP_PROPERTIES_HEADER:  # (the front ends' own: always the last;
                    h = h[:-1]                          # an application's of that name is before it)
                hdrs[i] = [(n, amqp_property(v)) for n, v in h]
    return out


def _drop_below(delta: int, deltas: list[int], keys: list, hdrs: list, bodies: list, start: int) -> None:
    """Remove the records of offset delta below ``delta`` (those appended to
    the columns from ``start``)."""
    keep = [i for i, d in enumerate(deltas) if d >= delta]
    if len(keep) == len(deltas):
        return
    deltas[:] = [deltas[i] for i in keep]
    for column in (keys, hdrs, bodies):
        column[start:] = [column[start + i] for i in keep]


def amqp_property(raw: bytes | None):
    """An application property an AMQP client sent (stored AMQP-encoded) as the value
    Capture's union holds: long (integers, booleans, timestamps in ms), double,
    string (also uuids and symbols), bytes (binary, and any other type as its
    AMQP encoding)."""
    if raw is None:
        return None
    data = Data()
    try:
        data.decode(raw)
        data.rewind()
        data.next()
        value = data.get_object()
    except Exception:
        return bytes(raw)
    if value is None or isinstance(value, (bool, int, float, str)):
        return int(value) if isinstance(value, bool) else value
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, (bytes, memoryview, bytearray)):
        return bytes(value)
    return bytes(raw)


@lru_cache(maxsize=4096)
def format_enqueued_time(ms: int) -> str:
    """``EnqueuedTimeUtc`` as capture files show it: ``2/6/2023 6:29:45 PM``."""
    t = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    hour = t.hour % 12 or 12
    return f"{t.month}/{t.day}/{t.year} {hour}:{t.minute:02d}:{t.second:02d} {'PM' if t.hour >= 12 else 'AM'}"


def iso_time(ms: int) -> str:
    """ISO-8601 UTC with milliseconds, as Event Grid payloads carry times."""
    t = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def _partition_key(key: bytes | None) -> str | None:
    if key is None:
        return None
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError:
        return None  # not a string: Event Hubs partition keys are strings


def avro_records(events: EventBatch, *, partition_key: bool = True) -> Iterator[dict]:
    """The events as Capture Avro records (capture.schema.AVRO_SCHEMA)."""
    for seq, off, ms, key, hdrs, body in zip(*events.columns()):
        offset = str(off)
        sysprops = {SEQUENCE_NUMBER: seq, OFFSET: offset, ENQUEUED_TIME: ms}
        if partition_key and key is not None:
            text = _partition_key(key)
            if text is not None:
                sysprops[PARTITION_KEY] = text
        yield {
            "SequenceNumber": seq,
            "Offset": offset,
            "EnqueuedTimeUtc": format_enqueued_time(ms),
            "SystemProperties": sysprops,
            "Properties": dict(hdrs) if hdrs else {},
            "Body": body,
        }


def arrow_table(events: EventBatch, *, partition_key: bool = True) -> pa.Table:
    """The events as a table of capture.schema.ARROW_SCHEMA (Parquet), built a
    column at a time: the maps' keys and union members go into flat lists
    (strided slice assignment where every event has the same entries), not a
    dict per value."""
    seqs, offs, times, keys, hdrs, bodies = events.columns()
    offsets = [str(o) for o in offs]
    pkeys = ([_partition_key(k) if k is not None else None for k in keys] if partition_key
             else [None] * len(seqs))
    columns = [
        pa.array(seqs, pa.int64()),
        pa.array(offsets, pa.string()),
        pa.array([format_enqueued_time(ms) for ms in times], pa.string()),
        _system_properties(seqs, offsets, times, pkeys),
        _properties(hdrs),
        pa.array(bodies, pa.binary()),
    ]
    return pa.Table.from_arrays(columns, schema=ARROW_SCHEMA)


def _system_properties(seqs, offsets, times, pkeys) -> pa.MapArray:
    n = len(seqs)
    with_key = sum(k is not None for k in pkeys)
    if with_key in (0, n):  # every event has the same entries: fill the columns by stride
        width = 4 if with_key else 3
        names = [SEQUENCE_NUMBER, OFFSET, ENQUEUED_TIME, PARTITION_KEY][:width] * n
        longs, strings = [None] * (width * n), [None] * (width * n)
        longs[0::width], strings[1::width], longs[2::width] = seqs, offsets, times
        if with_key:
            strings[3::width] = pkeys
        starts = list(range(0, width * n + 1, width))
    else:
        names, longs, strings, starts = [], [], [], [0]
        for seq, off, ms, pk in zip(seqs, offsets, times, pkeys):
            names += (SEQUENCE_NUMBER, OFFSET, ENQUEUED_TIME)
            longs += (seq, None, ms)
            strings += (None, off, None)
            if pk is not None:
                names.append(PARTITION_KEY)
                longs.append(None)
                strings.append(pk)
            starts.append(len(names))
    m = len(names)
    members = [pa.array(longs, pa.int64()), pa.nulls(m, pa.float64()), pa.array(strings, pa.string()),
               pa.nulls(m, pa.binary())]
    return _map(starts, names, pa.StructArray.from_arrays(members, fields=list(UNION_VALUE)))


def _properties(hdrs) -> pa.MapArray:
    """Headers as the Properties map: a repeated name keeps its last value at
    its first place, as a dict does; a null value is a null struct."""
    names, values, starts = [], [], [0]
    for h in hdrs:
        if h:
            if len({name for name, _ in h}) != len(h):
                h = list(dict(h).items())
            for name, value in h:
                names.append(name)
                values.append(value)
        starts.append(len(names))
    m = len(names)
    if all(v is None or type(v) is bytes for v in values):  # Kafka headers: bytes or null
        members = [pa.nulls(m, pa.int64()), pa.nulls(m, pa.float64()), pa.nulls(m, pa.string()),
                   pa.array(values, pa.binary())]
    else:  # an AMQP client's typed properties
        unions = [union_member(v) or {} for v in values]
        members = [pa.array([u.get(f.name) for u in unions], f.type) for f in UNION_VALUE]
    mask = pa.array([v is None for v in values], pa.bool_())
    items = pa.StructArray.from_arrays(members, fields=list(UNION_VALUE), mask=mask)
    return _map(starts, names, items)


def _map(starts: list[int], names: list[str], items: pa.StructArray) -> pa.MapArray:
    return pa.MapArray.from_arrays(pa.array(starts, pa.int32()), pa.array(names, pa.string()), items,
                                   type=PROPERTY_MAP)
