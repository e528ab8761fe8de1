"""A stored batch's records as the encoded AMQP messages a receiver gets.

The receive path's hot loop. :func:`batch_events` gives, for the records of one
RecordBatch, exactly the bytes ``read_events`` then ``messages.encode_event``
give record by record (a property test holds it to that), in one pass: an
event with no headers, no key and no runtime metric (what the SDKs send) is
written from per-batch templates straight off the record's bytes, without a
tuple, a list or a call per record; any other record goes through
``encode_event``. An uncompressed batch is not copied first (its records are
read, and their values joined, from the log's own view).
"""
from __future__ import annotations

import struct
from collections import OrderedDict
from itertools import chain, repeat
from operator import itemgetter

from kafka_wire.amqp import messages
from kafka_wire.log import batch as rb
from kafka_wire.log.batch import BatchHeader, read_varint
from kafka_wire.log.errors import CorruptRecord
from kafka_wire.log.records import LENGTH_ENDS, encode_varint, misfit, records_bytes

__all__ = ["batch_events", "SharedEvents"]

_ANNOTATIONS_MAP32 = b"\x00\x53\x72\xd1"
_SEQ_LONG = b"\xa3\x15x-opt-sequence-number\x81"
_OFFSET_STR8 = b"\xa3\x0cx-opt-offset\xa1"
_TIME_STAMP = b"\xa3\x13x-opt-enqueued-time\x83"
# sequence number, the offset's str8 constructor and length (the text follows)
_SEQ_OFFSET = struct.Struct(">q15sB")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">I")
_II = struct.Struct(">II")
# the annotation map's entries, less the offset's text
_ENTRIES = len(_SEQ_LONG) + 8 + len(_OFFSET_STR8) + 1 + len(_TIME_STAMP) + 8
_DATA8 = [b"\x00\x53\x75\xa0" + bytes((n,)) for n in range(256)]
_DATA32 = b"\x00\x53\x75\xb0"
_LAST = rb.EVENTS_PER_POSITION - 1


def batch_events(data, header: BatchHeader, skip: int, position: int, append_ms: int,
                 amqp_headers: bool, metric: bytes, offsets=None) -> list[bytes]:
    """The messages of the records of the batch at the start of ``data`` whose
    offset delta is at least ``skip``, in order. ``position``: the batch's Event
    Hubs byte position; ``append_ms``: its append time; ``metric``: delivery
    annotations for every event (or b""); ``offsets``: a function giving an
    event's offset from its sequence number, where offsets are not the log's
    (geo-replication). Raises CorruptRecord if the records do not parse,
    UnsupportedCodec if the batch's codec is missing."""
    if header.compression:
        recs = records_bytes(data, header)
    else:
        recs = memoryview(data)[rb.HEADER_SIZE:header.size]
    base = header.base_offset
    position_base = position * rb.EVENTS_PER_POSITION
    tail = _TIME_STAMP + _I64.pack(append_ms)
    if not metric and offsets is None and 0 < header.records_count <= len(_ZZ):
        out = _uniform(recs, header.records_count, base, max(skip, 0), position_base, tail)
        if out is not None:
            return out
    heads: dict[int, bytes] = {}  # by the offset text's length: the map's constructor and size
    tails: dict[int, bytes] = {}
    out: list[bytes] = []
    add = out.append
    pack = _SEQ_OFFSET.pack
    encode = messages.encode_event
    plain = messages._plain_event
    varint, ends = read_varint, LENGTH_ENDS
    p = 0
    try:
        for _ in range(header.records_count):
            start = p
            # length (where the fields must end: log.records' rule, Kafka's), attributes
            b = recs[p]
            if b < 0x80:
                stop = p + ends[b]
                p += 2
            elif (z := recs[p + 1]) < 0x80:
                stop = p + ends[b] + (z << 6)
                p += 3
            else:
                n, p = varint(recs, p)
                stop, p = p + n, p + 1
            # timestamp delta: skipped (readers use the batch's time)
            p += 1 if recs[p] < 0x80 else (2 if recs[p + 1] < 0x80 else varint(recs, p)[1] - p)
            b = recs[p]
            if b < 0x80:
                delta, p = (b >> 1) ^ -(b & 1), p + 1
            elif recs[p + 1] < 0x80:
                z = (b & 0x7F) | (recs[p + 1] << 7)
                delta, p = (z >> 1) ^ -(z & 1), p + 2
            else:
                delta, p = varint(recs, p)
            b = recs[p]
            if b == 1:  # a null key (zigzag -1): the common case
                key, p = None, p + 1
            else:
                n, p = varint(recs, p)
                key, p = (None, p) if n < 0 else (bytes(recs[p:p + n]), p + n)
            b = recs[p]
            if b < 0x80:
                n, p = (b >> 1) ^ -(b & 1), p + 1
            elif recs[p + 1] < 0x80:
                z = (b & 0x7F) | (recs[p + 1] << 7)
                n, p = (z >> 1) ^ -(z & 1), p + 2
            else:
                n, p = varint(recs, p)
            if n < 0:
                value = None
            else:
                value, p = recs[p:p + n], p + n
            if recs[p] == 0:
                headers = None
                p += 1
            else:
                count, p = varint(recs, p)
                if count < 0:
                    raise IndexError(f"invalid number of record headers: {count}")
                headers = []
                for _ in range(count):
                    n, p = varint(recs, p)
                    if n < 0:  # (Kafka refuses it: read, it steps back, and can loop 2**31 times)
                        raise IndexError("a header name's length is negative")
                    name, p = str(recs[p:p + n], "utf-8", "replace"), p + n
                    n, p = varint(recs, p)
                    if n >= 0:
                        headers.append((name, bytes(recs[p:p + n])))
                        p += n
                    else:
                        headers.append((name, None))
            if p != stop:
                raise IndexError(misfit(recs, start, p))
            if delta < skip:
                continue
            sequence = base + delta
            offset = (position_base + (delta if delta < _LAST else _LAST) if offsets is None
                      else offsets(sequence))
            if headers or metric:
                add(encode(sequence, offset, append_ms, key, None if value is None else bytes(value),
                           headers or [], amqp_headers, metric))
            elif key is not None:
                add(plain(sequence, offset, append_ms, key, value))
            else:
                text = b"%d" % offset if offsets is None else str(offset).encode()  # (geo: text)
                size = len(text)
                head = heads.get(size)
                if head is None:
                    head = heads[size] = _ANNOTATIONS_MAP32 + _II.pack(_ENTRIES + size + 4, 6) + _SEQ_LONG
                if value is None:
                    add(b"".join((head, pack(sequence, _OFFSET_STR8, size), text, tail, _DATA8[0])))
                else:  # (n: the value's length, parsed above)
                    last = tails.get(n)  # the enqueued time and the data section's head, by size
                    if last is None:
                        last = tails[n] = tail + (_DATA8[n] if n < 256 else _DATA32 + _I32.pack(n))
                    add(b"".join((head, pack(sequence, _OFFSET_STR8, size), text, last, value)))
        if p != len(recs):  # (Kafka's iterator too: garbage after the last record is refused, not sent)
            raise IndexError("records run past the batch" if p > len(recs) else
                             "bytes are left after the last record")
    except (IndexError, UnicodeDecodeError) as exc:
        raise CorruptRecord(f"records of the batch at offset {header.base_offset} do not parse: {exc}") from None
    return out


# Zigzag varints of the offset deltas a uniform batch may have (see _uniform)
_ZZ = [encode_varint(n) for n in range(8192)]


def _uniform(recs, count: int, base: int, skip: int, position_base: int, tail: bytes) -> list[bytes] | None:
    """:func:`batch_events`'s messages, without a step per record, for a batch whose
    records are all alike but for their offset deltas (0, 1, ... in turn) and values,
    all of one length: no key, no headers, one timestamp delta (as the SDKs' sends are
    stored); None for any other batch. Where the records lie follows from the first
    one; every byte but the values' is checked against what that predicts (a column of
    the records at a time: a strided slice and one compare each, a dozen or so a batch,
    not an object per record), so the batch is read as the record-by-record loop reads
    it, or not here."""
    try:
        size, p = read_varint(recs, 0)
        if recs[p] != 0:  # attributes
            return None
        at = p + 1
        _, p = read_varint(recs, at)  # the timestamp delta: every record's
        stamp = bytes(recs[at:p])
        if recs[p] != 0 or recs[p + 1] != 1:  # offset delta 0, a null key
            return None
        n, p = read_varint(recs, p + 2)
    except IndexError:
        return None
    if n < 0:
        return None
    value_head = b"\x01" + encode_varint(n)  # the null key and the value's length
    fixed = 2 + len(stamp) + len(value_head) + n  # the record's length less the offset delta's
    # Each group of records whose offset deltas are one width long (1 byte: 0-63, 2: 64-8191)
    # is a row of records of one length: each byte of the records but the values' is checked
    # a column at a time (a strided slice, one compare), not record by record
    groups = []  # (where the group starts, its record's length, where the value starts, records)
    at = 0
    for width, low, high in ((1, 0, 64), (2, 64, 8192)):
        high = min(high, count)
        if low >= high:
            break
        length = encode_varint(fixed + width)
        step = len(length) + fixed + width
        m = high - low
        end = at + m * step
        if end > len(recs):
            return None
        into = len(length) + 1 + len(stamp) + width + len(value_head)  # where the value starts
        delta = len(length) + 1 + len(stamp)  # where the offset delta starts
        template = length + b"\x00" + stamp + bytes(width) + value_head
        for j in range(delta):
            if recs[at + j:end:step] != _BYTES[template[j]] * m:
                return None
        for j, column in enumerate(_ZZ_COLUMNS[width]):
            if recs[at + delta + j:end:step] != column[low - _ZZ_LOW[width]:high - _ZZ_LOW[width]]:
                return None
        for j in range(delta + width, into):
            if recs[at + j:end:step] != _BYTES[template[j]] * m:
                return None
        if recs[at + step - 1:end:step] != _BYTES[0] * m:  # the headers' count: none
            return None
        groups.append((at, step, into, m))
        at = end
    if at != len(recs):  # more bytes after the last record: the loop refuses them
        return None
    if skip >= count:
        return []
    # The values from ``skip`` on, as bytes, by a struct's iter_unpack over each group's
    # records (a slice object and a memoryview per value cost more than copying it)
    values = []
    low = 0
    view = memoryview(recs)  # (decompressed records are bytes: a group's slice not copied)
    for at, step, into, m in groups:
        s = max(skip - low, 0)
        if s < m:
            values.append(_struct(f"{into}x{n}s{step - into - n}x").iter_unpack(view[at + s * step:at + m * step]))
        low += m
    last = tail + (_DATA8[n] if n < 256 else _DATA32 + _I32.pack(n))
    return _messages(base, skip, count, position_base, last, n, map(_FIRST, chain.from_iterable(values)))


_STRUCTS: dict[str, struct.Struct] = {}
_FIRST = itemgetter(0)


def _struct(fmt: str) -> struct.Struct:
    """A kept Struct of ``fmt`` (the formats of a few value lengths and offset sizes)."""
    made = _STRUCTS.get(fmt)
    if made is None:
        if len(_STRUCTS) >= 256:
            _STRUCTS.clear()
        made = _STRUCTS[fmt] = struct.Struct(fmt)
    return made


_BYTES = [bytes((b,)) for b in range(256)]
# The offset deltas' zigzag varints as columns: byte j of each of those of one width, in turn
_ZZ_LOW = {1: 0, 2: 64}
_ZZ_COLUMNS = {1: [b"".join(_ZZ[0:64])], 2: [b"".join(_ZZ[64:8192])[j::2] for j in range(2)]}


# Offset deltas as the last six digits of an offset's text (EVENTS_PER_POSITION: 10**6)
_DIGITS6 = [b"%06d" % n for n in range(len(_ZZ))]


def _messages(base: int, skip: int, count: int, position_base: int, last: bytes, n: int, values) -> list[bytes]:
    """The messages of offset deltas ``skip`` to ``count`` (below 8,192): each the
    annotations with its sequence number and offset, ``last`` (the enqueued time, the data
    section's head) and its value from ``values`` (each ``n`` bytes)."""
    if position_base:  # every offset's text is the position's and six digits of the delta
        digits = b"%d" % (position_base // rb.EVENTS_PER_POSITION)
        size = len(digits) + 6
        head = _ANNOTATIONS_MAP32 + _II.pack(_ENTRIES + size + 4, 6) + _SEQ_LONG
        text = _OFFSET_STR8 + bytes((size,)) + digits
        # one pack a message, its value copied in once
        pack = _struct(f">{len(head)}sq{len(text)}s6s{len(last)}s{n}s").pack
        return list(map(pack, repeat(head), range(base + skip, base + count), repeat(text), _DIGITS6[skip:count],
                        repeat(last), values))
    texts = list(map(b"%d".__mod__, range(skip, count)))
    sizes = list(map(len, texts))
    heads = {size: _ANNOTATIONS_MAP32 + _II.pack(_ENTRIES + size + 4, 6) + _SEQ_LONG for size in set(sizes)}
    return list(map(b"".join, zip(map(heads.__getitem__, sizes),
                                  map(_SEQ_OFFSET.pack, range(base + skip, base + count), repeat(_OFFSET_STR8), sizes),
                                  texts, repeat(last), values)))


class SharedEvents:
    """The messages of batches read lately, for the other receivers of the same
    partition (other consumer groups, or more readers of one group): each batch is
    encoded once while several read it. Least recently used batches go first past
    ``max_bytes`` (counted as the batches' stored size). Receivers that ask for
    the runtime metric or read geo-replicated offsets encode their own."""

    def __init__(self, max_bytes: int = 16 << 20) -> None:
        self.max_bytes = max_bytes
        self._batches: OrderedDict[tuple, tuple[list[bytes], int]] = OrderedDict()
        self._bytes = 0
        self.hits = self.misses = 0

    def events(self, key: tuple, size: int, encode) -> list[bytes]:
        """The messages of the batch ``key`` names (stored ``size`` bytes), from
        ``encode()`` the first time."""
        entry = self._batches.get(key)
        if entry is not None:
            self._batches.move_to_end(key)
            self.hits += 1
            return entry[0]
        self.misses += 1
        events = encode()
        self._batches[key] = (events, size)
        self._bytes += size
        while self._bytes > self.max_bytes and len(self._batches) > 1:
            _, (_, dropped) = self._batches.popitem(last=False)
            self._bytes -= dropped
        return events

    def clear(self) -> None:
        self._batches.clear()
        self._bytes = 0
