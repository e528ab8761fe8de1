"""A zstd records section cut short is refused (CorruptRecord), as the other codecs' are:
zstd's stream reader gave what the cut frame held (nothing, for a short first frame) as if
it were whole, so Produce stored such a batch and its readers found no records. Whole
frames (one or several, with or without checksum and content size, skippable frames
between) decompress as before."""
from __future__ import annotations

import struct

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.log.errors import CorruptRecord
from kafka_wire.log.records import ZSTD, decompress

frames = st.lists(st.tuples(st.binary(max_size=3000) | st.just(bytes(200_000)), st.integers(1, 19), st.booleans(),
                            st.booleans(), st.booleans()), min_size=1, max_size=3)


def encoded(parts) -> tuple[bytes, dict[int, bytes]]:
    """The frames' bytes, and what the bytes up to each frame's end hold, by that end."""
    blob, plain, ends = b"", b"", {}
    for data, level, checksum, size, skippable in parts:
        if skippable:
            blob += struct.pack("<II", 0x184D2A53, 5) + b"skip!"
            ends[len(blob)] = plain
        blob += zstandard.ZstdCompressor(level=level, write_checksum=checksum, write_content_size=size).compress(data)
        plain += data
        ends[len(blob)] = plain
    return blob, ends


@settings(max_examples=150, derandomize=True, deadline=None)
@given(parts=frames, data=st.data())
def test_whole_frames_decompress_and_any_cut_is_refused(parts, data):
    blob, ends = encoded(parts)
    assert decompress(ZSTD, blob) == ends[len(blob)]
    cut = data.draw(st.integers(1, len(blob) - 1))
    if cut in ends:  # between frames: the frames before it, whole
        assert decompress(ZSTD, blob[:cut]) == ends[cut]
    else:
        with pytest.raises(CorruptRecord):
            decompress(ZSTD, blob[:cut])


@pytest.mark.parametrize("cut", [1, 4, 8, 20, -1])
def test_a_single_frame_cut_short_is_refused(cut):
    blob = zstandard.ZstdCompressor().compress(b"hello world " * 1000)
    with pytest.raises(CorruptRecord):
        decompress(ZSTD, blob[:cut])
