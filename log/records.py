"""Records inside a RecordBatch v2: the level the hot path never reaches.

Produce and Fetch keep batches opaque (``batch``). Three things need the
records themselves: compaction (keys, tombstones), transaction markers (the
control record a broker writes) and producer-state recovery (is a marker a
COMMIT or an ABORT). Their encoding lives here, compression codecs included.

A record (varints are zigzag, Kafka's ``Varint``)::

    length varint | attributes int8 | timestampDelta varlong | offsetDelta varint |
    keyLength varint | key | valueLength varint | value | headerCount varint | headers

Compaction keeps the surviving records byte for byte (their deltas stay valid
because a rebuilt batch keeps its base offset and base timestamp) and only
recompresses them with the batch's codec, written the way the Java client
writes it: gzip (zlib, level 6), snappy in xerial framing with 32 KiB blocks,
LZ4 frames with independent 64 KiB blocks and no checksums (Kafka's
KafkaLZ4BlockOutputStream), zstd frames (level 3). The codec libraries are
optional: without one, batches of that codec are left as they are.
"""

from __future__ import annotations

import gzip
import logging
import struct
import zlib
from typing import NamedTuple

from . import batch as rb
from .batch import BatchHeader, read_varint
from .errors import CorruptRecord, LogError

logger = logging.getLogger(__name__)

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd")

CONTROL_ABORT = 0
CONTROL_COMMIT = 1
_CONTROL_KEY = struct.Struct(">hh")  # version 0, type
_CONTROL_VALUE = struct.Struct(">hi")  # version 0, coordinator epoch

XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)  # magic, version 1, compatible 1
XERIAL_BLOCK = 32 * 1024
_INT32 = struct.Struct(">i")


class UnsupportedCodec(LogError):
    """The library for a batch's compression codec is not installed."""


class Record(NamedTuple):
    """A record as compaction sees it; ``raw`` is the whole encoded record."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    null_value: bool  # a tombstone when the key is not null
    raw: bytes


# -- varints --------------------------------------------------------------------


def _encode_varint(value: int) -> bytes:
    v = (value << 1) ^ (value >> 63)
    out = bytearray()
    while v & ~0x7F:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


# Lengths and deltas are nearly always small: a table answers them (-1 is a null's length).
# SMALL_VARINTS[v + 1] is v's varint, for -1 <= v < SMALL_VARINTS_END (hot loops index it directly).
SMALL_VARINTS_END = (1 << 14) - 1
SMALL_VARINTS = [_encode_varint(v) for v in range(-1, 1 << 14)]


def encode_varint(value: int) -> bytes:
    """Zigzag varint (Kafka's record fields)."""
    if -1 <= value < SMALL_VARINTS_END:
        return SMALL_VARINTS[value + 1]
    return _encode_varint(value)


# -- codecs ---------------------------------------------------------------------


# Decompression is bounded: a few KiB of zstd or gzip can stand for GiBs of zeros, and
# every reader of a batch (the cleaner, AMQP receivers, Capture, the console) holds the
# records whole. A batch may grow to DECOMPRESSION_RATIO times its compressed records,
# never less than MIN_DECOMPRESSED_LIMIT and never more than MAX_DECOMPRESSED_LIMIT.
# Real clients go far past text's 5-20x: the Java producer's ratio estimate falls
# without a floor, and a zstd batch of 1,000-byte zero values was 207 KB for 90 MB
# (436x), so the floor is 256 MiB. A bomb costs a reader at most 1 GiB, for a moment.
DECOMPRESSION_RATIO = 1024
MIN_DECOMPRESSED_LIMIT = 256 << 20
MAX_DECOMPRESSED_LIMIT = 1 << 30


def decompressed_limit(compressed_size: int) -> int:
    """The most bytes the records of a batch compressed to ``compressed_size`` may hold."""
    return min(MAX_DECOMPRESSED_LIMIT, max(MIN_DECOMPRESSED_LIMIT, DECOMPRESSION_RATIO * compressed_size))


class _TooLarge(Exception):
    pass


def decompress(codec: int, data, limit: int | None = None) -> bytes:
    """The records section ``data`` decompressed with ``codec``. Raises CorruptRecord
    if it does not decompress or would exceed ``limit`` bytes (default
    ``decompressed_limit(len(data))``), UnsupportedCodec if the library is missing."""
    data = bytes(data)
    if limit is None:
        limit = decompressed_limit(len(data))
    try:
        if codec == NONE:
            return data
        if codec == GZIP:
            return _gunzip(data, limit)
        if codec == SNAPPY:
            return _snappy_decompress(data, limit)
        if codec == LZ4:
            return _lz4_decompress(data, limit)
        if codec == ZSTD:
            import zstandard

            _zstd_frames_whole(data)
            with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True) as reader:
                parts, total, step = [], 0, _step(data)
                while chunk := reader.read(step):
                    total += len(chunk)
                    if total > limit:
                        parts.clear()  # the traceback keeps this frame's locals alive
                        raise _TooLarge
                    parts.append(chunk)
                return parts[0] if len(parts) == 1 else b"".join(parts)
    except ImportError as exc:
        raise UnsupportedCodec(f"{CODEC_NAMES[codec]} is not installed: {exc}") from exc
    except _TooLarge:
        raise CorruptRecord(
            f"a {CODEC_NAMES[codec]} batch of {len(data)} bytes decompresses to more than {limit} bytes "
            f"(a batch's records may hold {DECOMPRESSION_RATIO} times their compressed size, at least "
            f"{MIN_DECOMPRESSED_LIMIT >> 20} MiB and at most {MAX_DECOMPRESSED_LIMIT >> 20} MiB)"
        ) from None
    except Exception as exc:  # each codec library raises its own error types
        raise CorruptRecord(f"cannot decompress a {CODEC_NAMES[codec]} batch: {exc}") from exc
    raise CorruptRecord(f"unknown compression codec {codec}")


def _step(data: bytes) -> int:
    """Bytes to decompress at a time: the whole batch at once for all but the most
    compressible data, without sizing a buffer by the limit (that costs more than a
    16 KiB batch's decompression)."""
    return max(1 << 18, 8 * len(data))


_ZSTD_MAGIC = 0xFD2FB528
_U32LE = struct.Struct("<I")


def _zstd_frames_whole(data) -> None:
    """Raise ValueError unless ``data`` is whole zstd frames (RFC 8878: a frame's header,
    then blocks to the one marked last, then its checksum if it has one; skippable frames
    by their size). Block headers only, nothing decompressed: zstd's stream reader gives
    what a frame cut short holds (nothing for a short first frame) as if it were whole."""
    p, end = 0, len(data)
    while p < end:
        if p + 4 > end:
            raise ValueError("a zstd frame is cut short")
        magic = _U32LE.unpack_from(data, p)[0]
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable: its size, then that many bytes
            if p + 8 > end:
                raise ValueError("a skippable zstd frame is cut short")
            p += 8 + _U32LE.unpack_from(data, p + 4)[0]
            if p > end:
                raise ValueError("a skippable zstd frame is cut short")
            continue
        if magic != _ZSTD_MAGIC or p + 5 > end:
            raise ValueError("not a zstd frame")
        fhd = data[p + 4]
        single = fhd >> 5 & 1
        p += 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + ((1 if single else 0), 2, 4, 8)[fhd >> 6]
        while True:
            if p + 3 > end:
                raise ValueError("the zstd frame ends before its last block")
            head = data[p] | data[p + 1] << 8 | data[p + 2] << 16
            kind = head >> 1 & 3
            if kind == 3:
                raise ValueError("a zstd block of the reserved type")
            p += 3 + (1 if kind == 1 else head >> 3)
            if head & 1:
                break
        p += 4 if fhd & 4 else 0  # the content checksum
        if p > end:
            raise ValueError("the zstd frame ends before its last block")


def _lz4_decompress(data: bytes, limit: int) -> bytes:
    """The first LZ4 frame of ``data`` (what follows it is ignored, as lz4.frame.decompress does)."""
    frame = _lz4().LZ4FrameDecompressor()
    parts, total, step = [], 0, _step(data)
    chunk = frame.decompress(data, max_length=step)
    while True:
        total += len(chunk)
        if total > limit:
            parts.clear()  # the traceback keeps this frame's locals alive
            raise _TooLarge
        parts.append(chunk)
        if frame.eof:
            return parts[0] if len(parts) == 1 else b"".join(parts)
        if frame.needs_input:
            raise ValueError("the LZ4 frame is incomplete")
        chunk = frame.decompress(b"", max_length=step)


_GZIP_MEMBER = b"\x1f\x8b\x08"  # magic and deflate: what Java's GZIPInputStream takes as a header


def _gunzip(data: bytes, limit: int) -> bytes:
    """gzip.decompress (every member, each one's CRC and size checked) with at most ``limit``
    bytes out. Bytes after a member that do not start another (zero padding, say) end the
    stream, as Kafka's GZIPInputStream takes them; a member begun there must be whole."""
    parts, total = [], 0
    while data and (not parts or data[:3] == _GZIP_MEMBER):
        member = zlib.decompressobj(wbits=31)  # gzip framing
        chunk = member.decompress(data, limit - total + 1)
        total += len(chunk)
        if total > limit:
            parts = chunk = None  # the traceback keeps this frame's locals alive
            raise _TooLarge
        if not member.eof:
            raise EOFError("the gzip stream ends before its end-of-stream marker")
        parts.append(chunk)
        data = member.unused_data
    return parts[0] if len(parts) == 1 else b"".join(parts)


def compress(codec: int, data: bytes) -> bytes:
    try:
        if codec == NONE:
            return data
        if codec == GZIP:
            return gzip.compress(data, compresslevel=6, mtime=0)
        if codec == SNAPPY:
            raw = _snappy_raw_compress()
            blocks = [XERIAL_HEADER]
            for i in range(0, len(data), XERIAL_BLOCK):
                block = raw(data[i : i + XERIAL_BLOCK])
                blocks += (_INT32.pack(len(block)), block)
            return b"".join(blocks)
        if codec == LZ4:
            lz4f = _lz4()
            return lz4f.compress(
                data, block_size=lz4f.BLOCKSIZE_MAX64KB, block_linked=False,
                content_checksum=False, block_checksum=False, store_size=False,
            )
        if codec == ZSTD:
            import zstandard

            return zstandard.ZstdCompressor(level=3).compress(data)
    except ImportError as exc:
        raise UnsupportedCodec(f"{CODEC_NAMES[codec]} is not installed: {exc}") from exc
    raise ValueError(f"unknown compression codec {codec}")


def _snappy_raw_compress():
    try:
        import cramjam

        return lambda b: bytes(cramjam.snappy.compress_raw(b))
    except ImportError:
        import snappy

        return snappy.compress


def _snappy_raw_decompress():
    try:
        import cramjam

        return lambda b: bytes(cramjam.snappy.decompress_raw(b))
    except ImportError:
        import snappy

        return snappy.decompress


def _snappy_decompress(data: bytes, limit: int) -> bytes:
    raw = _snappy_raw_decompress()
    if not data.startswith(XERIAL_HEADER[:8]):
        if _snappy_length(data, 0) > limit:
            raise _TooLarge
        return raw(data)  # librdkafka and others may send plain snappy
    out, p, total = [], 16, 0
    while p < len(data):
        (length,) = _INT32.unpack_from(data, p)
        p += 4
        if length < 0 or p + length > len(data):
            raise ValueError("truncated xerial snappy block")
        total += _snappy_length(data, p)
        if total > limit:
            raise _TooLarge
        out.append(raw(data[p : p + length]))
        p += length
    return b"".join(out)


def _snappy_length(data: bytes, p: int) -> int:
    """The uncompressed length a raw snappy block at ``p`` declares (its preamble, an
    unsigned varint), read before the library sizes its output by it."""
    value = shift = 0
    while shift < 35:
        byte = data[p]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value
        p += 1
        shift += 7
    raise ValueError("snappy length preamble too long")


def _lz4():
    import lz4.frame

    return lz4.frame


# -- records --------------------------------------------------------------------


def records_bytes(batch, header: BatchHeader) -> bytes:
    """The records section of the batch at the start of ``batch``, decompressed."""
    return decompress(header.compression, memoryview(batch)[rb.HEADER_SIZE : header.size])


# Where a record whose length is a varint of one byte ends, less where it starts, by that
# byte; of two bytes, less where it starts and 64 times the second byte, by the first one.
# A negative length's (an odd first byte) is far before any record: the fields never end there.
LENGTH_ENDS = [-(1 << 62) if b & 1 else (1 + (b >> 1) if b < 0x80 else (b >> 1) - 62) for b in range(256)]


def read_records(batch, header: BatchHeader) -> list[Record]:
    """Every record of the batch at the start of ``batch``. Raises CorruptRecord
    if they do not parse, UnsupportedCodec if the codec is missing.

    The rule is Kafka's (DefaultRecord.readFrom and the batch's record iterator),
    and every reader's (read_event_columns, the AMQP receivers' batch_events): each of
    records_count records parses in full, headers included, and ends exactly where
    its length says; no byte follows the last one. The cleaner keeps a batch it
    cannot read as it is, so it never rewrites one the readers refuse into one they
    read (or the other way round)."""
    data = records_bytes(batch, header)
    varint, ends = read_varint, LENGTH_ENDS
    out: list[Record] = []
    add = out.append
    p = 0
    try:
        for _ in range(header.records_count):
            # Varints of one or two bytes (nearly all) are read inline, as read_event_columns does
            start = p
            b = data[p]  # the length: where the fields must end
            if b < 0x80:
                stop = p + ends[b]
                p += 2  # (past the attributes)
            elif (z := data[p + 1]) < 0x80:
                stop = p + ends[b] + (z << 6)
                p += 3
            else:
                n, p = varint(data, p)
                stop, p = p + n, p + 1
            b = data[p]
            if b < 0x80:
                ts_delta, p = (b >> 1) ^ -(b & 1), p + 1
            elif data[p + 1] < 0x80:
                z = (b & 0x7F) | (data[p + 1] << 7)
                ts_delta, p = (z >> 1) ^ -(z & 1), p + 2
            else:
                ts_delta, p = varint(data, p)
            b = data[p]
            if b < 0x80:
                offset_delta, p = (b >> 1) ^ -(b & 1), p + 1
            elif data[p + 1] < 0x80:
                z = (b & 0x7F) | (data[p + 1] << 7)
                offset_delta, p = (z >> 1) ^ -(z & 1), p + 2
            else:
                offset_delta, p = varint(data, p)
            b = data[p]
            if b == 1:  # a null key (-1)
                key, p = None, p + 1
            else:
                n, p = varint(data, p)
                key = None
                if n >= 0:
                    key = data[p:p + n]
                    p += n
            b = data[p]
            if b < 0x80:
                n, p = (b >> 1) ^ -(b & 1), p + 1
            elif data[p + 1] < 0x80:
                z = (b & 0x7F) | (data[p + 1] << 7)
                n, p = (z >> 1) ^ -(z & 1), p + 2
            else:
                n, p = varint(data, p)
            if n > 0:
                p += n
            if data[p]:
                p = _skip_headers(data, p)
            else:
                p += 1
            if p != stop:
                raise IndexError(misfit(data, start, p))
            add(Record(offset_delta, ts_delta, key, n < 0, data[start:stop]))
        if p != len(data):
            raise IndexError(f"{len(data) - p} bytes follow the last of {header.records_count} records")
    except IndexError as exc:
        raise CorruptRecord(f"records of the batch at offset {header.base_offset} do not parse: {exc}") from None
    return out


def misfit(data, start: int, p: int) -> str:
    """Why the record at ``start``, whose fields end at ``p``, is refused (Kafka's words)."""
    length, body = read_varint(data, start)
    return f"invalid record size: expected to read {length} bytes in record payload, but instead read {p - body}"


def _skip_headers(data, p: int) -> int:
    """Where the headers whose count is at ``p`` end; IndexError unless they parse
    (a negative count or name length: Kafka refuses them too)."""
    count, p = read_varint(data, p)
    if count < 0:
        raise IndexError(f"invalid number of record headers: {count}")
    if count > len(data) - p:  # (two bytes a header at least: never a long walk)
        raise IndexError("the headers run past the batch")
    varint = read_varint
    for _ in range(count):
        b = data[p]
        if b < 0x80 and not b & 1:  # a name's length of one byte (most), not negative
            p += 1 + (b >> 1)
        else:
            n, p = varint(data, p)
            if n < 0:
                raise IndexError("a header's name has a negative length")
            p += n
        b = data[p]
        if b < 0x80:
            p += 1 + (0 if b & 1 else b >> 1)  # (odd: a null value, or -2 and less)
        else:
            n, p = varint(data, p)
            if n > 0:
                p += n
    return p


def read_events(batch, header: BatchHeader) -> list[tuple[int, bytes | None, bytes | None, list]]:
    """(offset delta, key, value, [(header name, value)]) of every record of the
    batch at the start of ``batch`` (the AMQP receive path's hot loop): see
    ``read_event_columns``."""
    offsets, keys, headers, values = [], [], [], []
    read_event_columns(batch, header, offsets, keys, headers, values)
    return list(zip(offsets, keys, values, headers))


ALL_HEADERS = 1 << 63  # more than a record can hold: read_event_columns' default


def read_event_columns(batch, header: BatchHeader, offsets: list, keys: list, headers: list,
                       values: list, max_headers: int = ALL_HEADERS,
                       header_counts: dict[int, int] | None = None) -> None:
    """Append every record's offset delta, key, ``[(header name, value)]`` and value
    (None where null) to the lists: what an Event Hubs reader needs, without
    building kafka-python's record objects (Capture's hot loop: ~1.5 µs a record).
    Varints of one or two bytes (nearly all: lengths under 8 KiB, deltas under
    8,192) are read inline. Raises CorruptRecord if the records do not parse by
    Kafka's rule (``read_records``': a record ends where its length says),
    UnsupportedCodec if the codec is missing.

    ``max_headers``: a record's headers past its first ``max_headers`` are not read
    but skipped by the record's length (a 1 MB record can hold 60,000, ~1-2.5 µs
    each to read: the console shows 100); ``header_counts[i]`` then says how many
    the record whose headers are ``headers[i]`` has (only those cut are entered)."""
    data = records_bytes(batch, header)
    varint, ends = read_varint, LENGTH_ENDS
    add_offset, add_key, add_headers, add_value = offsets.append, keys.append, headers.append, values.append
    p = 0
    try:
        for _ in range(header.records_count):
            start = p
            # length (where the fields must end), attributes
            b = data[p]
            if b < 0x80:
                stop = p + ends[b]
                p += 2
            elif (z := data[p + 1]) < 0x80:
                stop = p + ends[b] + (z << 6)
                p += 3
            else:
                n, p = varint(data, p)
                stop, p = p + n, p + 1
            # timestamp delta: skipped (readers use the batch's time)
            p += 1 if data[p] < 0x80 else (2 if data[p + 1] < 0x80 else varint(data, p)[1] - p)
            b = data[p]
            if b < 0x80:
                n, p = (b >> 1) ^ -(b & 1), p + 1
            elif data[p + 1] < 0x80:
                z = (b & 0x7F) | (data[p + 1] << 7)
                n, p = (z >> 1) ^ -(z & 1), p + 2
            else:
                n, p = varint(data, p)
            add_offset(n)
            b = data[p]
            if b < 0x80:
                n, p = (b >> 1) ^ -(b & 1), p + 1
            elif data[p + 1] < 0x80:
                z = (b & 0x7F) | (data[p + 1] << 7)
                n, p = (z >> 1) ^ -(z & 1), p + 2
            else:
                n, p = varint(data, p)
            if n < 0:
                add_key(None)
            else:
                add_key(data[p:p + n])
                p += n
            b = data[p]
            if b < 0x80:
                n, p = (b >> 1) ^ -(b & 1), p + 1
            elif data[p + 1] < 0x80:
                z = (b & 0x7F) | (data[p + 1] << 7)
                n, p = (z >> 1) ^ -(z & 1), p + 2
            else:
                n, p = varint(data, p)
            if n < 0:
                add_value(None)
            else:
                add_value(data[p:p + n])
                p += n
            if data[p] == 0:
                add_headers([])
                p += 1
                if p != stop:
                    raise IndexError(misfit(data, start, p))
                continue
            count, p = varint(data, p)
            if count < 0:
                raise IndexError(f"invalid number of record headers: {count}")
            hs = []
            for _ in range(count if count <= max_headers else max_headers):
                b = data[p]
                if b < 0x80 and not b & 1:  # a name's length of one byte (most), not negative
                    n, p = b >> 1, p + 1
                else:
                    n, p = varint(data, p)
                    if n < 0:  # Kafka refuses it too: read, it steps back (and can loop 2**31 times)
                        raise IndexError("a header's name has a negative length")
                name, p = data[p:p + n].decode("utf-8", "replace"), p + n
                n, p = varint(data, p)
                if n >= 0:
                    hs.append((name, data[p:p + n]))
                    p += n
                else:
                    hs.append((name, None))
            if count > max_headers:
                if stop < p:
                    raise IndexError("a record's headers run past its length")
                p = stop  # (past the end of the records: the check below)
                if header_counts is not None:
                    header_counts[len(headers)] = count
            elif p != stop:
                raise IndexError(misfit(data, start, p))
            add_headers(hs)
        if p != len(data):  # (as Kafka's record iterator: garbage is seldom read to the exact end)
            raise IndexError("records run past the batch" if p > len(data) else
                             f"{len(data) - p} bytes follow the last of {header.records_count} records")
    except IndexError as exc:
        raise CorruptRecord(f"records of the batch at offset {header.base_offset} do not parse: {exc}") from None


def check_records(batch, header: BatchHeader, most: int | None = None) -> bool:
    """Raise CorruptRecord unless the records of a compressed batch decompress within
    ``decompressed_limit``. Produce calls it for compressed batches only (Kafka's
    LogValidator decompresses those too), so that no reader (the cleaner, AMQP receivers,
    Capture, the console) meets a batch it cannot decompress; an uncompressed batch stays
    on the zero-copy path. The records are not parsed, as Kafka's LogValidator parses
    them: that walk cost 1-1.5 us a record in Python, thirty times the decompression and
    the whole of a compressed produce's cost; each reader refuses records that do not
    parse (CorruptRecord) and its caller goes on past them. UnsupportedCodec if the
    codec's library is missing.

    ``most``: check only a batch of at most ``most`` records decompressing to at most
    ``most`` KiB and answer False for a larger one, unchecked (the event loop checks
    small batches at once and hands the others to a thread); True when checked."""
    if most is None:
        records_bytes(batch, header)
        return True
    if header.records_count > most:
        return False
    try:
        decompress(header.compression, memoryview(batch)[rb.HEADER_SIZE:header.size],
                   min(decompressed_limit(header.size - rb.HEADER_SIZE), most << 10))
    except CorruptRecord:
        return False  # past the small bound, or corrupt: the unbounded check says which
    return True


def record_keys(buf):
    """The key of every record in a run of batches (None for a null key), in order."""
    for pos, header in rb.iter_batches(buf):
        for record in read_records(memoryview(buf)[pos : pos + header.size], header):
            yield None if record.key is None else bytes(record.key)


def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                  headers: list[tuple[bytes, bytes | None]] = ()) -> bytes:
    """One record; ``headers`` are (UTF-8 name, value) pairs."""
    varint = encode_varint
    parts = [b"\x00", varint(timestamp_delta), varint(offset_delta),
             b"\x01" if key is None else varint(len(key)), key or b"",
             b"\x01" if value is None else varint(len(value)), value or b"",
             varint(len(headers))]
    for name, field in headers:
        parts += (varint(len(name)), name,
                  b"\x01" if field is None else varint(len(field)), field or b"")
    body = b"".join(parts)
    return varint(len(body)) + body


def rebuild_batch(header: BatchHeader, records: list[Record]) -> bytearray:
    """The batch ``header`` with only ``records``, as Kafka's cleaner writes it:
    base offset, lastOffsetDelta (so the producer's last sequence survives),
    base sequence and base timestamp unchanged; the records recompressed with
    the batch's codec. maxTimestamp is recomputed for CreateTime batches.
    Without records the batch becomes an empty, uncompressed header."""
    attributes = header.attributes
    max_ts = header.max_timestamp
    if not records:
        attributes &= ~rb.COMPRESSION_MASK
        return rb.encode_batch(
            base_offset=header.base_offset, partition_leader_epoch=header.partition_leader_epoch,
            attributes=attributes, last_offset_delta=header.last_offset_delta, base_timestamp=max_ts,
            max_timestamp=max_ts, producer_id=header.producer_id, producer_epoch=header.producer_epoch,
            base_sequence=header.base_sequence, records_count=0, records=b"",
        )
    if header.timestamp_type == rb.CREATE_TIME:
        max_ts = max(header.base_timestamp + r.timestamp_delta for r in records)
    payload = compress(header.compression, b"".join(r.raw for r in records))
    return rb.encode_batch(
        base_offset=header.base_offset, partition_leader_epoch=header.partition_leader_epoch,
        attributes=attributes, last_offset_delta=header.last_offset_delta, base_timestamp=header.base_timestamp,
        max_timestamp=max_ts, producer_id=header.producer_id, producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence, records_count=len(records), records=payload,
    )


# -- control records ------------------------------------------------------------


def control_batch(
    *, base_offset: int, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
    timestamp: int, partition_leader_epoch: int = 0,
) -> bytearray:
    """A transaction marker: a control, transactional batch holding one control
    record (key: version 0, type 0 ABORT / 1 COMMIT; value: version 0,
    coordinator epoch). Kafka writes markers uncompressed with no sequence."""
    record = encode_record(
        0, 0, _CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT),
        _CONTROL_VALUE.pack(0, coordinator_epoch),
    )
    return rb.encode_batch(
        base_offset=base_offset, partition_leader_epoch=partition_leader_epoch,
        attributes=rb.CONTROL_BIT | rb.TRANSACTIONAL_BIT, last_offset_delta=0, base_timestamp=timestamp,
        max_timestamp=timestamp, producer_id=producer_id, producer_epoch=producer_epoch,
        base_sequence=rb.NO_SEQUENCE, records_count=1, records=record,
    )


def read_control(batch, header: BatchHeader) -> tuple[int, int]:
    """(control type, coordinator epoch) of a marker batch; (-1, -1) when its
    record is not a transaction marker Kafka knows (KIP-98 types 0 and 1)."""
    try:
        records = read_records(batch, header)
    except LogError:
        return -1, -1
    if len(records) != 1 or records[0].key is None or len(records[0].key) < 4:
        return -1, -1
    _, kind = _CONTROL_KEY.unpack_from(records[0].key)
    if kind not in (CONTROL_ABORT, CONTROL_COMMIT):
        return -1, -1
    value = _record_value(records[0].raw)
    epoch = _CONTROL_VALUE.unpack_from(value)[1] if value is not None and len(value) >= 6 else -1
    return kind, epoch


def _record_value(raw: bytes) -> bytes | None:
    """The value of one encoded record (compaction never needs it, markers do)."""
    _, p = read_varint(raw, 0)  # length
    p += 1  # attributes
    _, p = read_varint(raw, p)  # timestamp delta
    _, p = read_varint(raw, p)  # offset delta
    key_len, p = read_varint(raw, p)
    p += max(key_len, 0)
    value_len, p = read_varint(raw, p)
    return None if value_len < 0 else raw[p : p + value_len]
