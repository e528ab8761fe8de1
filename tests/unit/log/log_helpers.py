"""Builders for real RecordBatch v2 bytes (via kafka-python) used by the log tests."""

from __future__ import annotations

import struct

from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafka_wire.log import batch as rb

GZIP = DefaultRecordBatch.CODEC_GZIP
SNAPPY = DefaultRecordBatch.CODEC_SNAPPY
LZ4 = DefaultRecordBatch.CODEC_LZ4
ZSTD = DefaultRecordBatch.CODEC_ZSTD


def make_batch(
    records: int = 1,
    *,
    value_size: int = 10,
    ts: int = 1_000,
    compression: int = 0,
    tag: int = 0,
    transactional: bool = False,
    producer_id: int = -1,
    producer_epoch: int = 0,
    base_sequence: int = 0,
) -> bytes:
    """One batch of ``records`` records with values ``b'{tag}:{i}'`` padded to value_size.

    With ``producer_id`` >= 0 the batch is idempotent (epoch, base sequence)
    and, with ``transactional``, part of a transaction."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=transactional,
        producer_id=producer_id, producer_epoch=producer_epoch if producer_id >= 0 else -1,
        base_sequence=base_sequence if producer_id >= 0 else -1, batch_size=1 << 24,
    )
    for i in range(records):
        value = f"{tag}:{i}:".encode().ljust(value_size, b"x")
        builder.append(i, timestamp=ts + i, key=None, value=value, headers=[])
    return bytes(builder.build())


def keyed_batch(
    items: list[tuple[bytes | None, bytes | None]],
    *,
    ts: int = 1_000,
    compression: int = 0,
    producer_id: int = -1,
    producer_epoch: int = 0,
    base_sequence: int = 0,
    transactional: bool = False,
    headers: list[tuple[str, bytes]] | None = None,
) -> bytes:
    """One batch of (key, value) records; a None value is a tombstone. Forced
    compressed even when compression does not pay (kafka-python would send it raw)."""
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=transactional,
        producer_id=producer_id, producer_epoch=producer_epoch if producer_id >= 0 else -1,
        base_sequence=base_sequence if producer_id >= 0 else -1, batch_size=1 << 24,
    )
    for i, (key, value) in enumerate(items):
        builder.append(i, timestamp=ts + i, key=key, value=value, headers=list(headers or []))
    data = bytearray(builder.build())
    if compression and not data[22] & 0x07:
        from kafka_wire.log import records as rec

        body = rec.compress(compression, bytes(data[61:]))
        data = bytearray(data[:61]) + body
        struct.pack_into(">i", data, 8, len(data) - 12)
        struct.pack_into(">h", data, 21, struct.unpack_from(">h", data, 21)[0] | compression)
        fix_crc(data)
    return bytes(data)


def records_of(view, *, control: bool = False) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every data record (and control records if asked)."""
    out = []
    data = bytes(view)
    for p, header in rb.iter_batches(data):
        if header.is_control and not control:
            continue
        for record in DefaultRecordBatch(data[p : p + header.size]):
            out.append((record.offset, record.key, record.value))
    return out


def read_all(log, *, upper: int | None = None) -> bytes:
    """Every stored batch from the log start up to ``upper`` (default: the end)."""
    out, offset = bytearray(), log.log_start_offset
    end = log.log_end_offset if upper is None else upper
    while offset < end:
        view = log.read(offset, 1 << 24, max_offset=end)
        if not len(view):
            break
        last = None
        for _, h in rb.iter_batches(view):
            last = h
        out += view
        offset = last.next_offset
    return bytes(out)


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
