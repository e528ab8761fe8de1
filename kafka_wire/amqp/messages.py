"""AMQP messages ⇄ records of the shared log, with the mapping Event Hubs
documents for mixed AMQP and Kafka traffic.

Sent with AMQP, stored as a Kafka record:

- the body is the record's value: its data sections, joined; an amqp-value or
  amqp-sequence body as its AMQP encoding;
- the partition key (``x-opt-partition-key``) is the record's key;
- each application property is a header whose value is the property's AMQP
  encoding, as Azure hands them to Kafka consumers; the batch carries
  ``AMQP_HEADERS_BIT`` so an AMQP reader decodes them back to their types;
- what a record has no place for (the header, delivery annotations, the sender's
  message annotations, the properties section, the footer, and a body's shape
  other than one data section) is one reserved header, ``x-opt-amqp-properties``
  (:func:`amqp_only`), absent for a plain data body: Kafka consumers see that case
  as before;
- the enqueued time is the broker's append time (the batch's timestamp).

Read with AMQP, a record becomes the message as it was sent, with the
annotations Event Hubs adds (``x-opt-sequence-number`` = the Kafka offset,
``x-opt-offset``, ``x-opt-enqueued-time``, ``x-opt-partition-key``, and
``x-opt-publisher`` for an event sent through a publisher, which the reserved
header keeps: :func:`kafka_wire.eventhubs.events.with_publisher`); a record a
Kafka client wrote has its headers as binary application properties and its
value as one data section.

Incoming messages are decoded here by walking their sections. Outgoing ones are
written here too (:func:`encode_event`): it is the receive path's hot loop; a
property test checks the bytes against proton's decoder.
"""
from __future__ import annotations

import functools
import re
import struct
from typing import NamedTuple

from proton import Data

from kafka_wire.eventhubs.events import Incoming, PlainEvents
from kafka_wire.log import batch as rb

__all__ = ["MessageError", "decode_message", "is_batch", "split_batch", "batch_messages", "plain_batch",
           "encode_event",
           "BATCH_FORMAT", "PARTITION_KEY", "SEQUENCE_NUMBER", "OFFSET",
           "ENQUEUED_TIME", "PUBLISHER"]

BATCH_FORMAT = 0x80013700  # Microsoft's batched message format: each data section one message
PARTITION_KEY = "x-opt-partition-key"
SEQUENCE_NUMBER = "x-opt-sequence-number"
OFFSET = "x-opt-offset"
ENQUEUED_TIME = "x-opt-enqueued-time"
PUBLISHER = "x-opt-publisher"

_HEADER, _DELIVERY_ANN, _MESSAGE_ANN, _PROPERTIES, _APP_PROPS = 0x70, 0x71, 0x72, 0x73, 0x74
_DATA, _SEQUENCE, _VALUE, _FOOTER = 0x75, 0x76, 0x77, 0x78


class MessageError(ValueError):
    """A message that does not decode as AMQP; the text is for the sender."""


# -- the send path's decoder --------------------------------------------------------
# Sections are walked by their encodings' lengths, without building Python
# objects: application property values are kept as their AMQP bytes anyway,
# and only the partition key and property names are decoded. Proton's codec is
# the fallback for value encodings the walk does not size itself.
_FIXED = {0x40: 0, 0x41: 0, 0x42: 0, 0x43: 0, 0x44: 0, 0x45: 0,
          0x50: 1, 0x51: 1, 0x52: 1, 0x53: 1, 0x54: 1, 0x55: 1, 0x56: 1,
          0x60: 2, 0x61: 2, 0x70: 4, 0x71: 4, 0x72: 4, 0x73: 4, 0x74: 4,
          0x80: 8, 0x81: 8, 0x82: 8, 0x83: 8, 0x84: 8, 0x94: 16, 0x98: 16}
_U32 = struct.Struct(">I")


def _skip(buf, pos: int) -> int:
    """The position after the encoded value at ``pos``."""
    code = buf[pos]
    width = _FIXED.get(code)
    if width is not None:
        return pos + 1 + width
    if code == 0x00:  # described: descriptor, then value
        return _skip(buf, _skip(buf, pos + 1))
    high = code & 0xF0
    if high in (0xA0, 0xC0, 0xE0):  # one-byte size: binary, strings, symbols; list8, map8, array8
        return pos + 2 + buf[pos + 1]
    if high in (0xB0, 0xD0, 0xF0):
        return pos + 5 + _U32.unpack_from(buf, pos + 1)[0]
    data = Data()
    used = data.decode(bytes(buf[pos:]))
    if used <= 0:
        raise MessageError(f"undecodable value at {pos}")
    return pos + used


def _entries(buf, pos: int):
    """(key position, value position, value end) of each entry of the map at ``pos``."""
    code = buf[pos]
    if code == 0xC1:
        count, p = buf[pos + 2], pos + 3
    elif code == 0xD1:
        count, p = _U32.unpack_from(buf, pos + 5)[0], pos + 9
    elif code == 0x40:
        return
    else:
        raise MessageError(f"a map was expected, not constructor 0x{code:02x}")
    for _ in range(count // 2):
        v = _skip(buf, p)
        after = _skip(buf, v)
        yield p, v, after
        p = after


def _text(buf, pos: int) -> str | None:
    """A str or sym value's text (None for other types)."""
    code = buf[pos]
    if code in (0xA1, 0xA3):
        return bytes(buf[pos + 2:pos + 2 + buf[pos + 1]]).decode("utf-8")
    if code in (0xB1, 0xB3):
        n = _U32.unpack_from(buf, pos + 1)[0]
        return bytes(buf[pos + 5:pos + 5 + n]).decode("utf-8")
    return None


def _binary_value(buf, pos: int) -> bytes | None:
    code = buf[pos]
    if code == 0xA0:
        return bytes(buf[pos + 2:pos + 2 + buf[pos + 1]])
    if code == 0xB0:
        n = _U32.unpack_from(buf, pos + 1)[0]
        return bytes(buf[pos + 5:pos + 5 + n])
    return None


def _binary_view(buf: memoryview, pos: int) -> memoryview | None:
    """A binary value as a view of ``buf`` (a data section: the body, or a batch's
    inner message, is not copied before it goes into the record batch)."""
    code = buf[pos]
    if code == 0xA0:
        return buf[pos + 2:pos + 2 + buf[pos + 1]]
    if code == 0xB0:
        n = _U32.unpack_from(buf, pos + 1)[0]
        return buf[pos + 5:pos + 5 + n]
    return None


_PARTITION_KEY_SYM = PARTITION_KEY.encode()


def _decode(buf, strict: bool = False) -> Incoming:
    """``strict``: also require each section's value to have the encoding its kind
    allows and a body section (how a batch's inner message is recognized)."""
    pos, end = 0, len(buf)
    has_body = False
    key: str | None = None
    props: list[tuple[bytes, bytes]] = []
    sections: list[bytes] = []
    body: bytes | None = None
    kept: dict[int, bytes] = {}          # section code -> the section, for amqp_only
    annotations: list[bytes] = []        # the sender's own message annotations (entries)
    values: list[bytes] = []             # amqp-value / amqp-sequence encodings
    body_kind = _DATA
    while pos < end:
        if buf[pos] != 0 or buf[pos + 1] != 0x53:
            raise MessageError(f"a message section must be a described type (at {pos})")
        code = buf[pos + 2]
        value = pos + 3
        if strict:
            allowed = _SECTION_VALUES.get(code, b"")
            if allowed is not None and buf[value] not in allowed:
                raise MessageError(f"section 0x{code:02x} with constructor 0x{buf[value]:02x}")
            has_body = has_body or _DATA <= code <= _VALUE
        after = _skip(buf, value)
        if after > end:
            raise MessageError("a message section runs past the message's end")
        if code == _MESSAGE_ANN:
            for k, v, e in _entries(buf, value):
                if bytes(buf[k + 2:v]) == _PARTITION_KEY_SYM and buf[k] == 0xA3:
                    found = _text(buf, v)
                    if found is not None:
                        key = found
                    else:  # not a string: routed as no key, and kept as sent, as the service does
                        annotations.append(bytes(buf[k:e]))
                elif _annotation_name(buf, k, v) not in _SERVICE_NAMES:
                    annotations.append(bytes(buf[k:e]))
        elif code == _APP_PROPS:
            for k, v, e in _entries(buf, value):
                name = _text(buf, k)
                if name is None:
                    raise MessageError("application property names must be strings")
                props.append((name.encode("utf-8"), bytes(buf[v:e])))
        elif code == _DATA:
            chunk = _binary_view(buf, value)
            if chunk is None:
                raise MessageError("a data section must hold binary")
            sections.append(chunk)
        elif code in (_VALUE, _SEQUENCE):
            values.append(bytes(buf[value:after]))  # the section's value, as AMQP encodes it
            body_kind = code
        elif code == _PROPERTIES and _has_values(buf, value, after):
            kept[code] = bytes(buf[pos:after])  # kept whole, descriptor included
        elif code == _HEADER and _more_than_durable(buf, value, after):
            kept[code] = bytes(buf[pos:after])
        elif code in (_DELIVERY_ANN, _FOOTER) and next(_entries(buf, value), None) is not None:
            kept[code] = bytes(buf[pos:after])
        elif not _HEADER <= code <= _FOOTER:
            raise MessageError(f"0x{code:02x} is not a message section")
        pos = after
    if strict and not has_body:
        raise MessageError("no body section")
    if values:
        body = b"".join(values)  # (a sequence body may have several sections)
    elif sections:
        body = sections[0] if len(sections) == 1 else b"".join(sections)
    shape = None
    if body_kind != _DATA:
        shape = _SYM_VALUE if body_kind == _VALUE else _SYM_SEQUENCE
    elif len(sections) > 1:
        shape = _binary(b"".join(_U32.pack(len(c)) for c in sections))
    return Incoming(key, props, body, sections, amqp_only(kept, annotations, shape))


# Message annotations the service sets: a sender's own are not kept (x-opt-publisher is
# stamped on events sent through a publisher, eventhubs.events.with_publisher, and no others).
_SERVICE_ANNOTATIONS = {b"x-opt-sequence-number", b"x-opt-offset", b"x-opt-enqueued-time",
                        b"x-opt-publisher"}
# ... and dropped whatever the name's encoding (a string, or a 32-bit length), with a
# partition key not given as the sym8 the key is read from: receivers that decode names
# as text would see a sender's x-opt-publisher or x-opt-sequence-number as the service's.
_SERVICE_NAMES = _SERVICE_ANNOTATIONS | {PARTITION_KEY.encode()}


def _annotation_name(buf, k: int, v: int) -> bytes | None:
    """The name of the annotation whose key starts at ``k`` (its value at ``v``), if it
    is a string or a symbol."""
    code = buf[k]
    if code in (0xA1, 0xA3):
        return bytes(buf[k + 2:v])
    if code in (0xB1, 0xB3):
        return bytes(buf[k + 5:v])
    return None
# The body's shape in the reserved header, when it is not one data section: a
# described value of this (private) descriptor: "value", "sequence", or the lengths
# of the data sections (big-endian uint32s in a binary).
_BODY_MARK = b"\x00\xa3\x0fkafka-wire:body"
_SYM_VALUE, _SYM_SEQUENCE = b"\xa3\x05value", b"\xa3\x08sequence"
_NO_PROPERTIES = b"\x00\x53\x73\x45"  # an empty properties section (list0)
# (eventhubs.events.with_publisher walks what amqp_only writes: keep the two in step)


def amqp_only(kept: dict[int, bytes], annotations: list[bytes], shape: bytes | None) -> bytes | None:
    """The reserved header's value: the properties section first (an empty one if the
    message had none: readers of older records take the first section for it), then
    header, delivery annotations, the sender's message annotations, footer and body
    shape, each as AMQP encodes it. None when the message has none of them."""
    if not kept and not annotations and shape is None:
        return None
    parts = [kept.get(_PROPERTIES, _NO_PROPERTIES)]
    parts += [kept[c] for c in (_HEADER, _DELIVERY_ANN) if c in kept]
    if annotations:
        parts.append(_map(_MESSAGE_ANN, annotations, len(annotations)))
    if _FOOTER in kept:
        parts.append(kept[_FOOTER])
    if shape is not None:
        parts.append(_BODY_MARK + shape)
    return b"".join(parts)


def _has_values(buf, value: int, after: int) -> bool:
    """Does the properties list at ``value`` hold anything but nulls? (Proton writes
    an empty one with every message: not worth a header.)"""
    constructor = buf[value]
    if constructor == 0x45:  # list0
        return False
    first = value + (3 if constructor == 0xC0 else 9)
    return any(b != 0x40 for b in bytes(buf[first:after]))


def _more_than_durable(buf, value: int, after: int) -> bool:
    """Does the header list at ``value`` say more than ``durable``? The SDKs mark
    every batched event durable (events are, anyway): a header of that alone is not
    kept, or every such event would carry a header of ours to Kafka consumers."""
    constructor = buf[value]
    if constructor == 0x45:
        return False
    pos = value + (3 if constructor == 0xC0 else 9)
    if pos >= after:
        return False
    return any(b != 0x40 for b in bytes(buf[_skip(buf, pos):after]))


def decode_message(raw: bytes) -> Incoming:
    """The sections of one encoded message."""
    try:
        return _decode(memoryview(raw))
    except MessageError:
        raise
    except Exception as exc:  # a truncated section, proton's DataException, bad UTF-8
        raise MessageError(f"the message does not decode as AMQP: {exc}") from None


def is_batch(message: Incoming) -> bool:
    """Does this read as the batch format (0x80013700), each data section one encoded
    message (each must decode whole as message sections holding a body)? For where no
    transfer's format is at hand: the send path goes by the transfer's format (read by
    :class:`~kafka_wire.amqp.input_frames.InputFrames`), as a plain message's body may
    be encoded messages."""
    sections = message.data_sections
    return (bool(sections) and all(map(_is_encoded_message, sections))
            and (len(sections) > 1 or len(sections[0]) > 0))


# The encodings each message section's value may have (constructor bytes):
# lists for header and properties, maps for annotations, application properties
# and footer, binary for a data section, a list for amqp-sequence, anything for amqp-value.
_LISTS, _MAPS, _BINARY = b"\x45\xc0\xd0", b"\xc1\xd1", b"\xa0\xb0"
_SECTION_VALUES = {_HEADER: _LISTS, _DELIVERY_ANN: _MAPS, _MESSAGE_ANN: _MAPS,
                   _PROPERTIES: _LISTS, _APP_PROPS: _MAPS, _DATA: _BINARY, _SEQUENCE: _LISTS,
                   _VALUE: None, _FOOTER: _MAPS}


def _is_encoded_message(raw: bytes) -> bool:
    if not len(raw):
        return True  # an event whose encoding is empty (see batch_messages)
    pos, end, body = 0, len(raw), False
    try:
        while pos < end:
            if raw[pos] != 0 or raw[pos + 1] != 0x53 or not _HEADER <= raw[pos + 2] <= _FOOTER:
                return False
            allowed = _SECTION_VALUES[raw[pos + 2]]
            if allowed is not None and raw[pos + 3] not in allowed:
                return False
            body = body or _DATA <= raw[pos + 2] <= _VALUE
            pos = _skip(raw, pos + 3)
    except Exception:
        return False
    return body and pos == end


def batch_messages(outer: Incoming, batch_format: bool = False) -> list[Incoming] | None:
    """The messages of a batch-format message, or None when it is not one (see
    :func:`is_batch`): each data section decoded once, strictly. With ``batch_format``
    (the transfer said 0x80013700), one empty data section is one event without a body."""
    sections = outer.data_sections
    if not sections:
        return None
    try:
        inner = [_plain_inner(section) or (_decode(memoryview(section), strict=True) if len(section)
                                           else _NO_BODY)
                 for section in sections]
    except Exception:
        return None
    if len(inner) == 1 and inner[0] is _NO_BODY and not batch_format:
        return None  # one empty data section: a plain message's empty body
    return [m if m.partition_key is not None or outer.partition_key is None
            else m._replace(partition_key=outer.partition_key) for m in inner]


# A batch's event whose encoding is empty: the SDKs add one to a batch for an
# AmqpAnnotatedMessage without a body (data_body=[], value_body=None), and count it. It is
# an event with no body (a Kafka record with a null value, which on a compacted hub is the
# tombstone the service documents: a key and no payload), not a reason to take the whole
# batch for one message whose body is its events' encodings.
_NO_BODY = Incoming(None, [], None, [], None)


def _plain_inner(section) -> Incoming | None:
    """A batch's inner message that is one data section, after at most a header that
    says only ``durable`` (what the SDKs send for an event without properties), as
    ``_decode(section, strict=True)`` reads it; None for any other message."""
    try:
        pos = 0
        if section[0] == 0 and section[1] == 0x53 and section[2] == _HEADER:
            if section[3] not in _LISTS:
                return None
            pos = _skip(section, 3)
            if _more_than_durable(section, 3, pos):
                return None
        if section[pos] != 0 or section[pos + 1] != 0x53 or section[pos + 2] != _DATA:
            return None
        code = section[pos + 3]
        if code == 0xA0:
            start, n = pos + 5, section[pos + 4]
        elif code == 0xB0:
            start, n = pos + 8, _U32.unpack_from(section, pos + 4)[0]
        else:
            return None
        if start + n != len(section):
            return None
        body = memoryview(section)[start:]
    except (IndexError, struct.error, MessageError):  # truncated: the general path says why
        return None
    return Incoming(None, [], body, [body], None)


# -- the send path's shortcut: a batch of plain events, in one pass ------------------
_SECTION_HEADS = struct.Struct(">IIII")  # a data section's head, its inner message's data section's
_HEADS8 = struct.Struct(">IBIB")         # the same, both of binary8
_DATA32, _DATA8 = 0x005375B0, 0x005375A0  # 00 53 75 b0/a0: a data section of binary32/binary8
_DATA32_HEAD = b"\x00\x53\x75\xb0"
_KEY_ENTRY = b"\xa3\x13" + _PARTITION_KEY_SYM  # the annotation's name, as the SDKs encode it
_PREFIX_SECTIONS = (_HEADER, _DELIVERY_ANN, _MESSAGE_ANN, _PROPERTIES, _APP_PROPS)


def plain_batch(buf: memoryview) -> PlainEvents | None:
    """What ``batch_messages(decode_message(buf))`` reads, without an :class:`Incoming`
    per event, when that is a batch whose every event is a data section, after at most
    a header saying only ``durable``, message annotations holding only the partition
    key and properties holding nothing (see :func:`_keyed_inner`), and all the events'
    keys are the same; None for anything else (then those read it, and say why it is
    wrong, if it is: nothing here raises)."""
    try:
        return _plain_batch(buf)
    except Exception:  # noqa: BLE001 - truncated, bad UTF-8, proton's DataException...
        return None


def _plain_batch(buf: memoryview) -> PlainEvents | None:
    end = len(buf)
    pos = 0
    # The outer message's sections before its data sections (a header, the batch's
    # partition key...) are read by the general decoder: only its key matters.
    while buf[pos + 2] != _DATA:
        if buf[pos] != 0 or buf[pos + 1] != 0x53 or buf[pos + 2] not in _PREFIX_SECTIONS:
            return None
        pos = _skip(buf, pos + 3)
        if pos >= end:
            return None
    outer_key = _decode(buf[:pos]).partition_key if pos else None
    return _alike(buf, pos, end, outer_key) or _events(buf, pos, end, outer_key)


def _alike(buf: memoryview, pos: int, end: int, outer_key: str | None) -> PlainEvents | None:
    """:func:`_events` of a batch whose events all have the first one's size and its
    bytes before its body (a batch of equal-sized events, as load tests and fixed
    schemas send), without a Python step per event to read them: the first is read,
    and one regular expression checks that the others begin as it does; None when they
    do not (or the first is not plain)."""
    size = buf[pos + 4] + 5 if buf[pos + 3] == 0xA0 else _U32.unpack_from(buf, pos + 4)[0] + 8
    if (end - pos) % size or end - pos < 2 * size:
        return None
    first = _events(buf, pos, pos + size, outer_key)
    if first is None:
        return None
    n = len(first.bodies[0])
    if size - n > _ALIKE_BEFORE:
        return None
    before = bytes(buf[pos:pos + size - n])
    if _alike_pattern(before, n).fullmatch(buf, pos, end) is None:
        return None
    return PlainEvents(first.key, [buf[s:s + n] for s in range(pos + size - n, end - n + 1, size)], n)


# The longest run of bytes before the body read this way: the patterns are cached (by
# re too), and a client's padded headers should not fill the cache with megabytes.
_ALIKE_BEFORE = 256


@functools.lru_cache(maxsize=64)
def _alike_pattern(before: bytes, n: int) -> re.Pattern:
    """Events each ``before`` then ``n`` bytes of body, one after another to the end.
    Possessive (``*+``): an event is always the same length, so giving one back cannot
    help a full match, and sre then keeps no backtracking state per event (43 us a 1 MB
    batch of 1 KiB events, 23 us so)."""
    return re.compile(b"(?:%s.{%d})*+" % (re.escape(before), n), re.DOTALL)


def _events(buf: memoryview, pos: int, end: int, outer_key: str | None) -> PlainEvents | None:
    """The events of the batch's data sections from ``pos`` to ``end``, one at a time."""
    key = outer_key
    own_key = False  # the events have a key of their own, not the batch's
    same, same_body = None, 0  # the last event read below: its bytes before its body, its body's size
    # (when its two data sections are binary32: what reads an event's two lengths and the
    # bytes between them, which are the last one's, ``same_between``, in an alike event)
    middle, same_between = None, b""
    bodies: list = []
    append = bodies.append
    heads, heads8 = _SECTION_HEADS.unpack_from, _HEADS8.unpack_from
    while pos < end:
        # The events of a batch are alike up to their bodies, which are not read: one
        # whose bytes before its body are the last one's (its data section's length
        # included) is read as that one was.
        if middle is not None:
            # The same but for the body's size, both data sections binary32 (keyed events
            # whose sizes differ: each was read whole, 5.7 us an event): the lengths agree.
            if end - pos >= len(same):
                a, n, between, m = middle(buf, pos)
                if between == same_between and a == _DATA32 and n == m + len(same) - 8:
                    start = pos + len(same)
                    pos = start + m
                    append(buf[start:pos])  # (cut short at the end: pos > end, refused below)
                    continue
        elif same is not None and buf[pos:pos + len(same)] == same:
            start = pos + len(same)
            pos = start + same_body
            append(buf[start:pos])  # (cut short at the end: pos > end, refused below)
            continue
        if end - pos >= 16:  # the common events: a data section holding only a data section
            a, n, b, m = heads(buf, pos)
            if a == _DATA32 and b == _DATA32 and n == m + 8 and not own_key:
                # So are the events after it, nearly always: read in a loop of their own
                # (a tenth of this function's time per event when sizes differ).
                last = end - 16
                while True:
                    start = pos + 16
                    pos = start + m
                    append(buf[start:pos])  # (cut short at the end: pos > end, refused below)
                    if pos > last:
                        break
                    a, n, b, m = heads(buf, pos)
                    if n != m + 8 or a != _DATA32 or b != _DATA32:
                        break
                continue
            a, n, b, m = heads8(buf, pos)
            if a == _DATA8 and b == _DATA8 and n == m + 5 and not own_key:
                last = end - 16
                while True:
                    start = pos + 10
                    pos = start + m
                    append(buf[start:pos])
                    if pos > last:
                        break
                    a, n, b, m = heads8(buf, pos)
                    if n != m + 5 or a != _DATA8 or b != _DATA8:
                        break
                continue
        if buf[pos] != 0 or buf[pos + 1] != 0x53 or buf[pos + 2] != _DATA:
            return None
        code = buf[pos + 3]
        if code == 0xA0:
            start = pos + 5
            stop = start + buf[pos + 4]
        elif code == 0xB0:
            start = pos + 8
            stop = start + _U32.unpack_from(buf, pos + 4)[0]
        else:
            return None
        if stop > end:
            return None
        event = _keyed_inner(buf[start:stop])
        if event is None:
            return None
        inner_key, body = event
        if inner_key is None:
            inner_key = outer_key  # (an event without a key takes the batch's)
        if not bodies:
            key, own_key = inner_key, inner_key != outer_key
        elif inner_key != key:  # events with different keys: the general path
            return None
        append(body)
        same, same_body = bytes(buf[pos:stop - len(body)]), len(body)  # (the body ends the inner message)
        middle = None
        if same[:4] == _DATA32_HEAD and same[-8:-4] == _DATA32_HEAD:
            middle, same_between = _between(len(same)).unpack_from, same[8:-4]
        pos = stop
    if pos != end or not bodies:
        return None
    return PlainEvents(key, bodies)


@functools.lru_cache(maxsize=16)
def _between(before: int) -> struct.Struct:
    """An event's data section head and length, the bytes up to its inner data section's
    length, and that length, when its bytes before its body are ``before`` long."""
    return struct.Struct(f">II{before - 12}sI")


def _keyed_inner(inner: memoryview) -> tuple[str | None, memoryview] | None:
    """A batch's inner message whose body is one data section, at its end, after at most
    (in any order, once each) a header saying only ``durable``, message annotations
    holding nothing or only a text partition key, and a properties section holding
    nothing (what the Python and JavaScript SDKs send): (the key or None, the body), as
    ``_decode(inner, strict=True)`` reads them; None for any other."""
    plain = _plain_inner(inner)
    if plain is not None:
        return None, plain.body
    end, pos = len(inner), 0
    key = None
    seen = []
    while inner[pos] == 0 and inner[pos + 1] == 0x53:
        code, constructor = inner[pos + 2], inner[pos + 3]
        if code == _DATA:
            plain = _plain_inner(inner[pos:])  # (filling the rest)
            return None if plain is None else (key, plain.body)
        if code in seen:
            return None
        seen.append(code)
        if code == _HEADER or code == _PROPERTIES:
            if constructor not in _LISTS:
                return None
            after = _skip(inner, pos + 3)
            if after > end or (_more_than_durable(inner, pos + 3, after) if code == _HEADER
                               else _has_values(inner, pos + 3, after)):
                return None
        elif code == _MESSAGE_ANN:
            if constructor == 0xC1:  # map8: size, count, the entries
                after, count, entry = pos + 5 + inner[pos + 4], inner[pos + 5], pos + 6
            elif constructor == 0xD1:
                size, count = struct.unpack_from(">II", inner, pos + 4)
                after, entry = pos + 8 + size, pos + 12
            else:
                return None
            if count == 2 and inner[entry:entry + len(_KEY_ENTRY)] == _KEY_ENTRY:
                value = entry + len(_KEY_ENTRY)
                if inner[value] not in (0xA1, 0xA3, 0xB1, 0xB3) or _skip(inner, value) != after:
                    return None
                key = _text(inner, value)
            elif count != 0 or entry != after:
                return None
            if after > end:
                return None
        else:
            return None
        pos = after
    return None


def split_batch(outer: Incoming) -> list[Incoming]:
    """The messages of a batch-format message (one per data section); a
    message without its own partition key takes the batch's."""
    inner = [decode_message(section) for section in outer.data_sections]
    return [m if m.partition_key is not None or outer.partition_key is None
            else m._replace(partition_key=outer.partition_key) for m in inner]


_PROPERTIES_NAME = rb.AMQP_PROPERTIES_HEADER  # the reserved header (eventhubs.events)


# -- the receive path's encoder --------------------------------------------------------
_I32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_SYM_SEQ = b"\xa3\x15" + SEQUENCE_NUMBER.encode()
_SYM_OFFSET = b"\xa3\x0c" + OFFSET.encode()
_SYM_TIME = b"\xa3\x13" + ENQUEUED_TIME.encode()
_SYM_KEY = b"\xa3\x13" + PARTITION_KEY.encode()
_NULL = b"\x40"


def _str(text: bytes) -> bytes:
    n = len(text)
    return (b"\xa1" + bytes((n,)) if n < 256 else b"\xb1" + _I32.pack(n)) + text


def _binary(value: bytes) -> bytes:
    n = len(value)
    return (b"\xa0" + bytes((n,)) if n < 256 else b"\xb0" + _I32.pack(n)) + value


def _map(described: int, items: list[bytes], pairs: int) -> bytes:
    body = b"".join(items)
    return b"\x00\x53" + bytes((described,)) + b"\xd1" + _I32.pack(len(body) + 4) + _I32.pack(pairs * 2) + body


def _valid_amqp_value(value: bytes) -> bool:
    """Is ``value`` one whole AMQP value a receiver can decode? Proton's codec takes
    some encodings its Python binding cannot turn into a value (a char past
    U+10FFFF), which would break the receiver's decode of the whole message."""
    data = Data()
    try:
        if data.decode(value) != len(value):
            return False
        data.rewind()
        data.next()
        data.get_object()
        return True
    except Exception:
        return False


def encode_event(sequence: int, offset: int, enqueued_ms: int, key: bytes | None,
                 value: bytes | None, headers: list[tuple[str, bytes | None]],
                 amqp_headers: bool, extra_annotations: bytes = b"") -> bytes:
    """One stored event as the encoded AMQP message an Event Hubs receiver gets.
    ``amqp_headers``: header values are AMQP encodings (sent with AMQP), else raw
    bytes (sent with Kafka) and delivered as binary. ``extra_annotations``: a
    delivery-annotations section to add (the runtime metric)."""
    if not headers and not extra_annotations:
        return _plain_event(sequence, offset, enqueued_ms, key, value)
    annotations = [_SYM_SEQ, b"\x81", _I64.pack(sequence),
                   _SYM_OFFSET, _str(str(offset).encode()),
                   _SYM_TIME, b"\x83", _I64.pack(enqueued_ms)]
    pairs = 3
    keyed = False
    if key is not None:
        try:
            key.decode("utf-8")
            annotations += [_SYM_KEY, _str(key)]
            pairs += 1
            keyed = True
        except UnicodeDecodeError:  # a binary Kafka key has no string form
            pass
    kept: _Kept | None = None
    if amqp_headers and headers:
        name, hv = headers[-1]
        if name == _PROPERTIES_NAME and hv is not None:
            # The reserved header is the last one (eventhubs.events.records_batch): a header
            # of its name before it is an application property of that name.
            kept = _restored(hv)
            headers = headers[:-1]
    items: list[bytes] = []
    count = 0
    for name, hv in headers:
        items.append(_str(name.encode("utf-8")))
        count += 1
        if hv is None:
            items.append(_NULL)
        elif amqp_headers and _valid_amqp_value(hv):
            items.append(hv)
        else:
            items.append(_binary(hv))
    out = []
    if kept is not None and kept.header:
        out.append(kept.header)
    delivery, n = ([kept.delivery], kept.delivery_pairs) if kept is not None else ([], 0)
    if extra_annotations:
        delivery.insert(0, extra_annotations[12:])  # its entries (a map32 section)
        n += _U32.unpack_from(extra_annotations, 8)[0] // 2
    if n:
        out.append(_map(_DELIVERY_ANN, delivery, n))
    if kept is not None and kept.annotation_pairs:
        kept_annotations, kept_pairs = kept.annotations, kept.annotation_pairs
        if keyed and _SYM_KEY in kept_annotations:
            kept_annotations, kept_pairs = _without_key(kept_annotations, kept_pairs)
        annotations.append(kept_annotations)
        pairs += kept_pairs
    out.append(_map(_MESSAGE_ANN, annotations, pairs))
    if kept is not None and kept.properties:
        out.append(kept.properties)  # the sender's properties section, before the application's
    if count:
        out.append(_map(_APP_PROPS, items, count))
    body = value if value is not None else b""
    shaped = _body(body, kept.shape) if kept is not None and kept.shape is not None else None
    out.append(shaped if shaped is not None else b"\x00\x53\x75" + _binary(body))
    if kept is not None and kept.footer:
        out.append(kept.footer)
    return b"".join(out)


def _without_key(entries: bytes, pairs: int) -> tuple[bytes, int]:
    """The sender's kept annotation ``entries`` without a partition key (one that was not
    a string, kept as sent): a key the event was stored by (a batch's, a publisher's) is
    written instead, and a map holds a key once."""
    buf = b"\xd1" + _U32.pack(len(entries) + 4) + _U32.pack(pairs * 2) + entries  # (a map, for _entries)
    kept = [buf[k:e] for k, v, e in _entries(buf, 0) if buf[k:v] != _SYM_KEY]
    return b"".join(kept), len(kept)


_SEQ_LONG = _SYM_SEQ + b"\x81"
_OFFSET_STR8 = _SYM_OFFSET + b"\xa1"
_TIME_STAMP = _SYM_TIME + b"\x83"
_ANNOTATIONS_MAP32 = b"\x00\x53\x72\xd1"
_DATA_BINARY8 = b"\x00\x53\x75\xa0"
_DATA_BINARY32 = b"\x00\x53\x75\xb0"
_II = struct.Struct(">II")


def _plain_event(sequence: int, offset: int, enqueued_ms: int, key: bytes | None,
                 value: bytes | None) -> bytes:
    """:func:`encode_event` of an event with no application properties, no kept
    sections and no runtime metric (most events): the same bytes, in one join."""
    text = str(offset).encode()
    entries = b"".join((_SEQ_LONG, _I64.pack(sequence), _OFFSET_STR8, bytes((len(text),)), text,
                        _TIME_STAMP, _I64.pack(enqueued_ms)))
    items = 6
    if key is not None:
        try:
            key.decode("utf-8")
            entries += _SYM_KEY + _str(key)
            items = 8
        except UnicodeDecodeError:  # a binary Kafka key has no string form
            pass
    body = value if value is not None else b""
    n = len(body)
    return b"".join((_ANNOTATIONS_MAP32, _II.pack(len(entries) + 4, items), entries,
                     _DATA_BINARY8 + bytes((n,)) if n < 256 else _DATA_BINARY32 + _I32.pack(n), body))


class _Kept(NamedTuple):
    """The reserved header's sections (see :func:`amqp_only`), ready to write."""
    header: bytes = b""
    delivery: bytes = b""        # delivery annotation entries, and how many
    delivery_pairs: int = 0
    annotations: bytes = b""     # the sender's message annotation entries, and how many
    annotation_pairs: int = 0
    properties: bytes = b""
    footer: bytes = b""
    shape: bytes | None = None   # the body's shape (None: one data section)


def _restored(raw: bytes) -> _Kept | None:
    """The reserved header's value read back; None (the parts dropped, the event
    still delivered) if it does not parse, which only a damaged record does."""
    try:
        found: dict = {}
        pos, end = 0, len(raw)
        while pos < end:
            if raw.startswith(_BODY_MARK, pos):
                after = _skip(raw, pos + len(_BODY_MARK))
                found["shape"] = raw[pos + len(_BODY_MARK):after]
            elif raw[pos] == 0 and raw[pos + 1] == 0x53:
                code, after = raw[pos + 2], _skip(raw, pos + 3)
                if code in (_DELIVERY_ANN, _MESSAGE_ANN):
                    entries = list(_entries(raw, pos + 3))
                    field, count = (("delivery", "delivery_pairs") if code == _DELIVERY_ANN
                                    else ("annotations", "annotation_pairs"))
                    if entries:
                        found[field] = raw[entries[0][0]:entries[-1][2]]
                        found[count] = len(entries)
                elif code == _PROPERTIES:
                    if raw[pos + 3] != 0x45:  # (an empty one stands in for none)
                        found["properties"] = raw[pos:after]
                elif code in (_HEADER, _FOOTER):
                    found["header" if code == _HEADER else "footer"] = raw[pos:after]
            else:
                return None
            if after > end:
                return None
            pos = after
        return _Kept(**found)
    except Exception:  # noqa: BLE001 - IndexError, struct.error, proton's DataException...
        return None


def _body(value: bytes, shape: bytes) -> bytes | None:
    """The body sections of a stored value whose shape is not one data section; None
    when value and shape disagree (a damaged record: delivered as one data section)."""
    try:
        if shape == _SYM_VALUE:
            return b"\x00\x53\x77" + value if _skip(value, 0) == len(value) else None
        out, pos = [], 0
        if shape == _SYM_SEQUENCE:
            while pos < len(value):
                after = _skip(value, pos)
                out.append(b"\x00\x53\x76" + value[pos:after])
                pos = after
        else:
            lengths = _binary_value(shape, 0) or b""
            for (n,) in struct.iter_unpack(">I", lengths):
                out.append(b"\x00\x53\x75" + _binary(value[pos:pos + n]))
                pos += n
        return b"".join(out) if out and pos == len(value) else None
    except Exception:  # noqa: BLE001 - as in _restored
        return None


_SYM_LAST_SEQ = b"\xa3\x1d" + b"last_enqueued_sequence_number"
_SYM_LAST_OFFSET = b"\xa3\x14" + b"last_enqueued_offset"
_SYM_LAST_TIME = b"\xa3\x16" + b"last_enqueued_time_utc"
_SYM_RETRIEVED = b"\xa3\x1f" + b"runtime_info_retrieval_time_utc"


def runtime_metric_annotations(last_sequence: int, last_offset: int, last_time_ms: int,
                               now_ms: int) -> bytes:
    """The delivery annotations a receiver that asked for the runtime metric
    gets with each event: the partition's last enqueued event, and when that
    was looked up."""
    items = [_SYM_LAST_SEQ, b"\x81", _I64.pack(last_sequence),
             _SYM_LAST_OFFSET, _str(str(last_offset).encode()),
             _SYM_LAST_TIME, b"\x83", _I64.pack(last_time_ms),
             _SYM_RETRIEVED, b"\x83", _I64.pack(now_ms)]
    return _map(_DELIVERY_ANN, items, 4)
