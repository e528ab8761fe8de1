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

