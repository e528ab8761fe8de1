"""Every section of a sent message survives the log (decode → record → delivered
message), checked against proton's codec on both ends (property-based, derandomized)."""
from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch
from proton import Message, symbol

from kafka_wire.amqp.messages import decode_message, encode_event
from kafka_wire.eventhubs.events import records_batch
from kafka_wire.log import batch as rb

names = st.text(string.ascii_letters + string.digits + "-_.", min_size=1, max_size=30)
values = st.one_of(st.text(max_size=50), st.integers(-2**31, 2**31 - 1), st.booleans(),
                   st.binary(max_size=50), st.none())
symbols = names.filter(lambda n: not n.startswith("x-opt-")).map(symbol)


def decoded(raw: bytes) -> Message:
    m = Message()
    m.decode(raw)
    return m


@settings(max_examples=200, deadline=None, derandomize=True)
@given(body=st.one_of(st.binary(max_size=200), st.lists(values, max_size=5),
                      st.dictionaries(names, values, max_size=4)),
       priority=st.one_of(st.none(), st.integers(0, 9)), ttl=st.one_of(st.none(), st.integers(1, 10**6)),
       annotations=st.dictionaries(symbols, values, max_size=3),
       instructions=st.dictionaries(symbols, values, max_size=3),
       subject=st.one_of(st.none(), names),
       key=st.one_of(st.none(), names, st.integers(-2**63, 2**63 - 1), st.binary(max_size=20)))
def test_sections_come_back_as_sent(body, priority, ttl, annotations, instructions, subject, key):
    """(Proton's Message has no footer: the SDK test, test_message_fidelity, sends one.)
    A partition key that is not a string is no key for routing (the record has none)
    but comes back as it was sent (the service keeps it: Azure/azure-event-hubs-spark#424)."""
    m = Message(body=body, inferred=isinstance(body, bytes))
    if priority is not None:
        m.priority = priority
    if ttl is not None:
        m.ttl = ttl / 1000
    m.annotations = {**annotations, **({symbol("x-opt-partition-key"): key} if key is not None else {})}
    m.instructions = instructions
    if subject is not None:
        m.subject = subject
    incoming = decode_message(bytes(m.encode()))
    assert incoming.partition_key == (key if isinstance(key, str) else None)
    (record,) = list(DefaultRecordBatch(bytes(records_batch([incoming], now_ms=1_700_000_000_000))))
    assert record.key == (key.encode() if isinstance(key, str) else None)
    headers = list(record.headers)
    plain = isinstance(body, bytes) and priority is None and ttl is None and not annotations \
        and not instructions and subject is None and (key is None or isinstance(key, str))
    assert (rb.AMQP_PROPERTIES_HEADER in dict(headers)) == (not plain)  # none for a plain event
    if isinstance(body, bytes):
        assert record.value == body  # Kafka consumers get the body as it is
    back = decoded(encode_event(5, 6, 7, record.key, record.value, headers, True))
    assert back.body == body or bytes(back.body) == body
    assert back.priority == (4 if priority is None else priority)  # proton's default is 4
    assert back.ttl == (0 if ttl is None else ttl / 1000)
    got = dict(back.annotations or {})
    assert got.pop(symbol("x-opt-sequence-number")) == 5
    assert {k: v for k, v in got.items() if not str(k).startswith("x-opt-")} == annotations
    assert got.get(symbol("x-opt-partition-key")) == key
    assert (back.instructions or {}) == instructions
    assert back.subject == subject


@settings(max_examples=300, deadline=None, derandomize=True)
@given(reserved=st.binary(max_size=80), value=st.binary(max_size=80))
def test_a_damaged_reserved_header_still_delivers_the_event(reserved, value):
    """Whatever bytes the reserved header holds, the event is delivered (at worst as
    one data section with the service's annotations), never an exception."""
    raw = encode_event(1, 2, 3, None, value, [(rb.AMQP_PROPERTIES_HEADER, reserved)], True)
    back = decoded(raw)
    assert back.annotations[symbol("x-opt-sequence-number")] == 1
