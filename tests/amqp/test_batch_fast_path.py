"""The send path's shortcuts read what the general decoder reads: a batch's
plain inner message (a data section, at most a durable-only header) and a
record batch of plain events are checked against the general paths."""
from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.amqp.messages import _decode, _plain_inner
from kafka_wire.eventhubs.events import Incoming, records_batch
from kafka_wire.log import batch as rb
from kafka_wire.log.records import encode_record

HEADERS = [b"", b"\x00\x53\x70\x45", b"\x00\x53\x70\xc0\x02\x01\x41", b"\x00\x53\x70\xc0\x02\x01\x42",
           b"\x00\x53\x70\xc0\x04\x02\x41\x50\x05", b"\x00\x53\x70\xc0\x03\x02\x41\x40",
           b"\x00\x53\x70\x40", b"\x00\x53\x70\xd0\x00\x00\x00\x05\x00\x00\x00\x01\x41"]
# the headers that say no more than durable (the rest carry a priority, or are not lists)
PLAIN_HEADERS = [h for i, h in enumerate(HEADERS) if i not in (4, 6)]
OTHERS = [b"", b"\x00\x53\x72\xc1\x01\x00", b"\x00\x53\x74\xc1\x01\x00",
          b"\x00\x53\x73\x45", b"\x00\x53\x78\xc1\x01\x00"]


def _data(body: bytes, wide: bool) -> bytes:
    if wide or len(body) > 255:
        return b"\x00\x53\x75\xb0" + struct.pack(">I", len(body)) + body
    return b"\x00\x53\x75\xa0" + bytes((len(body),)) + body


def _fields(m: Incoming):
    return (m.partition_key, m.properties, None if m.body is None else bytes(m.body),
            [bytes(s) for s in m.data_sections], m.amqp_only)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(HEADERS), st.sampled_from(OTHERS), st.binary(max_size=400), st.booleans(),
       st.integers(0, 3), st.binary(max_size=4))
def test_plain_inner_messages_decode_as_the_general_path_decodes_them(header, other, body, wide, cut, junk):
    section = header + other + _data(body, wide)
    for candidate in (section, section[:len(section) - cut], section + junk):
        fast = _plain_inner(memoryview(candidate))
        try:
            slow = _decode(memoryview(candidate), strict=True)
        except Exception:
            slow = None
        if fast is not None:  # the shortcut only takes what the general path reads the same
            assert slow is not None and _fields(fast) == _fields(slow)
        elif not other and candidate == section and header in PLAIN_HEADERS:
            raise AssertionError("a plain inner message missed the shortcut")


events = st.lists(st.tuples(st.one_of(st.none(), st.text(max_size=20)), st.one_of(st.none(), st.binary(max_size=300)),
                            st.lists(st.tuples(st.binary(min_size=1, max_size=5), st.binary(max_size=5)), max_size=2),
                            st.one_of(st.none(), st.binary(min_size=1, max_size=10))), min_size=1, max_size=20)


@settings(max_examples=300, deadline=None)
@given(events, st.integers(0, 2**41))
def test_record_batches_of_plain_events_are_what_encode_record_writes(evs, now):
    msgs = [Incoming(k, props, memoryview(v) if v is not None else None, [], extra) for k, v, props, extra in evs]
    got = bytes(records_batch(msgs, now))
    records = b"".join(encode_record(i, 0, None if k is None else k.encode(),
                                     None if v is None else bytes(v),
                                     [*props, *([(b"x-opt-amqp-properties", extra)] if extra is not None else [])])
                       for i, (k, v, props, extra) in enumerate(evs))
    assert got == bytes(rb.encode_batch(
        base_offset=0, partition_leader_epoch=0, attributes=rb.AMQP_HEADERS_BIT,
        last_offset_delta=len(evs) - 1, base_timestamp=now, max_timestamp=now,
        producer_id=rb.NO_PRODUCER_ID, producer_epoch=-1, base_sequence=rb.NO_SEQUENCE,
        records_count=len(evs), records=records))
