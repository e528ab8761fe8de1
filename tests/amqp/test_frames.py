"""The frame shims around proton: outgoing performatives padded to full length (what
the SDKs' pyamqp indexes), incoming frames scanned (property-based, against proton's codec)."""
from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st
from proton import Data, Described, symbol, uint, ulong

from kafka_wire.amqp.frames import FIELDS, FramePadder
from kafka_wire.amqp.input_frames import InputFrames

HEADER = b"AMQP\x00\x01\x00\x00"
values = st.one_of(st.none(), st.integers(0, 2**31), st.text(max_size=20), st.booleans())


def frame(code: int, fields: list, payload: bytes = b"", channel: int = 0) -> bytes:
    d = Data()
    d.put_object(Described(ulong(code), fields))
    body = bytes(d.encode()) + payload
    return struct.pack(">IBBH", 8 + len(body), 2, 0, channel) + body


def parse(data: bytes) -> list[tuple[int, list, bytes]]:
    out, pos = [], 0
    while pos < len(data):
        size = struct.unpack_from(">I", data, pos)[0]
        body = data[pos + 8:pos + size]
        d = Data()
        used = d.decode(body)
        d.rewind()
        d.next()
        performative = d.get_object()
        # (a binary field is a view of the decoder's buffer: copied before it is freed)
        fields = [bytes(v) if isinstance(v, memoryview) else v for v in performative.value]
        out.append((int(performative.descriptor), fields, body[used:]))
        pos += size
    assert pos == len(data), "frame sizes must add up"
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(sorted(FIELDS)), st.lists(values, max_size=14),
                          st.binary(max_size=300)), min_size=1, max_size=6),
       st.integers(1, 64))
def test_padded_frames_carry_every_field_and_the_same_payload(frames, chunk):
    sent = [(code, fields[:FIELDS[code]], payload if code == 0x14 else b"")
            for code, fields, payload in frames]
    raw = HEADER + b"".join(frame(c, f, p) for c, f, p in sent)
    padder = FramePadder()
    out = b"".join(padder.feed(raw[i:i + chunk]) for i in range(0, len(raw), chunk))
    assert out[:8] == HEADER
    for (code, fields, payload), (got_code, got_fields, got_payload) in zip(sent, parse(out[8:])):
        assert got_code == code and got_payload == payload
        assert len(got_fields) == FIELDS[code]
        assert got_fields[:len(fields)] == fields and set(got_fields[len(fields):]) <= {None}


def test_frames_on_an_ended_channel_are_dropped_but_the_connections_close_is_not():
    scanner = InputFrames(max_frame=65536)
    attach = frame(0x12, ["link", 0, False, None, None, None, None, None, None, None, None, None,
                          "com.microsoft:enable-receiver-runtime-metric"], channel=1)
    end = frame(0x17, [None], channel=1)
    detach = frame(0x16, [0, True], channel=1)
    close = frame(0x18, [None], channel=1)
    passed = scanner.feed(HEADER + attach + end + detach + close)
    assert passed == HEADER + attach + end + close
    assert scanner.dropped == 1
    assert "com.microsoft:enable-receiver-runtime-metric" in scanner.capabilities["link"]


@settings(max_examples=200, deadline=None)
@given(st.lists(values, min_size=1, max_size=11), st.binary(max_size=2000), st.integers(1, 97))
def test_transfers_in_list8_form_are_padded_on_the_fast_path(fields, payload, chunk):
    """Proton writes a transfer's fields as a list8; that shape has its own path."""
    d = Data()
    d.put_list()
    d.enter()
    for value in fields:
        d.put_object(value)
    d.exit()
    items = bytes(d.encode())
    # re-encode the list as list8: constructor, size (count byte + items), count
    inner = items[9:] if items[0] == 0xD0 else items[3:] if items[0] == 0xC0 else b""
    list8 = bytes((0xC0, len(inner) + 1, len(fields))) + inner
    body = b"\x00\x53\x14" + list8 + payload
    raw = HEADER + struct.pack(">IBBH", 8 + len(body), 2, 0, 3) + body
    padder = FramePadder()
    out = b"".join(padder.feed(raw[i:i + chunk]) for i in range(0, len(raw), chunk))
    ((code, got_fields, got_payload),) = parse(out[8:])
    assert code == 0x14 and got_payload == payload and len(got_fields) == 11
    assert got_fields[:len(fields)] == fields and set(got_fields[len(fields):]) <= {None}
    assert struct.unpack_from(">H", out, 8 + 6)[0] == 3  # the channel is kept


def _error(condition: str, description: str | None) -> Described:
    fields = [symbol(condition)] + ([description] if description is not None else [])
    return Described(ulong(0x1D), fields)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["amqp:link:message-size-exceeded", "com.microsoft:server-busy"]),
       st.one_of(st.none(), st.text(max_size=80)), st.integers(0, 2**31), st.integers(1, 64))
def test_errors_in_rejections_detaches_and_closes_carry_all_three_fields(condition, description,
                                                                        delivery, chunk):
    error = _error(condition, description)
    sent = [(0x15, [True, uint(delivery), None, True, Described(ulong(0x25), [error])]),
            (0x16, [uint(1), True, error]), (0x17, [error]), (0x18, [error])]
    raw = HEADER + b"".join(frame(code, fields) for code, fields in sent)
    padder = FramePadder()
    out = b"".join(padder.feed(raw[i:i + chunk]) for i in range(0, len(raw), chunk))
    got = parse(out[8:])
    errors = [got[0][1][4].value[0]] + [fields[2 if code == 0x16 else 0] for code, fields, _ in got[1:]]
    assert [code for code, _, _ in got] == [0x15, 0x16, 0x17, 0x18]
    assert all(len(fields) == FIELDS[code] for code, fields, _ in got)
    assert got[0][1][:4] == [True, delivery, None, True]
    for e in errors:
        assert e.descriptor == 0x1D and e.value == [condition, description, None]


# -- receivers' payloads put into their empty transfers (FramePadder.payloads) ------------
def _uint(n: int) -> bytes:
    return b"\x43" if n == 0 else (b"\x52" + bytes((n,)) if n < 256 else b"\x70" + n.to_bytes(4, "big"))


def transfer8(handle: int, delivery_id: int, tag: bytes, payload: bytes = b"") -> bytes:
    """A transfer as proton writes it: list8 fields after a smallulong descriptor."""
    items = _uint(handle) + _uint(delivery_id) + b"\xa0" + bytes((len(tag),)) + tag + b"\x43\x42"
    body = b"\x00\x53\x14\xc0" + bytes((len(items) + 1, 5)) + items + payload
    return struct.pack(">IBBH", 8 + len(body), 2, 0, 0) + body


transfers = st.lists(st.tuples(st.sampled_from(["ours", "carried", "other"]), st.integers(0, 70000),
                               st.binary(min_size=1, max_size=40), st.booleans()),
                     min_size=1, max_size=30)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(transfers, st.integers(1, 64))
def test_each_empty_transfer_of_ours_gets_its_payload_and_nothing_else_is_touched(items, chunk):
    """Ours: empty, its payload in ``payloads`` by tag. Carried: ours that proton carried
    itself (an entry without a payload, recorded written). Other: another link's
    transfer, whose tag may be one of ours (it must keep its own payload and leave
    ours in place). In proton's list8 and in a list32 encoding, in any chunks."""
    padder = FramePadder()
    owner = object()
    raw, expected = [HEADER], []
    number = 0
    later = [b"e%d" % n for n, item in enumerate(items) if item[0] == "ours"]
    for n, (kind, delivery_id, payload, list32) in enumerate(items):
        tag = b"e%d" % n
        if kind == "ours":
            later.remove(tag)
        elif kind == "other" and later:
            tag = later[-1]  # the tag of one of ours still to come: it must wait for that one
        encode = (lambda t, p: frame(0x14, [uint(n), uint(delivery_id), t, uint(0), False], p)) if list32 \
            else (lambda t, p: transfer8(n, delivery_id, t, p))
        if kind == "ours":
            number += 1
            padder.payloads[tag] = (payload, owner, number)
            raw.append(encode(tag, b""))
        elif kind == "carried":
            number += 1
            padder.payloads[tag] = (None, owner, number)
            raw.append(encode(tag, payload))
        else:
            raw.append(encode(tag, payload))
        expected.append((tag, payload))
    # the frames of ours arrive in the order their entries were made, the others between
    data = b"".join(raw)
    out = b"".join(padder.feed(data[i:i + chunk]) for i in range(0, len(data), chunk))
    frames = parse(out[8:])
    got = [(fields[2], payload) for _code, fields, payload in frames]
    assert [len(fields) for _c, fields, _p in frames] == [11] * len(items)
    assert got == expected
    assert padder.payloads == {} and padder.lost == 0
    assert padder.written == ({owner: number} if number else {})


def test_an_empty_transfer_without_its_payload_is_counted_and_logged_once(caplog):
    """A receiver's empty transfer whose payload the padder does not hold would reach
    the client as an empty event: a bug, so it is said (once a minute per client)."""
    padder = FramePadder("127.0.0.1:5000")
    padder.payloads[b"e9"] = (b"later", object(), 9)  # (transfers are looked at while any is held)
    data = HEADER + transfer8(0, 7, b"e7") + transfer8(0, 8, b"e8")
    with caplog.at_level("WARNING", logger="kafka_wire.amqp.frames"):
        out = padder.feed(data)
    assert [fields[2] for _code, fields, _p in parse(out[8:])] == [b"e7", b"e8"]
    assert padder.lost == 2 and list(padder.payloads) == [b"e9"]
    lines = [r.getMessage() for r in caplog.records if "without its event" in r.getMessage()]
    assert len(lines) == 1 and "127.0.0.1:5000" in lines[0] and "b'e7'" in lines[0], lines


_TRANSFERS = (HEADER + frame(0x12, ["to-hub", 0, False], channel=1)
              + frame(0x14, [0, 0, b"t1", 0, False, True], b"a" * 300, channel=1)
              + frame(0x14, [0, 0, None, None, False, False], b"b" * 200, channel=1)
              + frame(0x17, [None], channel=1)
              + frame(0x14, [0, 1, b"t2", 0, False, False], b"c" * 250, channel=1)  # after its end
              + frame(0x14, [0, 0, b"t3", 0, False, False], b"d" * 100, channel=2)
              + frame(0x18, [None], channel=1))


def _fed(chunks: list[bytes]) -> tuple[bytes, int]:
    scanner = InputFrames(max_frame=65536)
    parts = [part for chunk in chunks for part in scanner.feed_parts(chunk)]
    return b"".join(parts), scanner.dropped


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, len(_TRANSFERS)), max_size=12).map(sorted))
def test_transfers_passed_on_as_they_come_are_the_frames_held_whole(cuts):
    """A transfer frame is passed on as its bytes come (not held until it is whole) unless
    its channel was ended: cut anywhere, the scanner hands proton the same bytes, and
    drops the same frame, as when every frame comes whole."""
    bounds = [0, *cuts, len(_TRANSFERS)]
    whole = _fed([_TRANSFERS])
    assert whole[1] == 1 and b"c" * 250 not in whole[0] and b"d" * 100 in whole[0]
    assert _fed([_TRANSFERS[a:b] for a, b in zip(bounds, bounds[1:])]) == whole
    # A feed says whether it ended a frame (or the protocol header): else the connection
    # does not pump proton, which has nothing to do.
    ends, pos = [len(HEADER)], len(HEADER)
    while pos < len(_TRANSFERS):
        pos += struct.unpack_from(">I", _TRANSFERS, pos)[0]
        ends.append(pos)
    scanner = InputFrames(max_frame=65536)
    for a, b in zip(bounds, bounds[1:]):
        scanner.feed_parts(_TRANSFERS[a:b])
        assert scanner.ended == any(a < e <= b for e in ends), (a, b)


# Any AMQP value a hostile client may put where a performative's field list belongs, or in
# the fields InputFrames reads (open's max-frame-size, attach's name and capabilities).
# (Drawn as plain values and tagged tuples, made AMQP types in the test: hypothesis keeps
# drawn values by type, and proton's str and int subclasses are not among its types.)
_any_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**63 - 1), st.text(max_size=10),
              st.binary(max_size=10), st.tuples(st.just("uint"), st.integers(0, 2**32 - 1)),
              st.tuples(st.just("symbol"), st.text(st.characters(max_codepoint=127), max_size=10))),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=10)


def _amqp(value):
    if isinstance(value, tuple):
        return uint(value[1]) if value[0] == "uint" else symbol(value[1])
    if isinstance(value, list):
        return [_amqp(v) for v in value]
    if isinstance(value, dict):
        return {k: _amqp(v) for k, v in value.items()}
    return value


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.sampled_from([0x10, 0x11, 0x12, 0x14, 0x17]), st.one_of(_any_value, st.lists(_any_value, max_size=14)),
       st.integers(1, 64))
def test_any_value_in_a_clients_performative_is_passed_to_proton_not_raised(code, value, chunk):
    """InputFrames reads open, attach and transfer fields before proton: whatever a client
    puts there (a described null, a number, a string for max-frame-size) it passes on for
    proton to answer, and never raises (a raise closed the socket with no AMQP answer)."""
    d = Data()
    d.put_object(Described(ulong(code), _amqp(value)))
    body = bytes(d.encode())
    data = HEADER + struct.pack(">IBBH", 8 + len(body), 2, 0, 0) + body
    scanner = InputFrames(max_frame=65536)
    out = b"".join(scanner.feed(data[i:i + chunk]) for i in range(0, len(data), chunk))
    assert out.startswith(HEADER)
    if code != 0x10:  # (an open with a uint max-frame-size is written anew, smaller)
        assert out == data
