"""The padder writes a transfer's head (frame header to the list8's count) in one
pack: byte for byte what it wrote piece by piece before (size, the header's bytes
from proton's frame, a list8 head of the eleven fields), on any channel, for any
handle, delivery id, tag and field count proton writes, with the payload spliced
in (ours) or left where proton put it (carried)."""
from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.amqp.frames import FramePadder

HEADER = b"AMQP\x00\x01\x00\x00"


def _uint(n: int) -> bytes:
    return b"\x43" if n == 0 else (b"\x52" + bytes((n,)) if n < 256 else b"\x70" + n.to_bytes(4, "big"))


def transfer8(channel: int, handle: int, delivery_id: int, tag: bytes, extra: list[bytes], payload: bytes) -> bytes:
    """A transfer as proton writes it: list8 fields after a smallulong descriptor."""
    items = _uint(handle) + _uint(delivery_id) + b"\xa0" + bytes((len(tag),)) + tag + b"".join(extra)
    body = b"\x00\x53\x14\xc0" + bytes((len(items) + 1, 3 + len(extra))) + items + payload
    return struct.pack(">IBBH", 8 + len(body), 2, 0, channel) + body


def piecewise(frame: bytes, payload: bytes) -> bytes:
    """The padded frame as the padder wrote it before, one piece after another."""
    size, lsize, count = struct.unpack_from(">I", frame)[0], frame[12], frame[13]
    pad = 11 - count
    items_end = 13 + lsize
    return b"".join((struct.pack(">I", size + pad + len(payload)), frame[4:11], bytes((0xC0, lsize + pad, 11)),
                     frame[14:items_end], b"\x40" * pad, payload, frame[items_end:]))


# after the tag: message-format, settled, more, ... as proton may write them (up to 10 fields)
extras = st.lists(st.sampled_from([b"\x43", b"\x42", b"\x41", b"\x40", b"\x52\x07"]), max_size=7)
transfers = st.lists(st.tuples(st.booleans(), st.integers(0, 65535), st.integers(0, 70000),
                               st.integers(0, 2**32 - 1), extras, st.binary(max_size=600)),
                     min_size=1, max_size=20)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(transfers, st.integers(1, 97))
def test_a_transfers_head_is_the_one_written_piece_by_piece(items, chunk):
    padder = FramePadder()
    owner = object()
    raw, expected = [HEADER], [HEADER]
    for n, (ours, channel, handle, delivery_id, extra, payload) in enumerate(items):
        tag = b"e%d" % (n + 1)
        if ours:  # empty from proton, its payload put in here
            frame = transfer8(channel, handle, delivery_id, tag, extra, b"")
            padder.payloads[tag] = (payload, owner, n + 1)
            expected.append(piecewise(frame, payload))
        else:  # carried by proton: the payload in the frame, recorded written
            frame = transfer8(channel, handle, delivery_id, tag, extra, payload)
            padder.payloads[tag] = (None, owner, n + 1)
            expected.append(piecewise(frame, b""))
        raw.append(frame)
    data = b"".join(raw)
    out = b"".join(padder.feed(data[i:i + chunk]) for i in range(0, len(data), chunk))
    assert out == b"".join(expected)
    assert padder.payloads == {} and padder.lost == 0 and padder.written == {owner: len(items)}
