"""The frame shims see proton's bytes in whatever chunks the socket and the engine
hand over: their output must not depend on where a chunk ends. The input here is
proton's real output (open, begin, attach, transfers of one and of several frames,
heartbeats, a detach with an error, close), split at every boundary."""
from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st
from proton import Collector, Condition, Connection, Data, Described, Event, Transport

from kafka_wire.amqp.frames import FIELDS, FramePadder
from kafka_wire.amqp.input_frames import InputFrames

HEADER = b"AMQP\x00\x01\x00\x00"
HEARTBEAT = struct.pack(">IBBH", 8, 2, 0, 0)


def _engine(server: bool, max_frame: int):
    transport = Transport(Transport.SERVER if server else Transport.CLIENT)
    transport.max_frame_size = max_frame
    conn = Connection()
    collector = Collector()
    conn.collect(collector)
    transport.bind(conn)
    return transport, conn, collector


def _move(src, dst) -> bytes:
    """What ``src`` has to send, pushed into ``dst``; returned too."""
    out = bytearray()
    while src.pending() > 0:
        chunk = src.peek(src.pending())
        src.pop(len(chunk))
        dst.push(chunk)
        out += chunk
    return bytes(out)


def _proton_conversation() -> tuple[bytes, bytes]:
    """(server output, client output) of a short exchange driven by hand: no sockets,
    no clock but the one passed to ``tick``, so the bytes are the same on every run."""
    server, sconn, scol = _engine(True, 65536)
    client, cconn, ccol = _engine(False, 512)   # the client's small frames split transfers
    client.idle_timeout = 2.0                   # so the server must send heartbeats
    server.idle_timeout = 2.0                   # and the client too
    cconn.open()
    session = cconn.session()
    session.open()
    receiver = session.receiver("from-server")
    receiver.source.address = "hub/ConsumerGroups/$Default/Partitions/0"
    receiver.open()
    receiver.flow(10)
    sender = session.sender("to-server")
    sender.target.address = "hub"
    sender.open()
    s_out, c_out = bytearray(), bytearray()
    c_out += _move(client, server)
    links = []
    while (event := scol.peek()) is not None:
        if event.type == Event.CONNECTION_REMOTE_OPEN:
            event.connection.open()
        elif event.type == Event.SESSION_REMOTE_OPEN:
            event.session.open()
        elif event.type == Event.LINK_REMOTE_OPEN:
            link = event.link
            link.source.copy(link.remote_source)
            link.target.copy(link.remote_target)
            link.open()
            if link.is_receiver:
                link.flow(10)
            links.append(link)
        scol.pop()
    s_out += _move(server, client)
    c_out += _move(client, server)
    s_out += _move(server, client)
    out_link = next(link for link in links if link.is_sender)
    in_link = next(link for link in links if link.is_receiver)
    now = 0.0
    for n, size in enumerate([0, 10, 400, 1500, 3000]):
        out_link.delivery(str(n).encode())
        out_link.send(bytes([n]) * size)
        out_link.advance()
        sender.delivery(str(n).encode())
        sender.send(bytes([n + 100]) * size)
        sender.advance()
        s_out += _move(server, client)
        c_out += _move(client, server)
        s_out += _move(server, client)
        # The first tick after output starts the keep-alive wait; one past it, with
        # nothing sent meanwhile, owes the peer a heartbeat.
        for _ in range(2):
            now += 1.5
            server.tick(now)
            client.tick(now)
            s_out += _move(server, client)
            c_out += _move(client, server)
    in_link.condition = Condition("amqp:link:message-size-exceeded", "a detach with an error")
    in_link.close()
    sconn.close()
    s_out += _move(server, client)
    return bytes(s_out), bytes(c_out)


SERVER_OUT, CLIENT_OUT = _proton_conversation()


def _frames(data: bytes) -> list[bytes]:
    """The frames of ``data`` (after its protocol header), whole."""
    assert data[:8] == HEADER
    out, pos = [], 8
    while pos < len(data):
        size = struct.unpack_from(">I", data, pos)[0]
        assert size >= 8 and pos + size <= len(data), "frame sizes must add up"
        out.append(data[pos:pos + size])
        pos += size
    return out


def _performative(frame: bytes) -> tuple[int, list] | None:
    doff = frame[4] * 4
    if len(frame) == doff:
        return None  # a heartbeat
    d = Data()
    d.decode(frame[doff:])
    d.rewind()
    d.next()
    value = d.get_object()
    return int(value.descriptor), list(value.value)


def _padded(chunks: list[bytes]) -> bytes:
    padder = FramePadder()
    return b"".join(padder.feed(chunk) for chunk in chunks)


def _scanned(chunks: list[bytes]) -> bytes:
    scanner = InputFrames(max_frame=65536)
    return b"".join(scanner.feed(chunk) for chunk in chunks)


WHOLE_PADDED = _padded([SERVER_OUT])


def test_the_conversation_holds_what_the_property_needs():
    frames = _frames(SERVER_OUT)
    kinds = [p and p[0] for p in map(_performative, frames)]
    assert kinds.count(None) >= 3, "heartbeats"
    assert {0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x18} <= set(kinds)
    assert frames[-1] != HEARTBEAT and HEARTBEAT in frames


def test_padding_keeps_every_frame_and_fills_every_performative():
    original = [_performative(f) for f in _frames(SERVER_OUT)]
    padded = [_performative(f) for f in _frames(WHOLE_PADDED)]
    assert len(padded) == len(original)
    for before, after in zip(original, padded):
        if before is None:
            assert after is None
            continue
        code, fields = before
        assert after[0] == code and len(after[1]) == FIELDS[code]
        assert _trimmed(after[1][:len(fields)]) == _trimmed(fields)


def _trimmed(value):
    """``value`` with trailing nulls dropped from every list in it (the padding)."""
    if isinstance(value, Described):
        return Described(value.descriptor, _trimmed(value.value))
    if isinstance(value, list):
        items = [_trimmed(v) for v in value]
        while items and items[-1] is None:
            items.pop()
        return items
    return value


def test_every_single_split_point_gives_the_same_padded_bytes():
    for cut in range(len(SERVER_OUT) + 1):
        assert _padded([SERVER_OUT[:cut], SERVER_OUT[cut:]]) == WHOLE_PADDED, cut


def test_a_heartbeat_that_ends_a_chunk_is_passed_on():
    padder = FramePadder()
    assert padder.feed(HEADER) == HEADER
    assert padder.feed(HEARTBEAT) == HEARTBEAT
    assert padder.feed(HEARTBEAT + HEARTBEAT) == HEARTBEAT + HEARTBEAT


def _cuts(data: bytes):
    return st.lists(st.integers(0, len(data)), max_size=40).map(sorted)


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:])]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_cuts(SERVER_OUT))
def test_padded_output_is_the_same_whatever_the_split(cuts):
    assert _padded(_split(SERVER_OUT, cuts)) == WHOLE_PADDED


def test_the_scanner_passes_the_clients_frames_whatever_the_split():
    whole = _scanned([CLIENT_OUT])
    assert whole == CLIENT_OUT  # nothing here for it to drop
    assert HEARTBEAT in _frames(CLIENT_OUT)
    for cut in range(len(CLIENT_OUT) + 1):
        assert _scanned([CLIENT_OUT[:cut], CLIENT_OUT[cut:]]) == whole, cut


@settings(max_examples=300, deadline=None, derandomize=True)
@given(_cuts(CLIENT_OUT))
def test_scanned_output_is_the_same_whatever_the_split(cuts):
    assert _scanned(_split(CLIENT_OUT, cuts)) == CLIENT_OUT
