"""Record batches that pass the log's checks (length, magic, CRC-32C) but whose
records no reader can decode: a decompression bomb past log.records.decompressed_limit,
compressed bytes that do not decompress, records that do not parse. Produce refuses the
compressed ones now; ``stored_unchecked`` stores them as an older broker did."""
from __future__ import annotations

import io
import time
from functools import lru_cache

from kafka_wire import codec
from kafka_wire.log import batch as rb
from kafka_wire.log import records as rec

MIB = 1 << 20


@lru_cache(maxsize=None)
def zstd_zeros(size: int) -> bytes:
    """``size`` zeros, zstd-compressed without holding them (300 MiB: ~10 KB)."""
    import zstandard

    out = io.BytesIO()
    with zstandard.ZstdCompressor(level=3).stream_writer(out, closefd=False) as w:  # (no declared size)
        chunk = bytes(16 * MIB)
        left = size
        while left:
            n = min(left, len(chunk))
            w.write(chunk[:n])
            left -= n
    return out.getvalue()


def batch(values, *, codec_id: int = rec.NONE, body: bytes | None = None, count: int | None = None,
          key: bytes | None = b"k") -> bytes:
    ts = int(time.time() * 1000)
    if body is None:
        body = rec.compress(codec_id, b"".join(rec.encode_record(i, 0, key, v) for i, v in enumerate(values)))
    n = len(values) if count is None else count
    return bytes(rb.encode_batch(
        base_offset=0, partition_leader_epoch=0, attributes=codec_id, last_offset_delta=n - 1, base_timestamp=ts,
        max_timestamp=ts, producer_id=-1, producer_epoch=-1, base_sequence=-1, records_count=n, records=body))


def bomb() -> bytes:
    """One record's worth of zstd that decompresses to 300 MiB: past the 256 MiB floor."""
    return batch([b"x"], codec_id=rec.ZSTD, body=zstd_zeros(300 * MIB))


def not_decompressing() -> bytes:
    return batch([b"x"], codec_id=rec.GZIP, body=b"\x1f\x8b\x08\x00 is not a gzip stream")


def not_parsing() -> bytes:
    """Valid zstd holding no valid records (a record's length of -64)."""
    return batch([b"x", b"y"], codec_id=rec.ZSTD, body=rec.compress(rec.ZSTD, b"\x7f" * 40))


UNDECODABLE = {"bomb": bomb, "not-decompressing": not_decompressing, "not-parsing": not_parsing}


def produce(client, topic: str, blob: bytes, version: int = 7):
    """One raw batch to partition 0 (tests.rawclient.RawClient); the partition's answer."""
    answer = client.request(codec.ApiKey.Produce, version, transactional_id=None, acks=1, timeout_ms=30000,
                            topic_data=[(topic, [(0, blob)])])
    return answer.responses[0][1][0]


def stored_unchecked(monkeypatch) -> None:
    """Produce stores compressed batches unchecked, as brokers before the check did."""
    from kafka_wire.apis import produce as produce_api

    monkeypatch.setattr(produce_api, "check_records", lambda *args, **kwargs: True)
