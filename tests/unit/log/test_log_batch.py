"""RecordBatch v2 header parsing, validation and patching (log/batch.py)."""

from __future__ import annotations

import struct

import pytest

from kafka_wire.log import batch as rb
from kafka_wire.log.errors import CorruptRecord, InvalidRecord, UnsupportedMagic

from .log_helpers import GZIP, decoded_records, fix_crc, make_batch, make_legacy_message


def test_parse_header_reads_every_field_of_a_real_batch():
    data = make_batch(3, ts=5_000, producer_id=7, transactional=True)
    h = rb.parse_header(data)
    assert h.base_offset == 0
    assert h.magic == 2
    assert h.size == len(data)
    assert h.records_count == 3 and h.last_offset_delta == 2 and h.last_offset == 2
    assert h.base_timestamp == 5_000 and h.max_timestamp == 5_002
    assert h.producer_id == 7 and h.producer_epoch == 0 and h.base_sequence == 0
    assert h.is_transactional and not h.is_control
    assert h.compression == 0 and h.timestamp_type == rb.CREATE_TIME


def test_validate_records_accepts_several_batches_including_compressed():
    blob = make_batch(2) + make_batch(4, compression=GZIP, value_size=500) + make_batch(1)
    headers = rb.validate_records(blob)
    assert [h.records_count for h in headers] == [2, 4, 1]
    assert headers[1].compression == GZIP
    assert sum(h.size for h in headers) == len(blob)


def test_iter_batches_stops_at_an_incomplete_batch():
    blob = make_batch(1) + make_batch(2)
    positions = [pos for pos, _ in rb.iter_batches(blob + make_batch(1)[:30])]
    assert positions == [0, len(make_batch(1))]


@pytest.mark.parametrize("where", [30, 61, -1])
def test_a_flipped_byte_covered_by_the_crc_is_corrupt(where):
    data = bytearray(make_batch(3))
    data[where] ^= 0x40
    with pytest.raises(CorruptRecord):
        rb.validate_records(bytes(data))


def test_a_wrong_crc_field_is_corrupt():
    data = bytearray(make_batch(1))
    data[17] ^= 1
    with pytest.raises(CorruptRecord, match="CRC"):
        rb.validate_records(data)


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_message_sets_are_refused_with_unsupported_magic(magic):
    with pytest.raises(UnsupportedMagic, match=f"magic {magic}"):
        rb.validate_records(make_legacy_message(magic))


def test_truncated_batch_is_corrupt():
    data = make_batch(3)
    with pytest.raises(CorruptRecord, match="truncated"):
        rb.validate_records(data[:-1])
    with pytest.raises(CorruptRecord, match="truncated"):
        rb.validate_records(data[:10])


def test_trailing_garbage_after_the_last_batch_is_refused():
    with pytest.raises(CorruptRecord):
        rb.validate_records(make_batch(1) + b"\0\0\0\0\0")


def test_batch_length_below_the_header_is_invalid():
    data = bytearray(make_batch(1))
    struct.pack_into(">i", data, 8, 48)
    with pytest.raises(InvalidRecord, match="batchLength"):
        rb.validate_records(data)


def test_record_count_must_match_the_offset_range():
    data = bytearray(make_batch(3))
    struct.pack_into(">i", data, 57, 0)
    fix_crc(data)
    with pytest.raises(InvalidRecord):
        rb.validate_records(data)
    struct.pack_into(">i", data, 57, 3)
    struct.pack_into(">i", data, 23, -1)
    fix_crc(data)
    with pytest.raises(InvalidRecord):
        rb.validate_records(data)


def test_empty_records_are_invalid():
    with pytest.raises(InvalidRecord):
        rb.validate_records(b"")


def test_patch_base_offset_keeps_the_crc_valid():
    data = bytearray(make_batch(2))
    rb.patch_base_offset(data, 0, 1234)
    (h,) = rb.validate_records(data)
    assert h.base_offset == 1234 and h.last_offset == 1235
    assert [r[0] for r in decoded_records(data)] == [1234, 1235]


def test_set_log_append_time_stamps_the_batch_and_rewrites_the_crc():
    blob = bytearray(make_batch(2, ts=10) + make_batch(3, ts=20, compression=GZIP))
    second = len(make_batch(2, ts=10))
    rb.set_log_append_time(blob, second, 99_999)
    h1, h2 = rb.validate_records(blob)  # CRCs still valid
    assert h1.timestamp_type == rb.CREATE_TIME and h1.max_timestamp == 11
    assert h2.timestamp_type == rb.LOG_APPEND_TIME and h2.max_timestamp == 99_999
    assert h2.base_timestamp == 20  # untouched: readers use maxTimestamp for LogAppendTime
    # A real client reads every record of that batch with the append time.
    assert [r[1] for r in decoded_records(blob)] == [10, 11, 99_999, 99_999, 99_999]


def test_patching_works_on_a_memoryview():
    buf = bytearray(make_batch(1))
    with memoryview(buf) as view:
        rb.patch_base_offset(view, 0, 5)
        rb.set_log_append_time(view, 0, 7)
    (h,) = rb.validate_records(buf)
    assert (h.base_offset, h.max_timestamp) == (5, 7)


def test_check_stored_batch_rejects_zeros_and_torn_batches():
    data = make_batch(2)
    assert rb.check_stored_batch(data, 0, len(data)) is not None
    assert rb.check_stored_batch(data, 0, len(data) - 1) is None
    assert rb.check_stored_batch(bytes(100), 0, 100) is None
