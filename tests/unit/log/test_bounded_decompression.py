"""Decompression is bounded (log/records.py): a few KiB of zstd or gzip can stand for
GiBs of zeros, and every reader of a batch holds its records whole. Past the bound a
batch is a corrupt record, which each reader already handles; the cleaner keeps it."""
from __future__ import annotations

import io
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafka_wire.log import batch as rb
from kafka_wire.log import records as rec
from kafka_wire.log.errors import CorruptRecord

from .log_helpers import read_all
from .test_cleaner import Env

CODECS = [rec.GZIP, rec.SNAPPY, rec.LZ4, rec.ZSTD]
MIB = 1 << 20


def _zstd_zeros(prefix: bytes, size: int) -> bytes:
    """``prefix`` then zeros up to ``size`` bytes, zstd-compressed without holding them."""
    import zstandard

    out = io.BytesIO()
    with zstandard.ZstdCompressor(level=3).stream_writer(out, closefd=False, size=size) as w:
        w.write(prefix)
        chunk = bytes(16 * MIB)
        left = size - len(prefix)
        while left:
            w.write(chunk[:min(left, len(chunk))])
            left -= min(left, len(chunk))
    return out.getvalue()


@given(codec=st.sampled_from(CODECS), data=st.binary(max_size=4096), repeat=st.integers(1, 64))
def test_a_batch_decompresses_exactly_up_to_its_limit(codec, data, repeat):
    records = data * repeat  # repeated: compressible, as records are
    packed = rec.compress(codec, records)
    assert rec.decompress(codec, packed) == records
    assert rec.decompress(codec, packed, limit=len(records)) == records
    if records:
        with pytest.raises(CorruptRecord, match="decompresses to more than"):
            rec.decompress(codec, packed, limit=len(records) - 1)


@pytest.fixture
def small_limit(monkeypatch):
    """The floor at 8 MiB and the ratio at 64, so a bomb past them is quick to make
    (the rule is the same)."""
    monkeypatch.setattr(rec, "MIN_DECOMPRESSED_LIMIT", 8 * MIB)
    monkeypatch.setattr(rec, "DECOMPRESSION_RATIO", 64)
    return 8 * MIB


@pytest.mark.parametrize("codec", [rec.GZIP, rec.LZ4, rec.ZSTD])
def test_a_compression_bomb_is_a_corrupt_record(codec, small_limit):
    bomb = rec.compress(codec, bytes(small_limit + 1))
    assert rec.decompressed_limit(len(bomb)) == small_limit
    with pytest.raises(CorruptRecord, match="decompresses to more than"):
        rec.decompress(codec, bomb)


def test_the_limit_takes_what_real_producers_write_and_stops_at_1_gib():
    # The Java producer wrote a zstd batch of 207,140 bytes holding 90 MB of records.
    assert rec.decompressed_limit(207_140) >= 90_000_000
    assert rec.decompressed_limit(1 << 20) == rec.MAX_DECOMPRESSED_LIMIT == 1 << 30
    records = bytes(100 * MIB)  # 100 MiB of zeros: some ten thousand times smaller packed
    packed = rec.compress(rec.ZSTD, records)
    assert len(packed) * 1024 < len(records) and rec.decompress(rec.ZSTD, packed) == records


def test_a_snappy_length_preamble_past_the_limit_is_refused_before_decompressing():
    lying = bytes([0x80, 0x80, 0x80, 0x80, 0x04]) + b"\x00" * 16  # a preamble of 1 GiB
    with pytest.raises(CorruptRecord, match="decompresses to more than"):
        rec.decompress(rec.SNAPPY, lying)
    framed = rec.XERIAL_HEADER + len(lying).to_bytes(4, "big") + lying
    with pytest.raises(CorruptRecord, match="decompresses to more than"):
        rec.decompress(rec.SNAPPY, framed)


def test_the_cleaner_keeps_a_compression_bomb_as_it_is_and_compacts_the_rest(tmp_path, small_limit):
    env = Env(tmp_path, **{"segment.bytes": "4096"})
    record = rec.encode_record(0, 0, b"bomb", b"v")
    bomb_body = _zstd_zeros(record, 256 * MIB)  # ~8 KiB: one record, then 256 MiB of zeros
    ts = env.now
    bomb = bytes(rb.encode_batch(
        base_offset=0, partition_leader_epoch=0, attributes=rec.ZSTD, last_offset_delta=0, base_timestamp=ts,
        max_timestamp=ts, producer_id=-1, producer_epoch=-1, base_sequence=-1, records_count=1,
        records=bomb_body))
    env.put((b"k", b"old"))
    env.log.append(bomb, now_ms=env.now)
    env.put((b"k", b"new"))
    env.log.roll()
    tracemalloc.start()
    try:
        result = env.clean()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100 * MIB, f"the cleaner held {peak / MIB:.0f} MiB"
    assert result is not None and result.records_removed == 1  # k's old value
    data = read_all(env.log)
    kept = {h.base_offset: bytes(data[p + 8:p + h.size]) for p, h in rb.iter_batches(data)}
    assert sorted(kept) == [1, 2]  # k's old value went, the bomb and k's new value stay
    assert kept[1] == bomb[8:]  # byte for byte (the base offset, before byte 8, is the log's)


@given(records=st.binary(min_size=1, max_size=2048),
       tail=st.binary(max_size=64).filter(lambda t: t[:3] != b"\x1f\x8b\x08"))
def test_bytes_after_a_gzip_member_that_start_no_other_end_the_stream(records, tail):
    """Kafka's GZIPInputStream ends the stream at bytes after a member that are not the
    header of another (zero padding, say): the broker and its readers take it so too."""
    import gzip

    packed = gzip.compress(records, mtime=0)
    assert rec.decompress(rec.GZIP, packed + tail) == records
    assert rec.decompress(rec.GZIP, packed + gzip.compress(tail, mtime=0) + tail) == records + tail


def test_a_gzip_member_begun_after_another_must_be_whole():
    import gzip

    first = gzip.compress(b"first", mtime=0)
    with pytest.raises(CorruptRecord):
        rec.decompress(rec.GZIP, first + gzip.compress(b"second", mtime=0)[:-3])
    with pytest.raises(CorruptRecord):
        rec.decompress(rec.GZIP, b"\0" * 16 + first)  # nothing before the first member
