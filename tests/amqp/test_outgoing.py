"""The receive path's one-pass encoder gives the bytes of the record-by-record one.

``outgoing.batch_events`` must equal ``read_events`` then ``encode_event`` per
record (whose output test_messages checks against proton's decoder), for any
batch: keys (none, text, binary), values (null, empty, under and over 255
bytes), headers (none, null values, AMQP-encoded or raw), compressed or not,
a start inside the batch, offsets of any length, the runtime metric, geo
offsets; and a batch cut short raises CorruptRecord, never anything else.
"""
from __future__ import annotations

import string

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kafka_wire.amqp.messages import encode_event, runtime_metric_annotations
from kafka_wire.amqp.outgoing import batch_events
from kafka_wire.log import batch as rb
from kafka_wire.log import records as rr
from kafka_wire.log.errors import CorruptRecord

keys = st.one_of(st.none(), st.text(max_size=40).map(str.encode), st.binary(max_size=40))
values = st.one_of(st.none(), st.binary(max_size=300), st.binary(min_size=250, max_size=70_000))
header_values = st.one_of(st.none(), st.binary(max_size=30), st.sampled_from([b"\xa1\x03abc", b"\x81" + bytes(8)]))
headers = st.lists(st.tuples(st.text(string.ascii_letters + "-_", min_size=1, max_size=20), header_values),
                   max_size=3)
records = st.lists(st.tuples(keys, values, headers), min_size=1, max_size=12)
CODECS = [rr.NONE, rr.GZIP, rr.LZ4, rr.ZSTD, rr.SNAPPY]


def make_batch(recs, codec: int, base: int, amqp: bool) -> bytes:
    body = b"".join(rr.encode_record(i, 0, k, v, [(n.encode(), hv) for n, hv in hs])
                    for i, (k, v, hs) in enumerate(recs))
    attributes = codec | (rb.AMQP_HEADERS_BIT if amqp else 0)
    return bytes(rb.encode_batch(
        base_offset=base, partition_leader_epoch=0, attributes=attributes, last_offset_delta=len(recs) - 1,
        base_timestamp=0, max_timestamp=0, producer_id=-1, producer_epoch=-1, base_sequence=-1,
        records_count=len(recs), records=rr.compress(codec, body) if codec else body))


def reference(data, header, skip, position, append_ms, amqp, metric, offsets) -> list[bytes]:
    out = []
    for delta, key, value, hs in rr.read_events(data, header):
        if delta < skip:
            continue
        sequence = header.base_offset + delta
        offset = rb.event_offset(position, delta) if offsets is None else offsets(sequence)
        out.append(encode_event(sequence, offset, append_ms, key, value, hs, amqp, metric))
    return out


def codec_available(codec: int) -> bool:
    try:
        rr.compress(codec, b"x")
        return True
    except Exception:
        return False


@settings(max_examples=400, deadline=None, derandomize=True)
@example(recs=[(None, b"x" * 256, [])], codec=rr.NONE, base=0, skip=0, position=0, append_ms=0,
         amqp=True, metric=False, geo=False)
@example(recs=[(b"\xff", None, [("a", None)])], codec=rr.NONE, base=9, skip=0, position=10**7,
         append_ms=1, amqp=False, metric=True, geo=True)
@given(recs=records, codec=st.sampled_from(CODECS), base=st.integers(0, 2**40), skip=st.integers(0, 13),
       position=st.one_of(st.integers(0, 20), st.integers(0, 2**40)), append_ms=st.integers(0, 2**45),
       amqp=st.booleans(), metric=st.booleans(), geo=st.booleans())
def test_one_pass_equals_record_by_record(recs, codec, base, skip, position, append_ms, amqp, metric, geo):
    if not codec_available(codec):
        codec = rr.NONE
    data = make_batch(recs, codec, base, amqp)
    header = rb.parse_header(data, 0)
    extra = runtime_metric_annotations(base + 5, 77, append_ms, append_ms + 1) if metric else b""
    offsets = (lambda sequence: f"3:{sequence}") if geo else None
    got = batch_events(memoryview(data), header, skip, position, append_ms, amqp, extra, offsets)
    assert [bytes(g) for g in got] == reference(data, header, skip, position, append_ms, amqp, extra, offsets)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(recs=records, cut=st.integers(1, 400), amqp=st.booleans())
def test_a_batch_cut_short_raises_corrupt_record(recs, cut, amqp):
    data = make_batch(recs, rr.NONE, 0, amqp)
    header = rb.parse_header(data, 0)
    cut = min(cut, header.size - rb.HEADER_SIZE)
    short = data[:header.size - cut]
    header = header._replace(batch_length=header.batch_length - cut)  # what the log would hand over
    try:
        expected = reference(short, header, 0, 0, 0, amqp, b"", None)
    except CorruptRecord:
        expected = CorruptRecord
    if expected is CorruptRecord:
        with pytest.raises(CorruptRecord):
            batch_events(memoryview(short), header, 0, 0, 0, amqp, b"", None)
    else:  # the cut fell where the records still parse (in the last record's headers' room)
        got = batch_events(memoryview(short), header, 0, 0, 0, amqp, b"", None)
        assert [bytes(g) for g in got] == expected
