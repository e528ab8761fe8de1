"""Builders for real RecordBatch v2 bytes (via kafka-python) used by the log tests."""

from __future__ import annotations

import struct

from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from log import batch as rb

GZIP = DefaultRecordBatch.CODEC_GZIP


def make_batch(
    records: int = 1,
    *,
    value_size: int = 10,
    ts: int = 1_000,
    compression: int = 0,
    tag: int = 0,
    transactional: bool = False,
    producer_id: int = -1,
) -> bytes:
    """One batch of ``records`` records with values ``b'{tag}:{i}'`` padded to value_size."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=transactional,
        producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1, batch_size=1 << 24,
    )
    for i in range(records):
        value = f"{tag}:{i}:".encode().ljust(value_size, b"x")
        builder.append(i, timestamp=ts + i, key=None, value=value, headers=[])
    return bytes(builder.build())


def make_legacy_message(magic: int = 1) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    builder.append(0, timestamp=1000 if magic else None, key=None, value=b"old")
    return bytes(builder.build())


def fix_crc(buf: bytearray, pos: int = 0) -> None:
    """Recompute a batch's CRC after a test edits a field it covers."""
    (length,) = struct.unpack_from(">i", buf, pos + 8)
    struct.pack_into(">I", buf, pos + 17, crc32c(bytes(buf[pos + 21 : pos + 12 + length])))


def batch_spans(view) -> list[tuple[int, int]]:
    """(base offset, last offset) of every batch in ``view``."""
    return [(h.base_offset, h.last_offset) for _, h in rb.iter_batches(view)]


def decoded_records(view) -> list[tuple[int, int, bytes]]:
    """(offset, timestamp, value) of every record, decoded by kafka-python."""
    out = []
    data = bytes(view)
    pos = 0
    for p, header in rb.iter_batches(data):
        batch = DefaultRecordBatch(data[p : p + header.size])
        for record in batch:
            out.append((record.offset, record.timestamp, record.value))
        pos = p + header.size
    return out
