"""log.records.check_records, what Produce runs on a compressed batch (Kafka's
LogValidator decompresses it too): it passes every batch a client writes, which every
reader of the log reads whole (the cleaner's read_records, Capture's and the console's
read_event_columns, the AMQP receivers' batch_events) with records_count records. It
refuses bombs and streams that do not decompress; records that do not parse inside a
good compression pass (they are not walked at produce), and every reader either reads
them or refuses them with CorruptRecord, which its caller goes on past."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire.amqp.outgoing import batch_events
from kafka_wire.log import batch as rb
from kafka_wire.log import records as rec
from kafka_wire.log.errors import CorruptRecord
from tests.undecodable_batches import UNDECODABLE, batch

CODECS = [rec.GZIP, rec.SNAPPY, rec.LZ4, rec.ZSTD]
blobs = st.one_of(st.none(), st.binary(max_size=64))
records_ = st.lists(st.tuples(blobs, blobs, st.lists(st.tuples(st.binary(max_size=8), blobs), max_size=3)),
                    min_size=1, max_size=30)


def _encode(codec_id, recs, deltas=None) -> tuple[bytes, rb.BatchHeader]:
    body = b"".join(rec.encode_record(i if deltas is None else deltas[i], 7 * i, k, v, h)
                    for i, (k, v, h) in enumerate(recs))
    data = batch([None] * len(recs), codec_id=codec_id, body=rec.compress(codec_id, body))
    return data, rb.parse_header(data, 0)


def _every_reader_reads(data, header) -> None:
    assert len(rec.read_records(data, header)) == header.records_count
    assert _columns(data, header) == header.records_count
    assert len(batch_events(data, header, 0, 0, 0, False, b"", None)) == header.records_count


def _columns(data, header) -> int:
    offsets: list = []
    rec.read_event_columns(data, header, offsets, [], [], [])
    return len(offsets)


def _every_reader_reads_or_refuses(data, header) -> None:
    """Each reader reads the records or raises CorruptRecord (what its caller skips)."""
    for read in (lambda: len(rec.read_records(data, header)), lambda: _columns(data, header),
                 # (records whose offset delta is below 0 are not sent: a byte changed may make one)
                 lambda: len(batch_events(data, header, 0, 0, 0, False, b"", None))):
        try:
            assert read() <= header.records_count
        except CorruptRecord:
            pass


@given(codec_id=st.sampled_from(CODECS), recs=records_)
def test_every_batch_a_client_writes_passes_and_every_reader_reads_it(codec_id, recs):
    data, header = _encode(codec_id, recs)
    assert rec.check_records(data, header) is True
    assert rec.check_records(data, header, most=1024) is True
    _every_reader_reads(data, header)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(codec_id=st.sampled_from([rec.ZSTD, rec.GZIP]), recs=records_, data=st.data())
def test_damaged_records_in_a_good_compression_pass_and_every_reader_reads_or_refuses_them(
        codec_id, recs, data):
    """Records damaged anywhere (a byte changed, bytes cut or added, a wrong count) inside
    a compression that decompresses: passed (Produce stores them), and each reader reads
    them or refuses them with CorruptRecord, never another error."""
    body = bytearray(b"".join(rec.encode_record(i, 0, k, v, h) for i, (k, v, h) in enumerate(recs)))
    how = data.draw(st.sampled_from(["byte", "cut", "extra", "count"]))
    count = len(recs)
    if how == "byte":
        body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
    elif how == "cut":
        del body[data.draw(st.integers(0, len(body) - 1)):]
    elif how == "extra":
        body += data.draw(st.binary(min_size=1, max_size=8))
    else:
        count = data.draw(st.integers(1, 40))
    blob = batch([None] * count, codec_id=codec_id, body=rec.compress(codec_id, bytes(body)))
    header = rb.parse_header(blob, 0)
    assert rec.check_records(blob, header) is True
    assert rec.check_records(blob, header, most=1024) is True
    _every_reader_reads_or_refuses(blob, header)


def test_a_bomb_is_left_to_the_unbounded_check_not_decompressed_on_the_loop():
    data = UNDECODABLE["bomb"]()
    assert rec.check_records(data, rb.parse_header(data, 0), most=1024) is False


def test_a_batch_of_more_records_than_the_loop_checks_is_left_to_the_unbounded_check():
    data, header = _encode(rec.ZSTD, [(b"k", b"v", [])] * 1025)
    assert rec.check_records(data, header, most=1024) is False
    assert rec.check_records(data, header) is True


@pytest.mark.parametrize("record", [  # (length, attributes, deltas, key, value, headers)
    b"\x10\x00\x00\x00\x01\x01\x00" + b"\x00\x00",  # a length past its fields
    b"\x10\x00\x00\x00\x01\x01\x02\x01\x01",  # a header name of length -1
    b"\x0c\x00\x00\x00\x05\x01\x00",  # a key of length -3
    b"\x0c\x00\x00\x00\x01\x01\x00" + b"\x00",  # a byte after the last record
], ids=["fields end", "negative", "length is -3", "follow the last"])
def test_records_kafka_would_not_read_pass_and_every_reader_reads_or_refuses_them(record):
    """Kafka's LogValidator refuses these; Produce here stores them (it does not walk the
    records) and the readers are left to skip them."""
    data = batch([None], codec_id=rec.ZSTD, body=rec.compress(rec.ZSTD, record))
    header = rb.parse_header(data, 0)
    assert rec.check_records(data, header) is True
    assert rec.check_records(data, header, most=1024) is True
    _every_reader_reads_or_refuses(data, header)


@pytest.mark.parametrize("name", sorted(UNDECODABLE))
def test_what_produce_asks_decompression_only_refuses_what_does_not_decompress(name):
    """A bomb and bytes that do not decompress are refused, on the loop's bound and
    unbounded; records that do not parse pass (the readers skip them)."""
    data = UNDECODABLE[name]()
    header = rb.parse_header(data, 0)
    if name == "not-parsing":
        assert rec.check_records(data, header) is True
        assert rec.check_records(data, header, most=1024) is True
        _every_reader_reads_or_refuses(data, header)
        return
    with pytest.raises(CorruptRecord):
        rec.check_records(data, header)
    if name != "bomb":  # (a bomb is left to the thread: False on the loop's bound)
        assert rec.check_records(data, header, most=1024) is False
