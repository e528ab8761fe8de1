"""The broker's max-frame-size: 256 KiB advertised in its open, frames up to it
taken whole, one byte past it closed with a framing error."""
from __future__ import annotations

import struct

import pytest
from proton import Data
from proton._data import Described, symbol, ulong

from kafka_wire.amqp.connection import MAX_FRAME

from .test_bad_input import AMQP_HEADER, exchange, frames

CLOSE = struct.pack(">IBBH", 12, 2, 0, 0) + b"\x00\x53\x18\x45"  # close, its fields an empty list


def open_frame(size: int) -> bytes:
    """An open of exactly ``size`` bytes (its properties carry padding; no
    max-frame-size of its own, so the broker passes it on unchanged)."""

    def encode(pad: int) -> bytes:
        d = Data()
        d.put_object(Described(ulong(0x10), ["frame-test", None, None, None, None, None, None, None, None,
                                             {symbol("pad"): b"x" * pad}]))
        body = d.encode()
        return struct.pack(">IBBH", 8 + len(body), 2, 0, 0) + body

    overhead = len(encode(1000)) - 1000  # the same for any pad past 255 bytes (a vbin32)
    frame = encode(size - overhead)
    assert len(frame) == size
    return frame


def answer_to(broker, frame: bytes) -> list:
    answer = exchange(broker, AMQP_HEADER + frame + CLOSE)
    assert answer.startswith(AMQP_HEADER), answer[:40]
    return [p for _, p in frames(answer[8:])]


def test_the_broker_advertises_256_kib(broker):
    performatives = answer_to(broker, open_frame(1024))
    opened = performatives[0]
    assert int(opened.descriptor) == 0x10, performatives
    assert opened.value[2] == MAX_FRAME == 256 * 1024


@pytest.mark.parametrize("size", [64 * 1024 + 1, MAX_FRAME])
def test_a_frame_up_to_the_max_frame_size_is_taken(broker, size):
    performatives = answer_to(broker, open_frame(size))
    assert [int(p.descriptor) for p in performatives] == [0x10, 0x18], performatives
    assert "framing-error" not in str(performatives[-1].value), performatives[-1]


def test_a_frame_one_byte_past_the_max_frame_size_closes_with_a_framing_error(broker):
    performatives = answer_to(broker, open_frame(MAX_FRAME + 1))
    close = performatives[-1]
    assert int(close.descriptor) == 0x18, performatives
    assert "framing-error" in str(close.value), close
