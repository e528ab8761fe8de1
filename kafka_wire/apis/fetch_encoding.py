"""Fast path for Fetch responses: record data goes out as the log's own
memoryviews, never copied into an encode buffer.

The schema codec copies every record byte (twice, with framing); at 10 KiB
records that was most of the broker's consume cost. This writes the small
fixed fields with ``struct`` and hands the server a list of chunks for
``transport.writelines``. tests/unit/kafka_wire/test_fetch_encoding.py checks
every served version decodes with the codec to the same values.
"""
from __future__ import annotations

import struct

from kafka_wire.raw_response import Raw

_I16 = struct.Struct(">h").pack
_I32 = struct.Struct(">i").pack
_PART_HEAD = struct.Struct(">ihq").pack          # partition, error, high watermark
_PART_HEAD_V4 = struct.Struct(">ihqq").pack      # ..., last stable offset
_PART_HEAD_V5 = struct.Struct(">ihqqq").pack     # ..., log start offset
_ABORTED = struct.Struct(">qq").pack
_TOP_V7 = struct.Struct(">ihi").pack             # throttle time, error, session id
_ZERO_UUID = bytes(16)
_NO_REPLICA = _I32(-1)
_NO_ENTRIES = _I32(0)
_NULL_ARRAY = _I32(-1)
# Records shorter than this are copied into the answer's one piece: cheaper than
# writing them as a piece of their own (a consumer's small fetches).
_COPY_BELOW = 2048
_ID_BYTES: dict = {}  # topic id -> its 16 bytes (UUID.bytes builds them on every call)


def _id_bytes(topic_id) -> bytes:
    if topic_id is None:
        return _ZERO_UUID
    found = _ID_BYTES.get(topic_id)
    if found is None:
        found = topic_id.bytes
        if len(_ID_BYTES) < 4096:
            _ID_BYTES[topic_id] = found
    return found


def _uvarint(n: int) -> bytes:
    if n < 128:
        return _SMALL[n]
    if n < 16384:
        return bytes(((n & 0x7F) | 0x80, n >> 7))
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


_SMALL = [bytes((n,)) for n in range(128)]
_NAMES: dict[tuple[str, bool], bytes] = {}  # a topic name as a response writes it


def _string(text: str | None, flexible: bool) -> bytes:
    if text is None:
        return b"\x00" if flexible else _I16(-1)
    raw = text.encode()
    return (_uvarint(len(raw) + 1) if flexible else _I16(len(raw))) + raw


def _name(topic: str | None, flexible: bool) -> bytes:
    """:func:`_string` of a topic name, kept for the next response (a bounded few)."""
    found = _NAMES.get((topic, flexible))
    if found is None:
        found = _string(topic, flexible)
        if topic is not None and len(_NAMES) < 4096:
            _NAMES[(topic, flexible)] = found
    return found


def _array_len(n: int | None, flexible: bool) -> bytes:
    if n is None:
        return b"\x00" if flexible else _I32(-1)
    return _uvarint(n + 1) if flexible else _I32(n)


def encode_fetch(version: int, topics: list, session_id: int, error: int = 0, throttle_ms: int = 0) -> Raw:
    """``topics``: [(name, topic_id, [read, ...])] where a read has partition,
    error, high_watermark, last_stable, log_start, aborted [(pid, first)] | None
    and records (a buffer). Records under _COPY_BELOW bytes are copied into the
    answer (one piece to write), larger ones go out as the log's own views."""
    flexible = version >= 12
    chunks: list = []
    if version >= 7:
        head = bytearray(_TOP_V7(throttle_ms, error, session_id))
    else:
        head = bytearray(_I32(throttle_ms))  # (v4+: always a throttle time)
    head += _array_len(len(topics), flexible)
    for name, topic_id, reads in topics:
        if version >= 13:
            head += _id_bytes(topic_id)
        else:
            head += _name(name, flexible)
        head += _array_len(len(reads), flexible)
        for r in reads:
            if version >= 5:
                head += _PART_HEAD_V5(r.partition, r.error, r.high_watermark, r.last_stable, r.log_start)
            elif version >= 4:
                head += _PART_HEAD_V4(r.partition, r.error, r.high_watermark, r.last_stable)
            else:
                head += _PART_HEAD(r.partition, r.error, r.high_watermark)
            if version >= 4:
                aborted = r.aborted
                if not aborted:
                    head += (b"\x01" if flexible else _NO_ENTRIES) if aborted is not None else (
                        b"\x00" if flexible else _NULL_ARRAY)
                else:
                    head += _array_len(len(aborted), flexible)
                    for pid, first in aborted:
                        head += _ABORTED(pid, first)
                        if flexible:
                            head += b"\x00"
            if version >= 11:
                head += _NO_REPLICA  # preferred_read_replica
            records = r.records
            n = len(records)
            head += _uvarint(n + 1) if flexible else _I32(n)
            if n >= _COPY_BELOW:
                chunks.append(bytes(head))
                chunks.append(records)
                head = bytearray()
            elif n:
                head += records
            if flexible:
                head += b"\x00"  # partition tagged fields
        if flexible:
            head += b"\x00"  # topic tagged fields
    if flexible:
        head += b"\x00"  # response tagged fields
    chunks.append(bytes(head))
    return Raw(chunks, flexible_header=flexible)


# (version, topic id or name, throttle ms) -> the answer's bytes before its one partition
_ONE_HEADS: dict = {}
# The last of them, found by the topic's identity: a consumer asks the same again and again,
# and a key holding a UUID hashes and compares it in Python. One tuple, swapped whole: brokers
# in threads of one process may call here at once.
_last_head: tuple = (None, None, None, b"")


def encode_one(version: int, topic, topic_id, r, throttle_ms: int = 0) -> Raw:
    """:func:`encode_fetch` of one partition of one topic, no error, no session (the
    answer to a consumer's one-partition Fetch), byte for byte the same, from a kept
    head: what precedes the partition depends only on the version, the topic and the
    throttle time."""
    global _last_head
    aborted = r.aborted
    if aborted or version < 5:  # aborted transactions to list, or an old version: the general way
        return encode_fetch(version, [(topic, topic_id, [r])], 0, 0, throttle_ms)
    flexible = version >= 12
    ident = topic_id if version >= 13 else topic
    last = _last_head
    if last[1] is ident and last[0] == version and last[2] == throttle_ms:
        head = last[3]
    else:
        key = (version, ident, throttle_ms)
        head = _ONE_HEADS.get(key)
        if head is None:
            head = bytes(encode_fetch(version, [(topic, topic_id, [])], 0, 0, throttle_ms).body[-1])
            # (an empty partition array's length and the tagged fields after it come off)
            head = head[:-3] + b"\x02" if flexible else head[:-4] + _I32(1)
            if len(_ONE_HEADS) >= 4096:
                _ONE_HEADS.clear()
            _ONE_HEADS[key] = head
        _last_head = (version, ident, throttle_ms, head)
    records = r.records
    n = len(records)
    part = _PART_HEAD_V5(r.partition, r.error, r.high_watermark, r.last_stable, r.log_start)
    if flexible:
        entries = b"\x01" if aborted is not None else b"\x00"
        size = _SMALL[n + 1] if n < 127 else _uvarint(n + 1)
        if n >= _COPY_BELOW:
            return Raw([b"".join((head, part, entries, _NO_REPLICA, size)), records, b"\x00\x00\x00"],
                       flexible_header=True)
        return Raw([b"".join((head, part, entries, _NO_REPLICA, size, records, b"\x00\x00\x00"))],
                   flexible_header=True)
    middle = (_NO_ENTRIES if aborted is not None else _NULL_ARRAY) + (
        _NO_REPLICA if version >= 11 else b"") + _I32(n)
    if n >= _COPY_BELOW:
        return Raw([head + part + middle, records, b""], flexible_header=False)
    return Raw([b"".join((head, part, middle, records))], flexible_header=False)
