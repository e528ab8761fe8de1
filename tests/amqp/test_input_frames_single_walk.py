"""One walk of a transfer's fields answers what two did: ``_transfer_fields`` now also says
whether the transfer is a message's part with more to come (``continued``), which
``_continued`` answered by a second walk of the same fields. A property test holds the one
walk to copies of the two old functions, kept here as the oracle, over transfers encoded
as clients write them and oddly (list0, list8, list32, counts that lie, nulls, fields of
other types, ``more`` as 0x56 0x02), cut short anywhere, in bytes and in memoryviews."""
from __future__ import annotations

import struct

from hypothesis import example, given, settings
from hypothesis import strategies as st
from proton import Data, Described, ulong

from kafka_wire.amqp.input_frames import _TRANSFER_FIELDS, _flag, _number, _transfer_fields
from kafka_wire.amqp.messages import _skip

from .test_input_frames_deferral import anything, transfer_fields

_U32 = struct.Struct(">I")


# The oracle: the two functions as they were (kafka_wire/amqp/input_frames.py at 191e768).
def old_continued(buf: bytes, body: int, stop: int) -> bool:
    try:
        code = buf[body + 3]
        if code == 0xC0:    # list8: size, count
            count, p = buf[body + 5], body + 6
        elif code == 0xD0:  # list32
            count, p = _U32.unpack_from(buf, body + 8)[0], body + 12
        else:               # list0 (more absent: false), or not a list
            return False
        if count < 6:       # (more absent: false)
            return False
        for field in range(min(count, 10)):
            if p >= stop:
                return False
            value = buf[p]
            allowed = _TRANSFER_FIELDS[field]
            if value not in allowed:
                return False
            if field == 5 and not (value == 0x41 or (value == 0x56 and buf[p + 1] == 1)):
                return False  # more: true
            if field == 9 and (value == 0x41 or (value == 0x56 and buf[p + 1] != 0)):
                return False  # aborted: not true
            p = _skip(buf, p)
        return p <= stop
    except Exception:  # noqa: BLE001 - cut short, or a value _skip cannot size
        return False


def old_transfer_fields(buf, body: int, stop: int) -> tuple | None:
    try:
        code = buf[body + 3]
        if code == 0xC0:    # list8: size, count
            count, p = buf[body + 5], body + 6
        elif code == 0xD0:  # list32
            count, p = _U32.unpack_from(buf, body + 8)[0], body + 12
        else:               # list0, or not a list: no handle (proton refuses it)
            return None
        at = []
        for _ in range(min(count, 10)):
            if p >= stop:
                return None
            at.append(p)
            p = _skip(buf, p)
        if p > stop or not at:
            return None
        at += [None] * (10 - len(at))
        tag = None
        if at[2] is not None:
            code = buf[at[2]]
            if code == 0xA0:
                tag = bytes(buf[at[2] + 2:at[2] + 2 + buf[at[2] + 1]])
            elif code == 0xB0:
                tag = bytes(buf[at[2] + 5:at[2] + 5 + _U32.unpack_from(buf, at[2] + 1)[0]])
            elif code != 0x40:
                return None
        handle = _number(buf, at[0])
        if handle is None:
            return None
        return (handle, tag, None if at[3] is None else _number(buf, at[3]),
                at[5] is not None and _flag(buf, at[5]), at[9] is not None and _flag(buf, at[9]))
    except Exception:  # noqa: BLE001 - cut short, or a value of another type
        return None


# One field's encoding, as a client writes it or not: the constructors a transfer's fields
# take, others that _skip sizes, one it hands to proton's decoder, and bytes of nothing.
values = st.one_of(
    st.just(b"\x40"), st.just(b"\x41"), st.just(b"\x42"),
    st.sampled_from([0, 1, 2, 255]).map(lambda b: b"\x56" + bytes([b])),
    st.just(b"\x43"), st.integers(0, 255).map(lambda n: b"\x52" + bytes([n])),
    st.integers(0, 2**32 - 1).map(lambda n: b"\x70" + _U32.pack(n)),
    st.integers(0, 255).map(lambda n: b"\x50" + bytes([n])),
    st.integers(0, 255).map(lambda n: b"\x53" + bytes([n])),
    st.integers(0, 2**64 - 1).map(lambda n: b"\x80" + n.to_bytes(8, "big")),
    st.integers(0, 2**16 - 1).map(lambda n: b"\x60" + n.to_bytes(2, "big")),
    st.binary(max_size=20).map(lambda b: b"\xa0" + bytes([len(b)]) + b),
    st.binary(max_size=20).map(lambda b: b"\xb0" + _U32.pack(len(b)) + b),
    st.text(max_size=6).map(lambda t: b"\xa1" + bytes([len(t.encode())]) + t.encode()),
    st.just(b"\x00\x53\x24\x45"),        # state: accepted (a described list0)
    st.just(b"\x00\x53\x24\xc0\x01\x00"),  # state: accepted (a described empty list8)
    st.just(b"\x71\x00\x00\x00\x07"),    # int
    st.just(b"\x45"),                    # list0
    st.just(b"\x9a"),                    # no type at all (proton's decoder refuses it)
    st.binary(min_size=1, max_size=3),
)


_UINTS = st.one_of(st.just(b"\x43"), st.integers(0, 255).map(lambda n: b"\x52" + bytes([n])),
                  st.integers(0, 2**32 - 1).map(lambda n: b"\x70" + _U32.pack(n)))
_BOOLEANS = st.sampled_from([b"\x41", b"\x42", b"\x56\x00", b"\x56\x01", b"\x56\x02"])
_NULL = st.just(b"\x40")
# Each of a transfer's first ten fields as a client writes it (then an eleventh, batchable).
_CLIENTS = (_UINTS, st.one_of(_UINTS, _NULL),
            st.one_of(_NULL, st.binary(max_size=16).map(lambda b: b"\xa0" + bytes([len(b)]) + b),
                      st.binary(max_size=16).map(lambda b: b"\xb0" + _U32.pack(len(b)) + b)),
            st.one_of(_UINTS, _NULL), st.one_of(_BOOLEANS, _NULL), _BOOLEANS,
            st.one_of(st.sampled_from([b"\x50\x00", b"\x50\x01"]), _NULL),
            st.sampled_from([b"\x40", b"\x00\x53\x24\x45", b"\x00\x53\x24\xc0\x01\x00"]),
            st.one_of(_BOOLEANS, _NULL), st.one_of(_BOOLEANS, _NULL), st.one_of(_BOOLEANS, _NULL))


@st.composite
def clients_fields(draw) -> list:
    """A client's fields, from none to eleven, each now and then of another encoding."""
    # (sampled_from, not integers: hypothesis leans integers towards their ends)
    return [draw(values) if draw(st.sampled_from(range(12))) == 0 else draw(field)
            for field in _CLIENTS[:draw(st.sampled_from(range(len(_CLIENTS) + 1)))]]


@st.composite
def odd_performatives(draw) -> bytes:
    """A transfer's performative (descriptor, list) with fields as a client writes them or
    from ``values``, as list0, list8 or list32, its count the fields' or a lie, and its
    size the fields' or another."""
    fields = draw(st.one_of(clients_fields(), clients_fields(), st.lists(values, max_size=12)))
    count = draw(st.one_of(st.just(len(fields)), st.just(len(fields)), st.integers(0, 12), st.just(255)))
    encoded = b"".join(fields)
    kind = draw(st.sampled_from(["list8", "list8", "list32", "list0"]))
    if kind == "list0":
        return b"\x00\x53\x14\x45" + encoded
    if kind == "list8":
        size = draw(st.one_of(st.just(1 + len(encoded)), st.integers(0, 255)))
        return b"\x00\x53\x14\xc0" + bytes([size % 256, count % 256]) + encoded
    size = draw(st.one_of(st.just(4 + len(encoded)), st.integers(0, 2**32 - 1)))
    return b"\x00\x53\x14\xd0" + _U32.pack(size) + _U32.pack(count) + encoded


def protons(fields: list) -> bytes:
    d = Data()
    d.put_object(Described(ulong(0x14), fields))
    return bytes(d.encode())


performatives = st.one_of(odd_performatives(), transfer_fields().map(protons),
                          st.lists(anything, max_size=12).map(protons))

# The azure-eventhub SDK's (pyamqp's) transfer of a batch's part: list8 of 11 fields, handle
# smalluint, delivery-id uint, 4-byte tag, format 0x80013700, settled and more as 0x56.
SDK_PART = bytes.fromhex("005314c01c0b520270000004d2a004000000057080013700560056014040404040")


@settings(max_examples=1500, deadline=None, derandomize=True)
@example(performative=SDK_PART, payload=b"x" * 20, prefix=8, cut=None, view=False)
@example(performative=SDK_PART.replace(b"\x56\x01\x40", b"\x56\x02\x40"), payload=b"", prefix=0,
         cut=None, view=True)
@given(performatives, st.binary(max_size=30), st.integers(0, 12),
       st.one_of(st.none(), st.integers(0, 200)), st.booleans())
def test_one_walk_answers_as_the_two_did(performative, payload, prefix, cut, view):
    """Whatever the encoding and wherever the bytes at hand stop, the one walk's fields are
    the old ``_transfer_fields``'s, and its ``continued`` is the old ``_continued``'s."""
    buf = b"\x00" * prefix + performative + payload
    stop = len(buf) if cut is None else min(prefix + cut, len(buf))
    if view:
        buf = memoryview(buf)
    new = _transfer_fields(buf, prefix, stop)
    old = old_transfer_fields(buf, prefix, stop)
    continued = old_continued(buf, prefix, stop)
    if new is None:
        assert old is None and not continued
    else:
        assert new[:5] == old
        assert new[5] is continued


def _sdk_fields() -> list[bytes]:
    """SDK_PART's eleven fields, each as encoded."""
    fields, p = [], 6
    while p < len(SDK_PART):
        fields.append(SDK_PART[p:_skip(SDK_PART, p)])
        p += len(fields[-1])
    return fields


@settings(max_examples=600, deadline=None, derandomize=True)
@given(st.sampled_from(range(11)), values, st.booleans())
def test_one_field_of_another_encoding_is_read_as_the_two_did(field, value, view):
    """The SDK's part, one of its fields written anew (of its type or another): the one
    walk answers as the two did (a field of another type than the specification's makes
    the frame no part with more to come)."""
    fields = _sdk_fields()
    fields[field] = value
    encoded = b"".join(fields)
    buf = b"\x00\x53\x14\xc0" + bytes([(1 + len(encoded)) % 256, len(fields)]) + encoded + b"x" * 20
    if view:
        buf = memoryview(buf)
    new = _transfer_fields(buf, 0, len(buf))
    old, continued = old_transfer_fields(buf, 0, len(buf)), old_continued(buf, 0, len(buf))
    assert (new is None and old is None and not continued) or (new[:5] == old and new[5] is continued)
