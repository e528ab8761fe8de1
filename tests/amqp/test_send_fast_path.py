"""The send path's one-pass reading of a batch (``plain_batch``) against the general
decoder it stands in for: for any transfer, hostile ones included, it either declines
(and the general path answers as before, an error included) or yields the events the
general path reads, stored as byte-identical record batches. It also takes every
batch of the shapes the SDKs send, or it would be a shortcut never taken."""
from __future__ import annotations

import struct

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kafka_wire.amqp.messages import MessageError, batch_messages, decode_message, plain_batch
from kafka_wire.eventhubs.events import _HEADS, Incoming, PlainEvents, records_batch

from .conftest import engine_pair

NOW = 1_700_000_000_000


def _binary(body: bytes, wide: bool) -> bytes:
    if wide or len(body) > 255:
        return b"\xb0" + struct.pack(">I", len(body)) + body
    return b"\xa0" + bytes((len(body),)) + body


def _text(code: int, text: bytes) -> bytes:
    """str8/sym8 (0xa1/0xa3) or str32/sym32 (0xb1/0xb3) of ``text``."""
    if code in (0xA1, 0xA3):
        return bytes((code, len(text))) + text
    return bytes((code,)) + struct.pack(">I", len(text)) + text


def _map(code: int, entries: list[bytes], wide: bool, count: int | None = None) -> bytes:
    body = b"".join(entries)
    n = 2 * len(entries) if count is None else count
    if wide:
        return b"\x00\x53" + bytes((code,)) + b"\xd1" + struct.pack(">II", len(body) + 4, n) + body
    return b"\x00\x53" + bytes((code, 0xC1, len(body) + 1, n)) + body


def _data(body: bytes, wide: bool) -> bytes:
    return b"\x00\x53\x75" + _binary(body, wide)


# Headers: the first ones say no more than durable (the SDKs' own is the fourth).
PLAIN_HEADERS = [b"\x00\x53\x70\x45", b"\x00\x53\x70\xc0\x02\x01\x41",
                 b"\x00\x53\x70\xc0\x03\x02\x41\x40", b"\x00\x53\x70\xc0\x07\x05\x56\x01\x40\x40\x40\x40",
                 b"\x00\x53\x70\xd0\x00\x00\x00\x05\x00\x00\x00\x01\x41"]
OTHER_HEADERS = [b"\x00\x53\x70\xc0\x04\x02\x41\x50\x05", b"\x00\x53\x70\x40", b"\x00\x53\x70\xa1\x01x"]
# What else the SDKs' events carry that holds nothing: empty message annotations and
# properties (the JavaScript SDK's, with a list0 header, before each body).
EMPTY_ANNOTATIONS = [_map(0x72, [], False), _map(0x72, [], True)]
EMPTY_PROPERTIES = [b"\x00\x53\x73\x45", b"\x00\x53\x73\xc0\x03\x02\x40\x40",
                    b"\x00\x53\x73\xd0\x00\x00\x00\x06\x00\x00\x00\x02\x40\x40"]
KEY_NAME = b"x-opt-partition-key"
KEY_CODES = [0xA1, 0xA3, 0xB1, 0xB3]
keys = st.one_of(st.none(), st.sampled_from(["k1", "k2", "", "ключ"]))


@st.composite
def key_annotations(draw, key: str) -> tuple[bytes, bool]:
    """Message annotations holding a partition key, in any of its encodings, and whether
    they are the SDKs' (only the key, its name a sym8 and its value text)."""
    name_code = draw(st.sampled_from([0xA3, 0xA3, 0xB3, 0xA1]))
    value_code = draw(st.sampled_from(KEY_CODES + [0x81, 0]))
    if value_code == 0x81:
        value = b"\x81" + struct.pack(">q", 7)  # a long: not a text key
    elif value_code == 0:
        value = _text(0xA1, b"\xff\xfe")  # not UTF-8
    else:
        value = _text(value_code, key.encode())
    entries = [_text(name_code, KEY_NAME) + value]
    if draw(st.integers(0, 5)) == 0:
        entries.append(_text(0xA3, b"x-opt-other") + _text(0xA1, b"v"))
    if draw(st.integers(0, 5)) == 0:
        entries.append(_text(0xA3, KEY_NAME) + _text(0xA1, b"second"))
    count = len(entries) * 2 if draw(st.integers(0, 8)) else draw(st.integers(0, 5))
    sdk = name_code == 0xA3 and value_code in KEY_CODES and len(entries) == 1 and count == 2
    return _map(0x72, entries, draw(st.booleans()), count), sdk


OTHER_SECTIONS = [
    b"\x00\x53\x73\x45",                                 # an empty properties section
    b"\x00\x53\x73\xc0\x03\x02\x40\x40",                 # properties of nulls
    b"\x00\x53\x73\xc0\x04\x01\xa1\x01x",                # a message id
    _map(0x74, [_text(0xA1, b"a") + b"\x54\x01"], False),  # an application property
    _map(0x74, [b"\x54\x01\x54\x02"], False),            # a name that is not a string
    _map(0x71, [_text(0xA3, b"d") + b"\x40"], False),    # delivery annotations
    _map(0x72, [], False),                               # empty message annotations
    _map(0x78, [_text(0xA3, b"f") + b"\x40"], False),    # a footer
    b"\x00\x53\x77\xa1\x02hi",                           # an amqp-value body
    b"\x00\x53\x76\x45",                                 # an amqp-sequence body
    b"\x00\x53\x79\x45",                                 # not a section
    b"\x00\x54\x75\xa0\x00",                             # a descriptor that is not a section's
]


@st.composite
def inner_messages(draw) -> tuple[bytes, bool, str | None]:
    """(an event's encoded message, whether it is of the shapes read in one pass, its
    key): a data body after at most a durable-only header and the key's annotation
    (the SDKs' events), or anything else; sometimes in another order."""
    shape = draw(st.sampled_from(["plain", "header", "keyed", "other", "junk"]))
    body = draw(st.binary(max_size=300))
    if shape == "junk":
        return draw(st.binary(max_size=40)), False, None
    sections = [_data(body, draw(st.booleans()))]
    key = None
    sdk = shape != "other"
    if shape in ("header", "keyed") or draw(st.booleans()):
        header = draw(st.sampled_from(PLAIN_HEADERS + OTHER_HEADERS))
        sections.insert(0, header)
        sdk = sdk and header in PLAIN_HEADERS
    if shape == "keyed":
        key = draw(st.sampled_from(["k1", "k2", "", "ключ"]))
        annotations, canonical = draw(key_annotations(key))
        sections.insert(len(sections) - 1, annotations)
        sdk = sdk and canonical
    elif shape != "other" and draw(st.booleans()):
        sections.insert(len(sections) - 1, draw(st.sampled_from(EMPTY_ANNOTATIONS)))
    if shape != "other" and draw(st.booleans()):
        sections.insert(len(sections) - 1, draw(st.sampled_from(EMPTY_PROPERTIES)))
    if shape != "other" and draw(st.booleans()):  # the sections before the body in any order
        sections = [*draw(st.permutations(sections[:-1])), sections[-1]]
    if shape == "other":
        for _ in range(draw(st.integers(1, 3))):
            extra = draw(st.one_of(st.sampled_from(OTHER_SECTIONS), st.sampled_from(OTHER_HEADERS),
                                   st.binary(max_size=3).map(lambda b: _data(b, False)),
                                   # what reads as one more event if this one is misread
                                   st.binary(max_size=3).map(lambda b: _data(_data(b, True), True)),
                                   st.binary(max_size=3).map(lambda b: _data(_data(b, False), False))))
            sections.insert(draw(st.integers(0, len(sections))), extra)
    if draw(st.integers(0, 6)) == 0:
        sections = draw(st.permutations(sections))
        sdk = False
    return b"".join(sections), sdk, key


@st.composite
def sdk_events(draw) -> list[tuple[bytes, bool, str | None]]:
    """Events of the shapes the SDKs send, alike or not, keyed or not, and near misses:
    a header saying more, annotations not only the key's, more after the body."""
    out = []
    for _ in range(draw(st.integers(1, 6))):
        body = draw(st.sampled_from([b"", b"x", b"y" * 250, b"z" * 300]))
        wide = draw(st.booleans())
        key = draw(keys)
        header = draw(st.sampled_from([b"", PLAIN_HEADERS[3], PLAIN_HEADERS[0], PLAIN_HEADERS[4],
                                       OTHER_HEADERS[0]]))
        sdk = header != OTHER_HEADERS[0]
        js = draw(st.booleans())  # the JavaScript SDK's: empty annotations and properties too
        properties = EMPTY_PROPERTIES[0] if js else b""
        if key is None:
            message = header + (EMPTY_ANNOTATIONS[1] if js else b"") + properties + _data(body, wide)
        else:
            if draw(st.booleans()):
                ann, canonical = draw(key_annotations(key))
                sdk = sdk and canonical
            else:
                ann = _map(0x72, [_text(0xA3, KEY_NAME) + _text(0xA1, key.encode())], js)
            message = header + ann + properties + _data(body, wide)
        if draw(st.integers(0, 4)) == 0:  # what reads as one more event if this one is misread
            message += _data(_data(b"", wide), wide)
            sdk = False
        out.append((message, sdk, key))
    return out


@st.composite
def transfers(draw) -> tuple[bytes, bool]:
    """(a transfer's bytes, whether the one-pass reading must take it): a batch of
    events, with the batch's own header and partition key or not, then maybe damaged."""
    events = draw(st.one_of(st.lists(inner_messages(), min_size=1, max_size=8), sdk_events()))
    same = draw(st.booleans())
    if same:  # the SDKs' batches: alike events
        events = [events[0]] * draw(st.integers(1, 6))
    outer_key = draw(keys)
    prefix = []
    if draw(st.booleans()):
        prefix.append(draw(st.sampled_from(PLAIN_HEADERS + OTHER_HEADERS[:1])))
    if outer_key is not None:
        prefix.append(_map(0x72, [_text(0xA3, KEY_NAME) + _text(0xA1, outer_key.encode())],
                           draw(st.booleans())))
    if draw(st.integers(0, 4)) == 0:
        prefix.append(draw(st.sampled_from(OTHER_SECTIONS)))
    wide = draw(st.sampled_from([True, False, None]))  # the batch's data sections: all alike or not
    data = [_data(raw, draw(st.booleans()) if wide is None else wide) for raw, _sdk, _key in events]
    raw = b"".join(prefix + data)
    expected = all(sdk for _raw, sdk, _key in events) and len(
        {k if k is not None else outer_key for _raw, _sdk, k in events}) == 1
    damage = draw(st.sampled_from(["none", "none", "none", "cut", "append", "flip", "suffix"]))
    if damage == "cut":
        raw = raw[:draw(st.integers(0, max(0, len(raw) - 1)))]
    elif damage == "append":
        raw += draw(st.binary(min_size=1, max_size=12))
    elif damage == "flip" and raw:
        at = draw(st.integers(0, len(raw) - 1))
        raw = raw[:at] + bytes((draw(st.integers(0, 255)),)) + raw[at + 1:]
    elif damage == "suffix":
        raw += draw(st.sampled_from(OTHER_SECTIONS))
    return raw, expected and damage == "none" and not (prefix and prefix[-1] in OTHER_SECTIONS)


_KEYED_K1 = PLAIN_HEADERS[3] + _map(0x72, [_text(0xA3, KEY_NAME) + _text(0xA1, b"k1")], False)


def _general(raw: bytes):
    """What the send path reads without the shortcut (kafka_wire.amqp.publish): the
    events, or the error it answers with."""
    try:
        outer = decode_message(raw)
        return batch_messages(outer) or [outer]
    except MessageError as exc:
        return str(exc)


def _check(raw: bytes) -> PlainEvents | None:
    fast = plain_batch(memoryview(bytearray(raw)))  # never raises, whatever the bytes
    if fast is None:
        return None
    slow = _general(raw)
    assert not isinstance(slow, str), f"read in one pass, refused by the general path: {slow}"
    assert len(fast) == len(slow)
    assert [fast.key] * len(slow) == [m.partition_key for m in slow]
    assert bytes(records_batch(fast, NOW)) == bytes(records_batch(slow, NOW))
    return fast


@settings(max_examples=1500, deadline=None, derandomize=True)
@example((b"\x00\x53\x75\xb0\x00\x00\x00\x08\x00\x53\x75\xb0\x00\x00\x00\x00", True))
@example((b"\x00\x53\x75\xb0\x00\x00\x00\x08\x00\x53\x75\xb0\x00\x00\x00\x01", False))
@example((b"\x00\x53\x75\xa0\x05\x00\x53\x75\xa0\x00" * 3, True))
@example((b"\x00\x53\x75\xa0\x00", False))
# an event with more after its body, which would read as one more event
@example((_data(_data(b"x", False) + _data(_data(b"", False), False), False), False))
@example((_data(_data(b"x", True) + _data(_data(b"", True), True), True), False))
# an event with its own key, then one without (the batch has none): keys differ
@example((_data(_KEYED_K1 + _data(b"a", True), True) + _data(_data(b"b", True), True), False))
@example((_data(_KEYED_K1 + _data(b"a", False), False) + _data(_data(b"b", False), False), False))
# properties that hold something; annotations whose count says no entries, before a key's
@example((_data(b"\x00\x53\x73\xc0\x04\x01\xa1\x01x" + _data(b"a", True), True), False))
@example((_data(_map(0x72, [_text(0xA3, KEY_NAME) + _text(0xA1, b"k")], False, 0) + _data(b"a", True), True),
          False))
@given(transfers())
def test_one_pass_reading_is_the_general_paths(case):
    raw, expected = case
    fast = _check(raw)
    if expected:
        assert fast is not None, "a batch of the SDKs' shapes missed the one-pass reading"


@settings(max_examples=500, deadline=None, derandomize=True)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_are_declined_or_read_as_the_general_path_reads_them(raw):
    _check(raw)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.binary(max_size=2000), min_size=1, max_size=40), keys,
       st.sampled_from([b"", PLAIN_HEADERS[3]]), st.booleans())
def test_sdk_batches_are_read_in_one_pass(bodies, key, header, wide):
    """Batches as azure-eventhub encodes them: each event a data section (after a
    durable header and the key's annotation when the batch has a key), in data sections
    of the batch message, whose own header and annotations carry the key."""
    annotations = b"" if key is None else _map(0x72, [_text(0xA3, KEY_NAME) + _text(0xA1, key.encode())],
                                               False)
    inner = [(header if key is not None else b"") + annotations + _data(b, wide) for b in bodies]
    raw = (header + annotations if key is not None else b"") + b"".join(_data(m, wide) for m in inner)
    fast = _check(raw)
    assert fast is not None and fast.key == key and [bytes(b) for b in fast.bodies] == bodies


@settings(max_examples=200, deadline=None, derandomize=True)
@example(sizes=[5] * 9000, key=None)  # offset deltas of one, two and three bytes
@example(sizes=[0, 1] * 8200, key="k")  # more than the log's table of small varints
@example(sizes=[70] * 70 + [3000] * 3 + [0], key="k")
@given(sizes=st.lists(st.sampled_from([0, 1, 63, 64, 127, 128, 300, 8191, 8192, 20000]), min_size=1,
                      max_size=150), key=keys)
def test_plain_events_are_stored_as_their_incoming_events_are(sizes, key):
    bodies = [memoryview(bytes([i % 251]) * n) for i, n in enumerate(sizes)]
    events = [Incoming(key, [], body, [body], None) for body in bodies]
    assert bytes(records_batch(PlainEvents(key, bodies), NOW)) == bytes(records_batch(events, NOW))


def test_a_kept_receive_view_is_never_overwritten():
    """The send path reads each transfer into a buffer it reuses; a view of one still
    alive (kept past its use) makes the next transfer take a buffer of its own."""
    from kafka_wire.amqp import nodes
    from kafka_wire.amqp.nodes import received_view

    sender, receiver, pump, _client, _server = engine_pair("sender")
    got = []
    for tag, payload in ((b"1", b"a" * 5000), (b"2", b"b" * 3000), (b"3", b"c" * 4000)):
        sender.delivery(tag)
        sender.send(payload)
        sender.advance()
        pump()
        view = received_view(receiver, receiver.current)
        assert view is not None and bytes(view) == payload
        got.append((payload, view))
    assert [bytes(v) for _p, v in got] == [p for p, _v in got]  # each still as it came
    first, second = got[0][1], got[1][1]
    assert first.obj is not second.obj  # the kept view's buffer was not reused
    del got, first, second, view
    sender.delivery(b"4")
    sender.send(b"d" * 100)
    sender.advance()
    pump()
    again = received_view(receiver, receiver.current)
    assert bytes(again) == b"d" * 100
    assert again.obj is nodes._scratch.buf  # reused once nothing holds it


def _sdk_batch(bodies: list[bytes], key: str | None, wide: bool = True) -> bytes:
    annotations = b"" if key is None else _map(0x72, [_text(0xA3, KEY_NAME) + _text(0xA1, key.encode())],
                                               False)
    head = PLAIN_HEADERS[3] + annotations if key is not None else b""
    return head + b"".join(_data(head + _data(b, wide), wide) for b in bodies)


@settings(max_examples=150, deadline=None, derandomize=True)
@example(count=8193, size=3, key=None, at=None, column=0, value=0)  # offset deltas of 1, 2 and 3 bytes
@example(count=70, size=0, key="k", at=69, column=0, value=0)
@given(count=st.sampled_from([2, 3, 63, 64, 65, 130]), size=st.sampled_from([0, 1, 5, 240, 300]),
       key=keys, at=st.one_of(st.none(), st.integers(0, 129)), column=st.integers(0, 60),
       value=st.integers(0, 255))
def test_batches_of_alike_events_are_read_as_the_general_path_reads_them(count, size, key, at, column,
                                                                          value):
    """Equal-sized events read together (a regular expression checks they begin alike),
    and such a batch with one byte of one event changed, before its body or in it."""
    raw = bytearray(_sdk_batch([bytes([i % 256]) * size for i in range(count)], key, wide=size % 2 == 0))
    if at is not None:
        prefix = len(_sdk_batch([], key))
        event_size = (len(raw) - prefix) // count
        raw[prefix + (at % count) * event_size + column % event_size] = value
    fast = _check(bytes(raw))
    if at is None:  # (read together: the bodies' one size is known)
        assert fast is not None and len(fast) == count and fast.key == key and fast.size == size


@settings(max_examples=100, deadline=None, derandomize=True)
@example([(5000, 3, None), (4500, 3, None), (5000, 3, None), (10, 3, "k")])  # longer than those kept
@given(st.lists(st.tuples(st.integers(1, 300), st.sampled_from([0, 1, 64, 1000]), keys), min_size=1,
                max_size=12))
def test_records_of_alike_events_are_the_same_however_their_heads_were_kept(batches):
    """The heads of equal-sized records are kept from batch to batch (longer or shorter
    batches, other sizes and keys between): always what the general path writes."""
    for count, size, key in batches:
        bodies = [bytes([i % 256]) * size for i in range(count)]
        events = [Incoming(key, [], b, [b], None) for b in bodies]
        assert bytes(records_batch(PlainEvents(key, bodies, size), NOW)) == bytes(records_batch(events, NOW))
        assert size in [s for s, _key in _HEADS]  # kept for the next batch


def test_alike_events_with_long_heads_are_read_one_at_a_time():
    """Events whose bytes before the body are long (a durable header padded with 300
    nulls) are not read with a pattern (they would fill its cache): one at a time, still
    as the general path reads them."""
    header = b"\x00\x53\x70\xd0" + struct.pack(">II", 4 + 301, 301) + b"\x41" + b"\x40" * 300
    raw = b"".join(_data(header + _data(b"body", False), True) for _ in range(5))
    fast = _check(raw)
    assert fast is not None and len(fast) == 5 and fast.size is None
    short = _check(b"".join(_data(PLAIN_HEADERS[4] + _data(b"body", False), True) for _ in range(5)))
    assert short is not None and short.size == 4


@settings(max_examples=200, deadline=None, derandomize=True)
@example([([3] * 70 + [9000] + [5], None)])  # a body past the tables: the loop
@example([([64, 63] * 4200, "k")])  # offset deltas of one, two and three bytes
@example([([100, 200, 300], None), ([5000, 1], None), ([4, 5, 6000, 7], None)])  # tables grow
@given(st.lists(st.tuples(
    st.lists(st.one_of(st.integers(0, 300), st.sampled_from([63, 64, 127, 128, 8190, 8191, 8192, 8193])),
             min_size=1, max_size=150),
    st.one_of(keys, st.text(min_size=1, max_size=140))), min_size=1, max_size=12))
def test_records_of_mixed_sizes_are_the_general_encoders(batches):
    """Bodies of differing sizes are stored with each record's parts looked up in tables
    kept by record layout and by key (grown as larger bodies come, dropped when many
    keys' layouts come): always what the general path writes, batch after batch."""
    for sizes, key in batches:
        bodies = [memoryview(bytes([i % 251]) * n) for i, n in enumerate(sizes)]
        events = [Incoming(key, [], b, [b], None) for b in bodies]
        assert bytes(records_batch(PlainEvents(key, bodies), NOW)) == bytes(records_batch(events, NOW))


@settings(max_examples=300, deadline=None, derandomize=True)
# a byte of the second event's outer head, outer length, inner head (binary8, binary32)
@example(sizes=[30, 40, 50], key=None, wide=False, at=(1, 6), value=0x99)
@example(sizes=[30, 40, 50], key=None, wide=False, at=(1, 4), value=0x10)
@example(sizes=[300, 400, 500], key=None, wide=True, at=(1, 9), value=0x99)
@example(sizes=[300, 400, 500], key=None, wide=True, at=(1, 7), value=0x10)
@example(sizes=[300, 400, 500], key="k", wide=True, at=(2, 1), value=0x52)  # keyed: the outer head
@given(sizes=st.lists(st.one_of(st.integers(0, 255), st.integers(0, 400)), min_size=2, max_size=40), key=keys,
       wide=st.sampled_from([True, True, False, None]),
       at=st.one_of(st.none(), st.tuples(st.integers(0, 39), st.one_of(st.integers(0, 8), st.integers(0, 80),
                                                                       st.integers(0, 500)))),
       value=st.integers(0, 255))
def test_batches_of_mixed_sizes_are_read_as_the_general_path_reads_them(sizes, key, wide, at, value):
    """Events of differing sizes: unkeyed ones read in a loop of their own while each is a
    data section holding only a data section (both of binary32, or both of binary8), keyed
    ones as the event before them but for their lengths; and such a batch with one byte
    of one event changed (most often before its body): declined, or read as the general
    path reads it."""
    annotations = b"" if key is None else _map(0x72, [_text(0xA3, KEY_NAME) + _text(0xA1, key.encode())],
                                               False)
    head = PLAIN_HEADERS[3] + annotations if key is not None else b""
    bodies = [bytes([i % 256]) * n for i, n in enumerate(sizes)]
    shapes = [(i % 3 == 0) if wide is None else wide for i in range(len(sizes))]
    events = [_data(head + _data(b, w), w) for b, w in zip(bodies, shapes)]
    raw = bytearray(head + b"".join(events))
    if at is not None:
        event, column = at[0] % len(events), at[1] % len(events[at[0] % len(events)])
        raw[len(head) + sum(map(len, events[:event])) + column] = value
    fast = _check(bytes(raw))
    if at is None:
        assert fast is not None and fast.key == key and [bytes(b) for b in fast.bodies] == bodies
