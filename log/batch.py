"""RecordBatch v2 header view, validation and in-place patching.

This is the only module that knows the byte layout of a Kafka record batch.
Batches stay opaque: we read the 61-byte header, check the CRC-32C with the C
``crc32c`` package, and patch the few fields the broker owns (base offset,
partition leader epoch, log-append time). Records inside a batch are never
decoded here.

Layout (big-endian)::

    baseOffset int64 @0, batchLength int32 @8, partitionLeaderEpoch int32 @12,
    magic int8 @16, crc uint32 @17, attributes int16 @21, lastOffsetDelta int32 @23,
    baseTimestamp int64 @27, maxTimestamp int64 @35, producerId int64 @43,
    producerEpoch int16 @51, baseSequence int32 @53, recordsCount int32 @57
"""

from __future__ import annotations

import logging
import struct
from typing import Iterator, NamedTuple

from crc32c import crc32c

from .errors import CorruptRecord, InvalidRecord, UnsupportedCompression, UnsupportedMagic

logger = logging.getLogger(__name__)

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
assert HEADER_SIZE == 61

LOG_OVERHEAD = 12  # baseOffset + batchLength: the part not counted in batchLength
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # 49
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21  # the CRC covers everything from here to the end of the batch
MAX_TIMESTAMP_OFFSET = 35

COMPRESSION_MASK = 0x07
MAX_CODEC = 4  # 0 none .. 4 zstd; 5-7 name no codec
# The smallest record: length, attributes, timestampDelta, offsetDelta, keyLength,
# valueLength and headerCount, one byte each (a null key and value, no headers).
MIN_RECORD_SIZE = 7
# The most a batch's records may hold over their compressed size (records.decompress
# refuses more, past 64 MiB). Tiny records of 100,000 to a batch, the most compressible
# a client sends, reach 17 times MIN_RECORD_SIZE a compressed byte.
MAX_COMPRESSION_RATIO = 64
TIMESTAMP_TYPE_BIT = 0x08  # 1 = LogAppendTime
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
# Not Kafka's: set by kafka-wire on batches written from AMQP, whose header values
# are AMQP-encoded (application properties). Clients ignore attribute bits they do
# not know, and the CRC covers it, so it survives compaction and recovery.
AMQP_HEADERS_BIT = 0x4000
# In such a batch, the header holding an AMQP message's properties section whole
# (message-id, content-type, correlation-id...: Kafka has no place for them).
AMQP_PROPERTIES_HEADER = "x-opt-amqp-properties"

# Event Hubs offsets. The log's byte stream gives each batch a position; an
# event's offset is its batch's position times EVENTS_PER_POSITION plus its
# offset delta, so every event has its own, increasing within a partition, even
# where a compressed or compacted batch holds more records than bytes (position
# plus delta would then run into the next batch). A delta never reaches 10**6:
# librdkafka's batch.num.messages stops there and Event Hubs batches are 1 MB.
EVENTS_PER_POSITION = 1_000_000


def event_offset(batch_position: int, offset_delta: int) -> int:
    """The Event Hubs offset of the record ``offset_delta`` into the batch at ``batch_position``."""
    return batch_position * EVENTS_PER_POSITION + min(offset_delta, EVENTS_PER_POSITION - 1)


CREATE_TIME = 0
LOG_APPEND_TIME = 1

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")
_UINT32 = struct.Struct(">I")
_LENGTH_MAGIC = struct.Struct(">ixxxxb")  # batchLength @8 .. magic @16


class BatchHeader(NamedTuple):
    """The fixed header of one RecordBatch v2."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        """0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd."""
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> int:
        """0 CreateTime, 1 LogAppendTime."""
        return 1 if self.attributes & TIMESTAMP_TYPE_BIT else 0

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)


def parse_header(buf, pos: int = 0) -> BatchHeader:
    """Read the header at ``pos``; raises CorruptRecord if fewer than 61 bytes remain."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptRecord(f"record batch header at byte {pos} is truncated")
    return BatchHeader._make(HEADER.unpack_from(buf, pos))


def iter_batches(buf) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each complete batch; stop at the first
    incomplete or implausible one. No CRC check: use on trusted (stored) bytes."""
    end = len(buf)
    pos = 0
    unpack = HEADER.unpack_from
    make = BatchHeader._make
    while end - pos >= HEADER_SIZE:
        header = make(unpack(buf, pos))
        size = header.batch_length + LOG_OVERHEAD
        if header.batch_length < MIN_BATCH_LENGTH or size > end - pos:
            return
        yield pos, header
        pos += size


class BatchSummary(NamedTuple):
    """What a produced records blob holds, from its batch headers only."""
    size: int
    events: int
    codecs: frozenset
    transactional: bool
    idempotent: bool


def summarize(headers: list[BatchHeader], size: int) -> BatchSummary:
    """The summary of a blob of ``size`` bytes whose validation returned ``headers``."""
    codecs = set()
    events = 0
    transactional = idempotent = False
    for h in headers:
        events += h.records_count
        codecs.add(h.compression)
        transactional = transactional or h.is_transactional
        idempotent = idempotent or h.producer_id >= 0
    return BatchSummary(size, events, frozenset(codecs), transactional, idempotent)


def count_records(buf) -> int:
    """Records in a run of stored batches, from their headers."""
    return sum(header.records_count for _pos, header in iter_batches(buf))


def batch_crc(buf, pos: int, size: int) -> int:
    with memoryview(buf) as view:
        return crc32c(view[pos + ATTRIBUTES_OFFSET : pos + size])


def validate_records(buf) -> list[BatchHeader]:
    """Validate a Produce request's records blob and return its batch headers.

    Checks are those a Kafka broker makes before assigning offsets: each batch
    complete, magic 2, batchLength >= 49, CRC-32C valid, a compression codec
    Kafka knows (0-4), at least one record, a record count matching the offset
    range and one the bytes can hold, and no bytes after the last batch.
    Cost is one C CRC pass over the bytes plus O(batches) Python.

    Records are not walked (batches stay opaque), so the count is bounded, not
    checked: at most one record per MIN_RECORD_SIZE bytes of records, and
    MAX_COMPRESSION_RATIO times that when compressed. It is what quotas charge.
    """
    end = len(buf)
    if end == 0:
        raise InvalidRecord("the produce request holds no record batch")
    headers: list[BatchHeader] = []
    pos = 0
    unpack = HEADER.unpack_from
    make = BatchHeader._make
    with memoryview(buf) as view:
        while pos < end:
            remaining = end - pos
            # magic sits at the same place in v0/v1 message sets, so check it first:
            # an old client gets "unsupported magic", not "corrupt".
            if remaining < MAGIC_OFFSET + 1:
                raise CorruptRecord(f"record batch at byte {pos} is truncated ({remaining} bytes left)")
            batch_length, magic = _LENGTH_MAGIC.unpack_from(view, pos + 8)
            if magic != 2:
                raise UnsupportedMagic(
                    f"record batch at byte {pos} has magic {magic}; only RecordBatch v2 "
                    "(magic 2, Kafka 0.11+ clients) is supported"
                )
            if batch_length < MIN_BATCH_LENGTH:
                raise InvalidRecord(f"record batch at byte {pos} has batchLength {batch_length} < {MIN_BATCH_LENGTH}")
            size = batch_length + LOG_OVERHEAD
            if size > remaining:
                raise CorruptRecord(
                    f"record batch at byte {pos} is truncated: {size} bytes declared, {remaining} present"
                )
            header = make(unpack(view, pos))
            if crc32c(view[pos + ATTRIBUTES_OFFSET : pos + size]) != header.crc:
                raise CorruptRecord(f"record batch at byte {pos} fails its CRC-32C check")
            if header.attributes & COMPRESSION_MASK > MAX_CODEC:
                # Stored, it would stop every consumer of the partition at this offset.
                raise UnsupportedCompression(
                    f"record batch at byte {pos} names compression codec {header.attributes & COMPRESSION_MASK}; "
                    "Kafka's are 0 none, 1 gzip, 2 snappy, 3 lz4 and 4 zstd"
                )
            if header.records_count < 1:
                raise InvalidRecord(f"record batch at byte {pos} has {header.records_count} records")
            room = size - HEADER_SIZE
            if header.attributes & COMPRESSION_MASK:
                room *= MAX_COMPRESSION_RATIO
            if header.records_count * MIN_RECORD_SIZE > room:
                # Kafka finds the records missing when it reads them (INVALID_RECORD:
                # "Incorrect declared batch size, premature EOF reached").
                raise InvalidRecord(
                    f"record batch at byte {pos} claims {header.records_count} records but its "
                    f"{size - HEADER_SIZE} bytes of records cannot hold them"
                )
            if header.last_offset_delta < 0 or header.last_offset_delta + 1 != header.records_count:
                # Kafka's LogValidator refuses the same: the offset range must match the count.
                raise InvalidRecord(
                    f"record batch at byte {pos} has lastOffsetDelta {header.last_offset_delta} "
                    f"but {header.records_count} records"
                )
            headers.append(header)
            pos += size
    return headers


def patch_base_offset(buf, pos: int, base_offset: int) -> None:
    """Set baseOffset in place; it lies outside the CRC so nothing else changes."""
    _INT64.pack_into(buf, pos, base_offset)


def patch_leader_epoch(buf, pos: int, epoch: int) -> None:
    """Set partitionLeaderEpoch in place, as Kafka's LogValidator stamps the leader's
    epoch on every batch it appends; outside the CRC, so nothing else changes."""
    _INT32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_log_append_time(buf, pos: int, ts_ms: int) -> None:
    """Mark the batch LogAppendTime with maxTimestamp = ts_ms and recompute its CRC.

    This is what a Kafka broker does for topics with message.timestamp.type=
    LogAppendTime: consumers then read every record's timestamp as maxTimestamp.
    """
    (attributes,) = _INT16.unpack_from(buf, pos + ATTRIBUTES_OFFSET)
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_BIT)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, ts_ms)
    (batch_length,) = struct.unpack_from(">i", buf, pos + 8)
    _UINT32.pack_into(buf, pos + CRC_OFFSET, batch_crc(buf, pos, batch_length + LOG_OVERHEAD))


def stamp_log_append_time(buf, pos: int, size: int, attributes: int, ts_ms: int) -> None:
    """``set_log_append_time`` for a batch of ``size`` bytes whose validated header
    gave ``attributes``: the same bytes, without reading them back (the append path)."""
    _INT16.pack_into(buf, pos + ATTRIBUTES_OFFSET, attributes | TIMESTAMP_TYPE_BIT)
    _INT64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, ts_ms)
    with memoryview(buf) as view:
        _UINT32.pack_into(buf, pos + CRC_OFFSET, crc32c(view[pos + ATTRIBUTES_OFFSET:pos + size]))


def check_stored_batch(buf, pos: int, end: int) -> BatchHeader | None:
    """Return the header of a complete, CRC-valid v2 batch at ``pos`` (used by
    recovery), or None if the bytes there are torn, zero or corrupt."""
    found, _ = scan_stored_batches(buf, pos, min(end, len(buf)), -(2**63), limit=1)
    return found[0][1] if found else None


def scan_stored_batches(
    buf, pos: int, end: int, next_offset: int, *, limit: int | None = None
) -> tuple[list[tuple[int, BatchHeader]], int]:
    """Walk stored batches from ``pos`` while each is complete, magic 2,
    CRC-valid and starts at or after the previous one's next offset.

    Returns ``[(position, header)]`` and the position where the walk stopped
    (the end of the last good batch). This is crash recovery's inner loop, so
    it avoids per-batch allocations beyond the header tuple.
    """
    found: list[tuple[int, BatchHeader]] = []
    unpack, make = HEADER.unpack_from, BatchHeader._make
    with memoryview(buf) as view:
        while end - pos >= HEADER_SIZE and (limit is None or len(found) < limit):
            fields = unpack(view, pos)
            base_offset, batch_length, _, magic, crc, _, last_offset_delta = fields[:7]
            size = batch_length + LOG_OVERHEAD
            # recordsCount may be 0 in stored batches: compaction keeps emptied batches.
            if (
                magic != 2
                or batch_length < MIN_BATCH_LENGTH
                or size > end - pos
                or last_offset_delta < 0
                or base_offset < next_offset
                or crc32c(view[pos + ATTRIBUTES_OFFSET : pos + size]) != crc
            ):
                break
            found.append((pos, make(fields)))
            next_offset = base_offset + last_offset_delta + 1
            pos += size
    return found, pos


def record_timestamps(buf, pos: int, header: BatchHeader) -> list[tuple[int, int]] | None:
    """(offset, timestamp) of each record of an uncompressed CreateTime batch.

    Only ListOffsets needs record granularity, so this per-record Python walk
    stays off the produce/fetch paths. Returns None when the answer is per batch
    anyway (LogAppendTime: every record has maxTimestamp) or cannot be had
    without decompressing, and for malformed records (the CRC only proves the
    producer sent these bytes, not that they parse).
    """
    if header.compression or header.timestamp_type == LOG_APPEND_TIME:
        return None
    out = []
    p, end = pos + HEADER_SIZE, pos + header.size
    try:
        for _ in range(header.records_count):
            length, p = read_varint(buf, p)
            body = p
            p += 1  # attributes
            ts_delta, p = read_varint(buf, p)
            offset_delta, p = read_varint(buf, p)
            out.append((header.base_offset + offset_delta, header.base_timestamp + ts_delta))
            p = body + length
            if length < 0 or p > end:
                return None
    except IndexError:
        return None
    return out


def read_varint(buf, p: int) -> tuple[int, int]:
    """Zigzag varint (Kafka's record fields) at p -> (value, next position)."""
    shift = value = 0
    while True:
        byte = buf[p]
        p += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), p
        shift += 7
        if shift > 63:
            raise IndexError("varint too long")


INT32_MAX = 2**31 - 1
NO_PRODUCER_ID = -1
NO_SEQUENCE = -1


def last_sequence(header: BatchHeader) -> int:
    """The batch's last sequence number; sequences wrap from INT32_MAX to 0."""
    if header.base_sequence < 0:
        return NO_SEQUENCE
    return increment_sequence(header.base_sequence, header.last_offset_delta)


def increment_sequence(sequence: int, increment: int) -> int:
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def encode_batch(
    *,
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    records_count: int,
    records,
) -> bytearray:
    """A RecordBatch v2 with this header and ``records`` (the records section,
    compressed already if the attributes say so), with its CRC-32C computed."""
    buf = bytearray(HEADER_SIZE + len(records))
    HEADER.pack_into(
        buf, 0, base_offset, len(buf) - LOG_OVERHEAD, partition_leader_epoch, 2, 0, attributes,
        last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
        records_count,
    )
    buf[HEADER_SIZE:] = records
    _UINT32.pack_into(buf, CRC_OFFSET, batch_crc(buf, 0, len(buf)))
    return buf
