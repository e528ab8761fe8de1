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

Decoding, decompression included (gzip, snappy raw or in Kafka's xerial
framing, lz4, zstd), is kafka-python's ``DefaultRecordBatch``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from typing import Iterator
from uuid import UUID

import pyarrow as pa
from kafka.record.default_records import DefaultRecordBatch
from proton import Data

from kafka_wire.log.batch import AMQP_HEADERS_BIT, AMQP_PROPERTIES_HEADER, event_offset, parse_header

from .schema import ARROW_SCHEMA, PROPERTY_MAP, union_member

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


def decode_batch(data: bytes, position: int, append_time_ms: int, out: EventBatch | None = None) -> EventBatch:
    """Append the records of one stored RecordBatch v2 to ``out`` (a new
    EventBatch if None). Control batches hold no events and add nothing."""
    out = EventBatch() if out is None else out
    data = bytes(data)
    batch = DefaultRecordBatch(data)
    if batch.is_control_batch:
        return out
    typed = bool(parse_header(data, 0).attributes & AMQP_HEADERS_BIT)
    seqs, offs, times, keys, hdrs, bodies = out.columns()
    base = batch.base_offset
    for record in batch:
        seqs.append(record.offset)
        offs.append(event_offset(position, record.offset - base))
        times.append(append_time_ms)
        keys.append(record.key)
        headers = record.headers
        hdrs.append([(n, amqp_property(v)) for n, v in headers if n != AMQP_PROPERTIES_HEADER]
                    if typed and headers else headers)
        bodies.append(record.value)
    return out


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
    """The events as a table of capture.schema.ARROW_SCHEMA (Parquet)."""
    sysprops = []
    props = []
    for seq, off, ms, key, hdrs in zip(
        events.sequence_numbers, events.offsets, events.enqueued_ms, events.keys, events.headers
    ):
        entry = [(SEQUENCE_NUMBER, {"member0": seq}), (OFFSET, {"member2": str(off)}), (ENQUEUED_TIME, {"member0": ms})]
        if partition_key and key is not None:
            text = _partition_key(key)
            if text is not None:
                entry.append((PARTITION_KEY, {"member2": text}))
        sysprops.append(entry)
        props.append([(k, union_member(v)) for k, v in dict(hdrs).items()] if hdrs else [])
    columns = [
        pa.array(events.sequence_numbers, pa.int64()),
        pa.array([str(o) for o in events.offsets], pa.string()),
        pa.array([format_enqueued_time(ms) for ms in events.enqueued_ms], pa.string()),
        pa.array(sysprops, PROPERTY_MAP),
        pa.array(props, PROPERTY_MAP),
        pa.array(events.bodies, pa.binary()),
    ]
    return pa.Table.from_arrays(columns, schema=ARROW_SCHEMA)
