"""An event as the log keeps it, whichever front end sent it (AMQP, HTTPS, the
console), and the RecordBatch that stores a publication's events.

Event Hubs' data model: a body, application properties whose values are
AMQP-typed (kept as their AMQP encoding, which is what Kafka consumers of the
service see as header values), an optional partition key, and for events sent
over AMQP what a Kafka record has no place for (one reserved header). The AMQP
front end (:mod:`kafka_wire.amqp.messages`) decodes messages into these and
encodes deliveries from the log; the door appends them
(:mod:`kafka_wire.eventhubs.publication`).
"""
from __future__ import annotations

import struct
from typing import Iterable, NamedTuple

from proton import Data

from kafka_wire.log import batch as rb
from kafka_wire.log.records import SMALL_VARINTS, SMALL_VARINTS_END, compress, encode_record, encode_varint

__all__ = ["Incoming", "PlainEvents", "encode_value", "with_publisher", "records_batch",
           "PROPERTIES_HEADER"]

# What a record has no place for (an AMQP message's header, annotations, properties
# section, footer, body shape) is stored whole as a header of this name in batches
# written by the Event Hubs front ends, and given back to AMQP receivers. It is always
# the record's last header: an application property may have the same name (it is a
# header before it, and the reserved one is then written even when it holds nothing).
PROPERTIES_HEADER = rb.AMQP_PROPERTIES_HEADER.encode()


class Incoming(NamedTuple):
    """What the log keeps of one sent message."""
    partition_key: str | None
    properties: list[tuple[bytes, bytes]]   # (UTF-8 name, AMQP-encoded value)
    body: bytes | None
    data_sections: list[bytes]              # for the batch format: the inner messages
    # What a Kafka record has no place for (header, delivery and message annotations,
    # the properties section, footer, a body other than one data section), as
    # :func:`kafka_wire.amqp.messages.amqp_only` encodes it for the reserved header; None
    # when there is none.
    amqp_only: bytes | None = None


class PlainEvents:
    """Events that are each a body and nothing else but a partition key, the same for
    all: what nearly every AMQP batch holds, read without an :class:`Incoming` each
    (:func:`kafka_wire.amqp.messages.plain_batch`). Stored as those would be."""
    __slots__ = ("key", "bodies", "size")

    def __init__(self, key: str | None, bodies: list, size: int | None = None) -> None:
        self.key = key
        self.bodies = bodies  # bytes-like, views of the transfer until the batch is built
        self.size = size      # every body's size, when they are all one size

    def __len__(self) -> int:
        return len(self.bodies)

    def keys(self) -> list[str | None]:
        return [self.key] * len(self.bodies)


def encode_value(obj) -> bytes:
    """A Python value (str, int, float, bool, None) as its AMQP encoding, for an
    application property made outside AMQP (a REST send's user properties)."""
    data = Data()
    data.put_object(obj)
    return bytes(data.encode())


def with_publisher(kept: bytes | None, publisher: str) -> bytes:
    """The reserved header of an event sent through ``publisher``: the event's own
    (``kept``, as :func:`kafka_wire.amqp.messages.amqp_only` writes it; None: it has
    none) with the ``x-opt-publisher`` message annotation the service stamps, beside
    the sender's own annotations (in their section, else in one of its own after the
    others), so receivers get it. Without ``kept``: an empty properties section
    (readers of older records take the first section for it), then the annotation."""
    name = publisher.encode("utf-8")
    entry = _SYM_PUBLISHER + ((b"\xa1" + bytes((len(name),)) if len(name) < 256
                               else b"\xb1" + _UINT32.pack(len(name))) + name)
    if kept is None:
        return _NO_PROPERTIES + _ANNOTATIONS + _UINT32.pack(len(entry) + 4) + _UINT32.pack(2) + entry
    pos, end = 0, len(kept)
    while pos < end:  # each section: a described value (a section code, or the body's mark)
        value = pos + 3 if kept[pos + 1] == 0x53 else pos + 3 + kept[pos + 2]
        after = _after(kept, value)
        if kept.startswith(_ANNOTATIONS, pos):  # (the sender's: x-opt-publisher is never among them)
            size, count = _UINT32.unpack_from(kept, value + 1)[0], _UINT32.unpack_from(kept, value + 5)[0]
            return b"".join((kept[:value + 1], _UINT32.pack(size + len(entry)), _UINT32.pack(count + 2),
                             kept[value + 9:after], entry, kept[after:]))
        pos = after
    return kept + _ANNOTATIONS + _UINT32.pack(len(entry) + 4) + _UINT32.pack(2) + entry  # (any order)


def _after(kept: bytes, value: int) -> int:
    """The end of the value at ``value`` in a reserved header: each is a list, map,
    symbol or binary (or an empty list or null), sized by its constructor."""
    code = kept[value]
    if code in (0x40, 0x45):
        return value + 1
    if code & 0xF0 in (0xA0, 0xC0, 0xE0):
        return value + 2 + kept[value + 1]
    if code & 0xF0 in (0xB0, 0xD0, 0xF0):
        return value + 5 + _UINT32.unpack_from(kept, value + 1)[0]
    raise ValueError(f"constructor 0x{code:02x} in the reserved header at {value}")


_SYM_PUBLISHER = b"\xa3\x0fx-opt-publisher"
_NO_PROPERTIES = b"\x00\x53\x73\x45"  # an empty properties section (list0)
_ANNOTATIONS = b"\x00\x53\x72\xd1"  # message annotations as amqp_only writes them: a map32


def records_batch(messages: Iterable[Incoming] | PlainEvents, now_ms: int, codec: int = 0,
                  log_append_time: bool = False) -> bytearray:
    """One RecordBatch v2 holding ``messages`` (offsets from 0, the log assigns
    the base), timestamped ``now_ms``, flagged as holding AMQP-encoded headers.
    ``log_append_time``: stamped as the log stamps a LogAppendTime hub's batches
    appended at ``now_ms``, so its CRC is computed once, here, not again there."""
    attributes = codec | rb.AMQP_HEADERS_BIT | (rb.TIMESTAMP_TYPE_BIT if log_append_time else 0)
    if isinstance(messages, PlainEvents):
        return _batch(_plain_records(messages), len(messages), now_ms, attributes)
    records: list = []
    count = 0
    varint = encode_varint
    for i, m in enumerate(messages):
        key = m.partition_key.encode("utf-8") if m.partition_key is not None else None
        headers = m.properties
        value = m.body
        if m.amqp_only is None and not headers and value is not None:
            # Most events: a body and nothing else. The record's parts go straight into
            # the batch's one join (encode_record's bytes, without its copies of the body).
            head = b"".join((b"\x00\x00", varint(i), b"\x01" if key is None else varint(len(key)),
                             key or b"", varint(len(value))))
            records += (varint(len(head) + len(value) + 1), head, value, b"\x00")
        else:
            if m.amqp_only is not None:
                headers = [*headers, (PROPERTIES_HEADER, m.amqp_only)]
            else:
                for name, _v in headers:  # (a loop, not any(): a third of the cost)
                    if name == PROPERTIES_HEADER:
                        # An application property of the reserved name: readers take only the
                        # last header for the reserved one, so one (saying nothing) goes after it.
                        headers = [*headers, (PROPERTIES_HEADER, _NO_PROPERTIES)]
                        break
            records.append(encode_record(i, 0, key, value, headers))
        count = i + 1
    return _batch(records, count, now_ms, attributes)


def _plain_records(events: PlainEvents) -> list:
    """The records of ``events`` as parts to join: what the loop of
    :func:`records_batch` writes for a body without headers."""
    key = events.key
    if key is None:
        tail_key = b"\x01"  # a null key's length, -1
    else:
        encoded = key.encode("utf-8")
        tail_key = encode_varint(len(encoded)) + encoded
    if events.size is not None:
        return _alike_records(events.bodies, events.size, tail_key)
    bodies = events.bodies
    count = len(bodies)
    sizes = list(map(len, bodies))
    top = max(sizes)
    if top < _SIZED_TOP and count < _WIDE_OFFSETS:
        return _sized_records(bodies, sizes, top, tail_key)
    # Varints from the log's table of small ones, without a call each (a quarter of a
    # microsecond an event, half this loop's time).
    varint, small = encode_varint, SMALL_VARINTS
    offsets = small[1:len(bodies) + 1] if len(bodies) < len(small) - 1 else map(varint, range(len(bodies)))
    fixed = 3 + len(tail_key)  # attributes, timestamp delta and headers count; the key
    parts: list = []
    extend = parts.extend
    for offset, value in zip(offsets, bodies):
        n = len(value)
        size = small[n + 1] if n < SMALL_VARINTS_END else varint(n)
        length = fixed + len(offset) + len(size) + n
        # (the record before's end: no headers), length, attributes, timestamp delta
        extend((b"\x00" + (small[length + 1] if length < SMALL_VARINTS_END else varint(length)) + b"\x00\x00",
                offset, tail_key, size, value))
    if parts:
        parts[0] = parts[0][1:]  # (the first record has no record before it to end)
        parts.append(b"\x00")
    return parts


def _sized_records(bodies: list, sizes: list[int], top: int, tail_key: bytes) -> list:
    """:func:`_plain_records` of bodies of sizes ``sizes`` (none ``top`` or more, each
    under the table of small varints), as four parts a record, each looked up in a
    table, without a Python step per record (sizes differ from event to event in most
    applications' batches: this was 0.22 us an event as a loop, 0.09 us so)."""
    count = len(bodies)
    heads: list = []
    for first, end, width in _OFFSET_WIDTHS:  # the offset delta's varint: 1, 2 or 3 bytes
        if first >= count:
            break
        heads += map(_heads(3 + width + len(tail_key), top).__getitem__, sizes[first:end])
    parts = [b""] * (4 * count + 1)
    parts[0:-1:4] = heads
    parts[1:-1:4] = _offsets(tail_key, count)
    parts[2:-1:4] = map(_SIZE_VARINTS.__getitem__, sizes)
    parts[3:-1:4] = bodies
    parts[0] = parts[0][1:]  # (the first record has no record before it to end)
    parts[-1] = b"\x00"
    return parts


def _heads(fixed: int, top: int) -> list[bytes]:
    """By body size, up to ``top``: a record's bytes before its offset delta (the record
    before's end, no headers; length, attributes, timestamp delta) when its other
    fields but the body and its size take ``fixed`` bytes. Kept, and grown as larger
    bodies come (a new list each time: brokers in threads share them)."""
    table = _HEADS_BY_FIXED.get(fixed, ())
    if len(table) <= top:
        small = SMALL_VARINTS
        table = [*table, *(b"\x00" + encode_varint(fixed + len(small[n + 1]) + n) + b"\x00\x00"
                           for n in range(len(table), top + 1))]
        if len(_HEADS_BY_FIXED) >= _HEADS_KEPT and fixed not in _HEADS_BY_FIXED:
            _HEADS_BY_FIXED.clear()
        _HEADS_BY_FIXED[fixed] = table
    return table


def _offsets(tail_key: bytes, count: int) -> list[bytes]:
    """The first ``count`` records' offset deltas, each followed by ``tail_key`` (its
    key's length and key), kept for a few keys (a new list when longer: see _heads)."""
    kept = _OFFSETS.get(tail_key, ())
    if len(kept) >= count:
        return kept[:count]
    more = [offset + tail_key for offset in SMALL_VARINTS[len(kept) + 1:count + 1]]
    if count <= _HEADS_LONGEST:
        if len(_OFFSETS) >= _HEADS_KEPT and tail_key not in _OFFSETS:
            _OFFSETS.clear()
        _OFFSETS[tail_key] = [*kept, *more]
    return [*kept, *more]


_SIZE_VARINTS = SMALL_VARINTS[1:]  # by a body's size, its varint
# Bodies this large or larger go through the loop (a table by size is kept for each of a
# few record layouts: at most _HEADS_KEPT of 8,192 heads, 3 MB; their records' per-event
# work is small beside their bytes).
_SIZED_TOP = 8192
_WIDE_OFFSETS = SMALL_VARINTS_END  # (offset deltas from this on are not in the table)
_OFFSET_WIDTHS = ((0, 64, 1), (64, 8192, 2), (8192, _WIDE_OFFSETS, 3))
_HEADS_BY_FIXED: dict[int, list[bytes]] = {}
_OFFSETS: dict[bytes, list[bytes]] = {}


def _alike_records(bodies: list, size: int, tail_key: bytes) -> list:
    """:func:`_plain_records` of bodies all ``size`` bytes long: each record's bytes
    before its body depend only on its offset delta, and are kept from batch to batch
    for a few sizes and keys (load tests and fixed schemas send one size)."""
    count = len(bodies)
    heads = _HEADS.get((size, tail_key), ())
    if len(heads) < count:
        # (a new list, never changed once kept: brokers in threads share these)
        tail = tail_key + encode_varint(size)
        more = []
        for i in range(len(heads), count):
            offset = encode_varint(i)
            # the record before's end (no headers), then length, attributes, timestamp delta
            more.append(b"\x00" + encode_varint(3 + len(offset) + len(tail) + size) + b"\x00\x00" + offset + tail)
        heads = [*heads, *more]
        if len(_HEADS) >= _HEADS_KEPT and (size, tail_key) not in _HEADS:
            _HEADS.clear()
        _HEADS[(size, tail_key)] = heads[:_HEADS_LONGEST]
    parts = [b""] * (2 * count + 1)
    parts[0:2 * count:2] = heads[:count]
    parts[1:2 * count:2] = bodies
    parts[0] = parts[0][1:]  # (the first record has no record before it to end)
    parts[-1] = b"\x00"
    return parts


_HEADS: dict[tuple[int, bytes], list[bytes]] = {}  # (body size, key's part) -> records' heads
_HEADS_KEPT = 8  # (each a list as long as the largest batch of its size, up to:)
_HEADS_LONGEST = 4096  # (a megabyte of tiny events has tens of thousands: made again each time)


def _batch(records: list, count: int, now_ms: int, attributes: int) -> bytearray:
    """The RecordBatch around ``records`` (parts to join), ``count`` of them."""
    codec = attributes & rb.COMPRESSION_MASK
    if codec:
        return rb.encode_batch(
            base_offset=0, partition_leader_epoch=0, attributes=attributes,
            last_offset_delta=count - 1, base_timestamp=now_ms, max_timestamp=now_ms,
            producer_id=rb.NO_PRODUCER_ID, producer_epoch=-1, base_sequence=rb.NO_SEQUENCE,
            records_count=count, records=compress(codec, b"".join(records)))
    # rb.encode_batch's bytes, with the records joined once straight into the batch
    # (a megabyte of events was joined, then zero-filled and copied into the batch).
    buf = _EMPTY.join([_HEADER_ROOM, *records])
    rb.HEADER.pack_into(buf, 0, 0, len(buf) - rb.LOG_OVERHEAD, 0, 2, 0, attributes,
                        count - 1, now_ms, now_ms, rb.NO_PRODUCER_ID, -1, rb.NO_SEQUENCE, count)
    _UINT32.pack_into(buf, rb.CRC_OFFSET, rb.batch_crc(buf, 0, len(buf)))
    return buf


_EMPTY = bytearray()
_HEADER_ROOM = bytes(rb.HEADER_SIZE)
_UINT32 = struct.Struct(">I")
