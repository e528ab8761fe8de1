"""The WebSocket frame reader (kafka_wire.amqp.websocket.FrameReader), a parser of a
client's bytes: any messages, fragmented anyhow, masked anyhow, with control frames
between fragments, cut anywhere into reads, come out as the same AMQP byte stream
and the same control frames, in order; it never holds more than a frame head and a
control frame; and what RFC 6455 forbids is a WebSocketError with its status."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings, strategies as st

from kafka_wire.amqp.websocket import (BINARY, CLOSE, PING, PONG, FrameReader,
                                       WebSocketError)

_MOST_HELD = 14 + 125  # a head (2 + 8 + 4 bytes of mask) and a control frame's payload


def client_frame(opcode: int, payload: bytes, mask: bytes, fin: bool = True, length_form: int = 0) -> bytes:
    """A masked client frame; ``length_form`` 0/1/2 writes its length in the shortest,
    16-bit or 64-bit form (any is allowed; servers must read all)."""
    n = len(payload)
    b0 = (0x80 if fin else 0) | opcode
    if length_form == 0 and n < 126:
        head = struct.pack(">BB", b0, 0x80 | n)
    elif length_form <= 1 and n < 65536:
        head = struct.pack(">BBH", b0, 0xFE, n)
    else:
        head = struct.pack(">BBQ", b0, 0xFF, n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


_MASK = st.binary(min_size=4, max_size=4)
_CONTROL = st.tuples(st.sampled_from([PING, PONG]), st.binary(max_size=125), _MASK)


@st.composite
def streams(draw):
    """(the bytes a client sends, the AMQP bytes they carry, the control frames in order
    with how many AMQP bytes came before each)."""
    wire, amqp, controls = [], bytearray(), []
    for _ in range(draw(st.integers(0, 5))):
        payload = draw(st.binary(max_size=3000))
        cuts = sorted(draw(st.lists(st.integers(0, len(payload)), max_size=4)))
        pieces = [payload[a:b] for a, b in zip([0] + cuts, cuts + [len(payload)])]
        for i, piece in enumerate(pieces):
            for opcode, body, mask in draw(st.lists(_CONTROL, max_size=2)):
                wire.append(client_frame(opcode, body, mask, length_form=draw(st.integers(0, 2))))
                controls.append((opcode, body, len(amqp)))
            wire.append(client_frame(BINARY if i == 0 else 0, piece, draw(_MASK), fin=i == len(pieces) - 1,
                                     length_form=draw(st.integers(0, 2))))
            amqp += piece
    data = b"".join(wire)
    return data, bytes(amqp), controls


@settings(derandomize=True, max_examples=400, deadline=None)
@given(streams(), st.data())
def test_any_fragmenting_masking_and_cutting_gives_the_same_stream(stream, data):
    wire, amqp, controls = stream
    cuts = sorted(data.draw(st.lists(st.integers(0, len(wire)), max_size=12)))
    reader = FrameReader()
    got, seen = bytearray(), []
    for a, b in zip([0] + cuts, cuts + [len(wire)]):
        for opcode, payload in reader.feed(wire[a:b]):
            if opcode == BINARY:
                got += payload
            else:
                seen.append((opcode, payload, len(got)))
        assert len(reader._buf) <= _MOST_HELD, len(reader._buf)
    assert bytes(got) == amqp
    assert seen == controls


def test_a_large_frame_is_passed_on_as_it_arrives_not_held():
    """A 10 MiB frame's first MiB comes out at once; before, the reader held it all
    (up to 16 MiB a message) until the frame ended."""
    reader = FrameReader()
    mask = b"\x01\x02\x03\x04"
    size = 10 << 20
    head = struct.pack(">BBQ", 0x82, 0xFF, size) + mask
    first = bytes(i % 251 for i in range(1 << 20))
    out = reader.feed(head + bytes(b ^ mask[i % 4] for i, b in enumerate(first)))
    assert b"".join(p for _, p in out) == first and len(reader._buf) == 0


def test_a_message_has_no_bound_of_its_own():
    """A message's bytes are not held, so it needs no bound (it had 16 MiB, refused on a
    frame's head with 1009): a frame announcing a TiB streams like any other; what the
    connection holds is bounded by AMQP's frame limit, after this reader."""
    reader = FrameReader()
    mask = b"\x05\x06\x07\x08"
    head = struct.pack(">BBQ", 0x02, 0xFF, 1 << 40) + mask  # a first fragment, not final
    data = bytes(i % 253 for i in range(1 << 16))
    out = reader.feed(head + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))
    assert b"".join(p for _, p in out) == data and len(reader._buf) == 0


@pytest.mark.parametrize("frame, status", [
    (struct.pack(">BB", 0x82, 4) + b"AMQP", 1002),                     # not masked
    (client_frame(0x1, b"text", b"abcd"), 1003),                       # a text frame
    (client_frame(0x0, b"more", b"abcd"), 1002),                       # a continuation of nothing
    (client_frame(0x3, b"", b"abcd"), 1002),                           # a reserved opcode
    (bytes([0xC2]) + client_frame(BINARY, b"x", b"abcd")[1:], 1002),   # RSV1 without an extension
    (client_frame(PING, b"x" * 126, b"abcd", length_form=1), 1002),    # a control frame over 125
    (client_frame(PING, b"x", b"abcd", fin=False), 1002),              # a fragmented control frame
    (struct.pack(">BBQ", 0x82, 0xFF, 1 << 63) + b"abcd", 1002),        # a length's top bit set
    (client_frame(BINARY, b"a", b"abcd", fin=False) + client_frame(BINARY, b"b", b"abcd"), 1002),
], ids=["unmasked", "text", "lone-continuation", "reserved-opcode", "rsv1", "long-control",
        "fragmented-control", "top-bit-length", "new-message-mid-message"])
def test_what_rfc_6455_forbids_closes_with_its_status(frame, status):
    with pytest.raises(WebSocketError) as caught:
        FrameReader().feed(frame)
    assert caught.value.status == status


def test_a_close_after_data_comes_out_after_it():
    reader = FrameReader()
    out = reader.feed(client_frame(BINARY, b"AMQP\x00\x01\x00\x00", b"wxyz")
                      + client_frame(CLOSE, struct.pack(">H", 1000), b"abcd"))
    assert out == [(BINARY, b"AMQP\x00\x01\x00\x00"), (CLOSE, struct.pack(">H", 1000))]
