"""The records of a stored RecordBatch v2, read straight into columns.

Capture reads every event once, so this walk is its hottest Python loop. It
reads the record fields in place (one-byte varints inline, the rare longer
ones through ``read_varint``) instead of building kafka-python's
``DefaultRecord`` objects, which cost about four times as much per event.
Decompression is kafka-python's codecs (snappy raw or in Kafka's xerial
framing, gzip, lz4, zstd).
"""
from __future__ import annotations

from kafka.codec import gzip_decode, lz4_decode, snappy_decode, zstd_decode

from kafka_wire.log.batch import COMPRESSION_MASK, CONTROL_BIT, HEADER_SIZE, CorruptRecord, parse_header, read_varint

_DECODERS = {1: gzip_decode, 2: snappy_decode, 3: lz4_decode, 4: zstd_decode}


def records_section(data: bytes):
    """(header, buffer, start): the batch's header and its records, decompressed
    where the batch is compressed; None for a control batch."""
    header = parse_header(data, 0)
    if header.attributes & CONTROL_BIT:
        return None
    codec = header.attributes & COMPRESSION_MASK
    if not codec:
        return header, data, HEADER_SIZE
    decoder = _DECODERS.get(codec)
    if decoder is None:
        raise CorruptRecord(f"record batch at offset {header.base_offset}: unknown compression {codec}")
    return header, decoder(bytes(data[HEADER_SIZE:header.size])), 0


def read_records(data: bytes, offsets: list, keys: list, headers: list, bodies: list) -> int | None:
    """Append each record's offset delta, key, headers (``[(name, value)]``) and
    value to the lists; returns the batch's base offset (None: a control batch,
    nothing appended). Null keys, values and header values are None.

    Varints of one or two bytes (nearly all of them: lengths under 8 KiB,
    offset deltas under 8,192) are read inline; longer ones by ``read_varint``."""
    section = records_section(data)
    if section is None:
        return None
    header, buf, p = section
    buf = bytes(buf)  # slices of bytes are bytes: no copy per field into a new object
    add_offset, add_key, add_headers, add_body = offsets.append, keys.append, headers.append, bodies.append
    for _ in range(header.records_count):
        # length (skipped: the fields say where they end), attributes
        p += 2 if buf[p] < 0x80 else (3 if buf[p + 1] < 0x80 else read_varint(buf, p)[1] - p + 1)
        # timestamp delta (skipped: capture uses the batch's append time)
        p += 1 if buf[p] < 0x80 else (2 if buf[p + 1] < 0x80 else read_varint(buf, p)[1] - p)
        b = buf[p]
        if b < 0x80:
            z, p = b, p + 1
        elif buf[p + 1] < 0x80:
            z, p = (b & 0x7F) | (buf[p + 1] << 7), p + 2
        else:
            z, p = _zigzag_raw(buf, p)
        add_offset((z >> 1) ^ -(z & 1))
        b = buf[p]
        if b < 0x80:
            z, p = b, p + 1
        elif buf[p + 1] < 0x80:
            z, p = (b & 0x7F) | (buf[p + 1] << 7), p + 2
        else:
            z, p = _zigzag_raw(buf, p)
        if z & 1:  # negative: -1, null
            add_key(None)
        else:
            n = z >> 1
            add_key(buf[p:p + n])
            p += n
        b = buf[p]
        if b < 0x80:
            z, p = b, p + 1
        elif buf[p + 1] < 0x80:
            z, p = (b & 0x7F) | (buf[p + 1] << 7), p + 2
        else:
            z, p = _zigzag_raw(buf, p)
        if z & 1:
            add_body(None)
        else:
            n = z >> 1
            add_body(buf[p:p + n])
            p += n
        b = buf[p]
        if b == 0:
            add_headers([])
            p += 1
            continue
        count, p = read_varint(buf, p)
        hs = []
        for _ in range(count):
            n, p = read_varint(buf, p)
            name = buf[p:p + n].decode("utf-8")
            p += n
            n, p = read_varint(buf, p)
            if n < 0:
                hs.append((name, None))
            else:
                hs.append((name, buf[p:p + n]))
                p += n
        add_headers(hs)
    if p > len(buf):
        raise CorruptRecord(f"record batch at offset {header.base_offset}: records run past its end")
    return header.base_offset


def _zigzag_raw(buf: bytes, p: int) -> tuple[int, int]:
    """A varint's raw (still zigzagged) value at ``p``, and where it ends."""
    shift = value = 0
    while True:
        byte = buf[p]
        p += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, p
        shift += 7
        if shift > 63:
            raise IndexError("varint too long")
