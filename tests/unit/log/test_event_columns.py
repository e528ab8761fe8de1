"""log.records.read_event_columns (Capture's and the AMQP receivers' record
reader) reads what kafka-python's DefaultRecordBatch reads, for every codec, null
and long keys, values and headers, and varints of every width (offset and
timestamp deltas far apart, fields over 8 KiB); with a header cap (the console's),
the same but for the headers past it."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kafka_wire.log.batch import encode_batch, parse_header
from kafka_wire.log.errors import CorruptRecord
from kafka_wire.log.records import encode_record, encode_varint, read_event_columns

blobs = st.one_of(st.none(), st.binary(max_size=40), st.integers(8_000, 20_000).map(lambda n: b"z" * n))
record = st.tuples(st.integers(1, 3_000_000), st.integers(0, 10**9), blobs, blobs,
                   st.lists(st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=20))),
                            max_size=3))


def kafka_python_batch(records, codec: int, base: int = 0) -> bytes:
    """A batch of ``records`` ((offset gap, timestamp, key, value, headers)) as
    kafka-python's producer builds it, at base offset ``base``."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 26)
    offset = 0
    for gap, ts, key, value, headers in records:
        b.append(offset, timestamp=1_600_000_000_000 + ts, key=key, value=value, headers=headers)
        offset += gap
    data = bytearray(b.build())
    struct.pack_into(">q", data, 0, base)
    return bytes(data)


@settings(max_examples=200, deadline=None)
@given(st.lists(record, min_size=1, max_size=12), st.sampled_from([0, 1, 2, 3, 4]), st.integers(0, 2**40))
def test_the_same_records_as_kafka_python(records, codec, base):
    data = kafka_python_batch(records, codec, base)
    offsets, keys, headers, bodies = [], [], [], []
    read_event_columns(data, parse_header(data, 0), offsets, keys, headers, bodies)
    expected = list(DefaultRecordBatch(data))
    assert offsets == [r.offset - base for r in expected]
    assert keys == [r.key for r in expected]
    assert bodies == [r.value for r in expected]
    assert headers == [list(r.headers) for r in expected]


many_headers = st.lists(st.tuples(st.text(max_size=200), st.one_of(st.none(), st.binary(max_size=300))), max_size=9)
capped_record = st.tuples(st.integers(1, 3_000_000), st.integers(0, 10**9), blobs, blobs, many_headers)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.lists(capped_record, min_size=1, max_size=12), st.sampled_from([0, 1, 2, 3, 4]), st.integers(0, 10),
       st.integers(0, 3))
def test_a_header_cap_changes_nothing_but_the_headers_past_it(records, codec, cap, already):
    """With ``max_headers`` (the console's page reads 100 of a record's headers) every
    record's offset, key and value are what the uncapped reader gives, its headers the
    first ``cap`` of them, and ``header_counts`` names, by their index in the caller's
    lists, the records cut and how many headers they have; the records after a cut one
    (skipped to by its length) are read whole."""
    data = kafka_python_batch(records, codec)
    header = parse_header(data, 0)
    whole = [], [], [], []
    read_event_columns(data, header, *whole)
    earlier = [("earlier", None)] * already  # what a caller's lists already hold (Capture's, across batches)
    capped = list(earlier), list(earlier), list(earlier), list(earlier)
    counts: dict[int, int] = {}
    read_event_columns(data, header, *capped, max_headers=cap, header_counts=counts)
    offsets, keys, headers, bodies = (column[already:] for column in capped)
    assert (offsets, keys, bodies) == (whole[0], whole[1], whole[3])
    assert headers == [hs[:cap] for hs in whole[2]]
    assert counts == {already + i: len(hs) for i, hs in enumerate(whole[2]) if len(hs) > cap}


def test_a_cut_record_whose_length_ends_inside_the_headers_read_does_not_parse():
    """The headers past the cap are skipped by the record's length: a length that ends
    before the headers read is refused, not read backwards."""
    record = bytearray(encode_record(0, 0, None, b"v", [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]))
    assert record[0] < 0x40  # a one-byte length
    record[0] = 2 * 8  # the record claims 8 bytes: its first header ends past them
    data = bytes(encode_batch(base_offset=0, partition_leader_epoch=0, attributes=0, last_offset_delta=0,
                              base_timestamp=0, max_timestamp=0, producer_id=-1, producer_epoch=-1,
                              base_sequence=-1, records_count=1, records=bytes(record)))
    columns = [], [], [], []
    with pytest.raises(CorruptRecord):
        read_event_columns(data, parse_header(data, 0), *columns, max_headers=2)


@pytest.mark.parametrize("name_length", [b"\x03", b"\x85\x00"], ids=["one byte", "two bytes"])
def test_a_header_name_of_negative_length_does_not_parse(name_length):
    """Kafka refuses a negative header name length; read, it stepped back: a 12-byte record
    claiming 2**31 - 1 headers, the second of name length -2 (or -3 in two bytes), read that
    header over and over, ~1,000,000 a second (a Send right's record would hold Capture
    ~35 minutes and ~140 GB)."""
    count = b"\xfe\xff\xff\xff\x0f"  # 2**31 - 1
    body = b"\x00\x00\x00\x01\x01" + count + b"\x00\x01" + name_length  # an empty header, then the loop
    record = encode_varint(len(body)) + body
    data = bytes(encode_batch(base_offset=0, partition_leader_epoch=0, attributes=0, last_offset_delta=0,
                              base_timestamp=0, max_timestamp=0, producer_id=-1, producer_epoch=-1,
                              base_sequence=-1, records_count=1, records=record))
    for cap in ({}, {"max_headers": 1_000}):
        with pytest.raises(CorruptRecord, match="negative length"):
            read_event_columns(data, parse_header(data, 0), [], [], [], [], **cap)
