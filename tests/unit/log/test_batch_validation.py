"""validate_records, the Produce path's one walk of a records blob: properties."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_wire.log import batch as rb
from kafka_wire.log import records as rec
from kafka_wire.log.errors import InvalidRecord, UnsupportedCompression


def _batch(body: bytes, count: int, attributes: int = 0) -> bytes:
    return bytes(rb.encode_batch(
        base_offset=0, partition_leader_epoch=0, attributes=attributes, last_offset_delta=count - 1,
        base_timestamp=0, max_timestamp=0, producer_id=-1, producer_epoch=-1, base_sequence=-1,
        records_count=count, records=body))


@given(attributes=st.integers(0, 0x7FFF))
def test_only_kafkas_five_codecs_pass(attributes):
    attributes &= ~rb.CONTROL_BIT  # control batches are refused later, by the log
    blob = _batch(rec.encode_record(0, 0, b"k", b"v"), 1, attributes)
    if attributes & rb.COMPRESSION_MASK > 4:
        with pytest.raises(UnsupportedCompression):
            rb.validate_records(blob)
    else:
        assert [h.attributes for h in rb.validate_records(blob)] == [attributes]


def test_an_unknown_codec_is_an_invalid_record():
    assert issubclass(UnsupportedCompression, InvalidRecord)


@given(count=st.integers(1, 2**31 - 1), room=st.integers(0, 4096), compressed=st.booleans())
def test_a_record_count_the_bytes_cannot_hold_is_refused(count, room, compressed):
    """Records are at least 7 bytes (64 times fewer compressed): a header claiming more
    would be charged to quotas and move the high watermark by what it never held."""
    blob = _batch(bytes(room), count, rec.ZSTD if compressed else 0)
    fits = count * 7 <= room * (64 if compressed else 1)
    if fits:
        assert [h.records_count for h in rb.validate_records(blob)] == [count]
    else:
        with pytest.raises(InvalidRecord, match="cannot hold"):
            rb.validate_records(blob)


@pytest.mark.parametrize("codec", [rec.GZIP, rec.SNAPPY, rec.LZ4, rec.ZSTD])
@pytest.mark.parametrize("value", [b"", b"x" * 10])
def test_the_most_compressible_batches_clients_send_pass(codec, value):
    """100,000 tiny records a batch (librdkafka allows 1,000,000 a batch)."""
    n = 100_000
    body = b"".join(rec.encode_record(i, 0, None, value) for i in range(n))
    assert [h.records_count for h in rb.validate_records(_batch(rec.compress(codec, body), n, codec))] == [n]
