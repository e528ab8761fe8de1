"""log.records.read_event_columns (Capture's and the AMQP receivers' record
reader) reads what kafka-python's DefaultRecordBatch reads, for every codec, null
and long keys, values and headers, and varints of every width (offset and
timestamp deltas far apart, fields over 8 KiB)."""
from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kafka_wire.log.batch import parse_header
from kafka_wire.log.records import read_event_columns

blobs = st.one_of(st.none(), st.binary(max_size=40), st.integers(8_000, 20_000).map(lambda n: b"z" * n))
record = st.tuples(st.integers(1, 3_000_000), st.integers(0, 10**9), blobs, blobs,
                   st.lists(st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=20))),
                            max_size=3))


@settings(max_examples=200, deadline=None)
@given(st.lists(record, min_size=1, max_size=12), st.sampled_from([0, 1, 2, 3, 4]), st.integers(0, 2**40))
def test_the_same_records_as_kafka_python(records, codec, base):
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 26)
    offset = 0
    for gap, ts, key, value, headers in records:
        b.append(offset, timestamp=1_600_000_000_000 + ts, key=key, value=value, headers=headers)
        offset += gap
    data = bytearray(b.build())
    struct.pack_into(">q", data, 0, base)
    data = bytes(data)
    offsets, keys, headers, bodies = [], [], [], []
    read_event_columns(data, parse_header(data, 0), offsets, keys, headers, bodies)
    expected = list(DefaultRecordBatch(data))
    assert offsets == [r.offset - base for r in expected]
    assert keys == [r.key for r in expected]
    assert bodies == [r.value for r in expected]
    assert headers == [list(r.headers) for r in expected]
