"""The AMQP ⇄ record mapping, checked against proton's own codec (property-based)."""
from __future__ import annotations

import string

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch
from proton import Data, Message, symbol

from kafka_wire.amqp.messages import (batch_messages, decode_message, encode_event, is_batch,
                                      runtime_metric_annotations, split_batch)
from kafka_wire.eventhubs.events import records_batch, with_publisher
from kafka_wire.log import batch as rb

names = st.text(string.ascii_letters + string.digits + "-_.", min_size=1, max_size=300)
amqp_values = st.one_of(st.text(max_size=300), st.integers(-2**63, 2**63 - 1), st.booleans(),
                        st.binary(max_size=300), st.floats(allow_nan=False), st.none())


def encoded(value) -> bytes:
    d = Data()
    d.put_object(value)
    return bytes(d.encode())


def decoded(raw: bytes) -> Message:
    m = Message()
    m.decode(raw)
    return m


@settings(max_examples=300, deadline=None, derandomize=True)
@example(sequence=0, offset=0, enqueued=0, key=None, value=None, headers={"0": b"s\x00\x11\x00\x00"},
         amqp=True, metric=False)  # a char past U+10FFFF: sent as binary, not as a broken char
@given(sequence=st.integers(0, 2**62), offset=st.integers(0, 2**62), enqueued=st.integers(0, 2**45),
       key=st.one_of(st.none(), st.text(max_size=300).map(str.encode), st.binary(max_size=20)),
       value=st.one_of(st.none(), st.binary(max_size=3000)),
       headers=st.dictionaries(names, st.one_of(st.none(), st.binary(max_size=300)), max_size=6),
       amqp=st.booleans(), metric=st.booleans())
def test_encoded_events_decode_with_proton(sequence, offset, enqueued, key, value, headers, amqp,
                                           metric):
    pairs = list(headers.items())
    extra = runtime_metric_annotations(sequence, offset, enqueued, enqueued + 5) if metric else b""
    m = decoded(encode_event(sequence, offset, enqueued, key, value, pairs, amqp, extra))
    ann = m.annotations
    assert ann[symbol("x-opt-sequence-number")] == sequence
    assert ann[symbol("x-opt-offset")] == str(offset)
    when = ann[symbol("x-opt-enqueued-time")]
    assert type(when).__name__ == "timestamp" and int(when) == enqueued  # AMQP timestamp, ms
    try:
        text_key = None if key is None else key.decode("utf-8")
    except UnicodeDecodeError:
        text_key = None
    assert ann.get(symbol("x-opt-partition-key")) == text_key
    assert bytes(m.body) == (value or b"")
    props = m.properties or {}
    for name, raw in pairs:
        got = props[name]
        if raw is None:
            assert got is None
        elif not amqp:
            assert bytes(got) == raw  # a Kafka header: binary, as written
    if metric:
        assert m.instructions[symbol("last_enqueued_sequence_number")] == sequence
        assert m.instructions[symbol("last_enqueued_offset")] == str(offset)


@settings(max_examples=200, deadline=None)
@given(props=st.dictionaries(names, amqp_values, max_size=6),
       key=st.one_of(st.none(), st.text(max_size=100)), body=st.binary(max_size=2000),
       content_type=st.one_of(st.none(), st.text(  # a symbol: ASCII (proton's C strings end at NUL)
           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/+;=-.", min_size=1,
           max_size=40).filter(lambda t: t != "None")),
       message_id=st.one_of(st.none(), st.text(st.characters(min_codepoint=1, blacklist_categories=("Cs",)),
                                                     min_size=1, max_size=40)))
def test_sent_messages_become_records_and_come_back_typed(props, key, body, content_type, message_id):
    """SDK message → record (AMQP-encoded header values, key, value) → the message a
    receiver gets: the same body, key, typed properties and message properties
    (content type, message id)."""
    m = Message(body=body, properties=props, inferred=True)
    if content_type is not None:  # (proton would write the text "None" for None)
        m.content_type = content_type
    if message_id is not None:
        m.id = message_id
    if key is not None:
        m.annotations = {symbol("x-opt-partition-key"): key}
    incoming = decode_message(bytes(m.encode()))
    assert incoming.body == body and incoming.partition_key == key
    batch = records_batch([incoming], now_ms=1_700_000_000_000)
    header = rb.parse_header(batch, 0)
    assert header.attributes & rb.AMQP_HEADERS_BIT
    (record,) = list(DefaultRecordBatch(bytes(batch)))
    assert record.value == body and record.key == (None if key is None else key.encode())
    application = {n: v for n, v in record.headers if n != rb.AMQP_PROPERTIES_HEADER}
    assert application == {n: encoded(v) for n, v in props.items()}  # as Azure gives Kafka
    assert (rb.AMQP_PROPERTIES_HEADER in dict(record.headers)) == bool(content_type or message_id)
    back = decoded(encode_event(0, 0, 0, record.key, record.value, record.headers, True))
    assert bytes(back.body) == body
    got_type = None if back.content_type in (None, "None") else back.content_type  # proton's "unset"
    assert (got_type, back.id) == (content_type, message_id)
    for n, v in props.items():
        got = back.properties[n]
        assert (bytes(got) if isinstance(v, bytes) else got) == v


def test_the_sdk_batch_format_splits_into_its_messages():
    inner = [Message(body=f"e{i}".encode(), properties={"i": i}, inferred=True) for i in range(3)]
    outer = Message(body=None)
    outer.annotations = {symbol("x-opt-partition-key"): "pk"}
    raw = bytes(outer.encode())
    for m in inner:  # each data section one encoded message, as the SDKs batch
        section = bytes(m.encode())
        raw += b"\x00\x53\x75\xb0" + len(section).to_bytes(4, "big") + section
    message = decode_message(raw)
    assert is_batch(message)
    parts = split_batch(message)
    assert [p.body for p in parts] == [b"e0", b"e1", b"e2"]
    assert {p.partition_key for p in parts} == {"pk"}
    assert batch_messages(message) == parts  # the send path's one-pass version
    assert not is_batch(decode_message(bytes(Message(body=b"\x00\x53\x75plain", inferred=True).encode())))


def test_a_batch_whose_events_have_a_key_that_is_not_a_string_keeps_it():
    """Each inner message's number key: no key for routing, and back to a receiver as sent."""
    inner = []
    for i in range(3):
        m = Message(body=f"e{i}".encode(), inferred=True)
        m.annotations = {symbol("x-opt-partition-key"): 40 + i}
        inner.append(m)
    raw = bytes(Message(body=None).encode())
    for m in inner:
        section = bytes(m.encode())
        raw += b"\x00\x53\x75\xb0" + len(section).to_bytes(4, "big") + section
    parts = batch_messages(decode_message(raw))
    assert parts == split_batch(decode_message(raw))
    assert [p.partition_key for p in parts] == [None] * 3
    records = list(DefaultRecordBatch(bytes(records_batch(parts, now_ms=1_700_000_000_000))))
    assert [r.key for r in records] == [None] * 3
    back = [decoded(encode_event(i, i, 0, r.key, r.value, r.headers, True)) for i, r in enumerate(records)]
    assert [b.annotations[symbol("x-opt-partition-key")] for b in back] == [40, 41, 42]
    assert [bytes(b.body) for b in back] == [b"e0", b"e1", b"e2"]


def test_a_key_the_event_is_stored_by_replaces_one_that_was_not_a_string():
    """An inner message's number key under a batch's text key: the event is stored by the
    batch's key, and the delivered message holds that one key (a map holds a key once)."""
    inner = Message(body=b"event", inferred=True)
    inner.annotations = {symbol("x-opt-partition-key"): 5, symbol("mine"): "kept"}
    section = bytes(inner.encode())
    outer = Message(body=None)
    outer.annotations = {symbol("x-opt-partition-key"): "K"}
    raw = bytes(outer.encode()) + b"\x00\x53\x75\xb0" + len(section).to_bytes(4, "big") + section
    (part,) = batch_messages(decode_message(raw))
    assert part.partition_key == "K"
    (record,) = list(DefaultRecordBatch(bytes(records_batch([part], now_ms=1_700_000_000_000))))
    out = encode_event(1, 2, 3, record.key, record.value, record.headers, True)
    assert out.count(b"x-opt-partition-key") == 1
    back = decoded(out)
    assert back.annotations[symbol("x-opt-partition-key")] == "K"
    assert back.annotations[symbol("mine")] == "kept"


@settings(max_examples=300, deadline=None)
@given(sections=st.lists(st.one_of(
    st.binary(max_size=40),
    st.builds(lambda b, p: bytes(Message(body=b, properties=p, inferred=True).encode()),
              st.binary(max_size=40), st.dictionaries(names, amqp_values, max_size=2))),
    min_size=1, max_size=4))
def test_batch_recognition_agrees_in_both_forms(sections):
    """Random data sections, some encoded messages, some bytes: the one-pass check the
    send path uses says "batch" exactly when the two-pass one does, with the same messages."""
    raw = bytes(Message(body=None).encode())
    for section in sections:
        raw += b"\x00\x53\x75\xb0" + len(section).to_bytes(4, "big") + section
    message = decode_message(raw)
    found = batch_messages(message)
    assert (found is not None) == is_batch(message)
    if found is not None:
        assert found == split_batch(message)


def _s(code: int, b: bytes) -> bytes:
    return bytes((code, len(b))) + b


@pytest.mark.parametrize("name_code", [0xA1, 0xB3, 0xB1], ids=["str8", "sym32", "str32"])
def test_service_annotations_in_any_name_encoding_are_dropped(name_code):
    # A sender's x-opt-publisher or x-opt-sequence-number keyed by a string (or a 32-bit
    # length) was kept, and receivers that read names as text saw it as the service's.
    def name(text: bytes) -> bytes:
        if name_code == 0xA1:
            return _s(0xA1, text)
        return bytes((name_code,)) + len(text).to_bytes(4, "big") + text
    entries = (name(b"x-opt-publisher") + _s(0xA1, b"victim")
               + name(b"x-opt-sequence-number") + b"\x55\x63"
               + name(b"x-opt-partition-key") + _s(0xA1, b"other")
               + _s(0xA3, b"x-opt-custom") + _s(0xA1, b"kept"))
    raw = b"\x00\x53\x72\xc1" + bytes((len(entries) + 1, 8)) + entries + b"\x00\x53\x75\xa0\x05hello"
    event = decode_message(raw)
    assert event.partition_key is None and event.body == b"hello"
    kept = event.amqp_only or b""
    for forged in (b"x-opt-publisher", b"x-opt-sequence-number", b"x-opt-partition-key", b"victim"):
        assert forged not in kept, kept
    assert b"x-opt-custom" in kept


@settings(max_examples=200, deadline=None, derandomize=True)
@given(annotations=st.dictionaries(names.filter(lambda n: not n.startswith("x-opt-")), amqp_values,
                                   max_size=4),
       instructions=st.dictionaries(names, amqp_values, max_size=3),
       priority=st.one_of(st.none(), st.integers(0, 9)),
       message_id=st.one_of(st.none(), st.text("abcxyz0123", min_size=1, max_size=20)),
       body=st.one_of(st.binary(max_size=200), st.text(max_size=200)),
       publisher=st.text(st.characters(min_codepoint=1, blacklist_categories=("Cs",)), min_size=1,
                         max_size=300))
def test_an_event_sent_through_a_publisher_keeps_what_it_had_beside_x_opt_publisher(
        annotations, instructions, priority, message_id, body, publisher):
    """SDK message → the door's stamp (eventhubs.events.with_publisher, on the reserved header
    amqp_only wrote) → record → the message a receiver gets: x-opt-publisher, and the sender's
    own annotations, delivery annotations, header, properties and body as sent."""
    m = Message(body=body, inferred=isinstance(body, bytes))
    if annotations:
        m.annotations = {symbol(k): v for k, v in annotations.items()}
    if instructions:
        m.instructions = {symbol(k): v for k, v in instructions.items()}
    if priority is not None:
        m.priority = priority
    if message_id is not None:
        m.id = message_id
    incoming = decode_message(bytes(m.encode()))
    stamped = incoming._replace(amqp_only=with_publisher(incoming.amqp_only, publisher))
    (record,) = list(DefaultRecordBatch(bytes(records_batch([stamped], now_ms=1_700_000_000_000))))
    back = decoded(encode_event(0, 0, 0, record.key, record.value, record.headers, True))
    assert back.annotations[symbol("x-opt-publisher")] == publisher
    for k, v in annotations.items():
        got = back.annotations[symbol(k)]
        assert (bytes(got) if isinstance(v, bytes) else got) == v
    assert {str(k): v for k, v in (back.instructions or {}).items()}.keys() == instructions.keys()
    assert back.priority == (4 if priority is None else priority)  # (AMQP's default)
    assert back.id == message_id
    assert (bytes(back.body) if isinstance(body, bytes) else back.body) == body
