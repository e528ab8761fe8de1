"""The attach rewrite behind the georeplication capability: proton's frames as the
connection's padder writes them, with the capability added to a pending link's
attach only, everything else passed byte for byte, and the wrapper gone once done."""
from __future__ import annotations

import pytest
from proton import Data, symbol, ulong
from proton._data import Described

from kafka_wire.amqp.frames import FramePadder
from kafka_wire.amqp.georeplication import CAPABILITY, OfferingPadder, offer

HEADER = b"AMQP\x00\x01\x00\x00"


def frame(code: int, fields: list, channel: int = 0) -> bytes:
    data = Data()
    data.put_object(Described(ulong(code), fields))
    body = data.encode()
    return (8 + len(body)).to_bytes(4, "big") + bytes((2, 0)) + channel.to_bytes(2, "big") + body


def attach(name: str, offered=None) -> bytes:
    return frame(0x12, [name, 0, False, None, None, None, None, None, None, None, None, offered])


def decoded(buf: bytes) -> list:
    """The performatives in ``buf`` (frames after the protocol header)."""
    out, pos = [], 8 if buf[:4] == b"AMQP" else 0
    while pos < len(buf):
        size = int.from_bytes(buf[pos:pos + 4], "big")
        if size == 8:   # an empty frame (a heartbeat)
            out.append(None)
            pos += size
            continue
        data = Data()
        data.decode(buf[pos + 8:pos + size])
        data.rewind()
        data.next()
        out.append(data.get_object())
        pos += size
    return out


class Conn:
    peer = "test"

    def __init__(self, wanted: dict[str, set[str]]):
        self.padder = FramePadder()
        self._wanted = wanted

    def desired_capabilities(self, name: str) -> set[str]:
        return self._wanted.get(name, set())


def test_only_the_pending_attach_gets_the_capability_and_the_padder_is_restored():
    conn = Conn({"mine": {CAPABILITY}, "other": {"com.microsoft:other"}})
    inner = conn.padder
    offer(conn, type("L", (), {"name": "other"}))
    assert conn.padder is inner                 # not desired: nothing installed
    offer(conn, type("L", (), {"name": "mine"}))
    assert isinstance(conn.padder, OfferingPadder)
    heartbeat = b"\x00\x00\x00\x08\x02\x00\x00\x00"
    out = conn.padder.feed(HEADER + attach("other") + heartbeat + attach("mine", symbol("x:y")))
    assert out.startswith(HEADER)
    frames = decoded(out)
    assert [f.descriptor for f in frames if f is not None] == [0x12, 0x12] and frames[1] is None
    other, mine = frames[0].value, frames[2].value
    assert len(mine) == len(other) == 14        # padded as FramePadder does
    assert other[11] is None
    assert [str(c) for c in mine[11].elements] == ["x:y", CAPABILITY]
    assert str(mine[0]) == "mine" and mine[1:11] == other[1:11]
    assert conn.padder is inner                 # done: the plain padder again
    again = FramePadder()
    again.feed(HEADER)
    assert inner.feed(attach("mine")) == again.feed(attach("mine"))


def test_an_attach_that_never_comes_stops_the_search():
    conn = Conn({"gone": {CAPABILITY}})
    offer(conn, type("L", (), {"name": "gone"}))
    wrapper = conn.padder
    conn.padder.feed(HEADER)
    for _ in range(OfferingPadder.PATIENCE + 1):
        conn.padder.feed(attach("someone-else"))
    assert conn.padder is wrapper.inner and not wrapper.pending


def test_feed_parts_as_the_connection_writes_them():
    conn = Conn({"mine": {CAPABILITY}})
    inner = conn.padder
    if not hasattr(inner, "feed_parts"):
        pytest.skip("FramePadder has no feed_parts here: the connection writes with feed (tested above)")
    offer(conn, type("L", (), {"name": "mine"}))
    parts = conn.padder.feed_parts(HEADER + attach("mine"))
    out = b"".join(bytes(p) for p in parts)
    assert [str(c) for c in decoded(out)[0].value[11].elements] == [CAPABILITY]
    assert conn.padder is inner
