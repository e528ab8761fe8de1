"""A receiver's deliveries are settled in proton as they are made and written unsettled,
and the broker writes their dispositions itself (FramePadder.unsettled,
AmqpConnection.dispose): what a client reads must be what proton wrote before. Each
transfer unsettled (settled null, its eleven fields present); each delivery id then
settled once, by a sender's disposition written after its transfer, settled and
accepted, only ids of the session that were transferred (another link's between splits
a range); a large event proton carries itself settled by proton the same way; and
the client's own settlements of those ids change nothing. (Proton left out of its
dispositions the ids the client had settled by then; the broker's cover them all, as
proton's did for ids the client settled later: a client forgets what it settled.)"""
from __future__ import annotations

import random
import struct

import pytest
from proton import Data, Delivery, Message

from kafka_wire.amqp import consume
from kafka_wire.amqp.frames import FramePadder, disposition_frame, dispositions, run_tag
from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.raw_amqp import RawAmqp

from .conftest import engine_pair, produce, read_on_one_session

HEADER = b"AMQP\x00\x01\x00\x00"
SEED = 41
TRANSFER, DISPOSITION, ACCEPTED = 0x14, 0x15, 0x24


def _uint(n: int) -> bytes:
    return b"\x43" if n == 0 else (b"\x52" + bytes((n,)) if n < 256 else b"\x70" + n.to_bytes(4, "big"))


def _protons_disposition(channel: int, first: int, last: int) -> bytes:
    """A disposition as proton writes it: list8, last null when it is first, no batchable."""
    items = b"\x42" + _uint(first) + (b"\x40" if last == first else _uint(last)) + b"\x41\x00\x53\x24\x45"
    body = b"\x00\x53\x15\xc0" + bytes((len(items) + 1, 5)) + items
    return struct.pack(">IBBH", 8 + len(body), 2, 0, channel) + body


@pytest.mark.parametrize("channel, first, last", [(0, 0, 0), (0, 2, 3), (1, 0, 255), (3, 255, 256),
                                                  (0, 300, 300), (65535, 2**32 - 2, 2**32 - 1)])
def test_the_brokers_disposition_is_protons_padded(channel, first, last):
    padder = FramePadder()
    assert padder.feed(HEADER + _protons_disposition(channel, first, last))[8:] == \
        disposition_frame(channel, first, last)


def test_protons_own_disposition_is_the_one_handmade_here():
    sender, _receiver, _pump, _client, server = engine_pair("receiver")
    server.pop(server.pending())
    made = []
    for tag in (b"a", b"b", b"c"):
        made.append(sender.delivery(tag))
        sender.advance()
    server.pop(server.pending())
    for d in made[1:]:
        d.update(Delivery.ACCEPTED)
        d.settle()
    assert server.peek(server.pending()) == _protons_disposition(0, 1, 2)


def test_ranges_of_two_receivers_join_only_where_their_ids_meet():
    frames = dispositions([[0, 5, 9], [1, 0, 3], [0, 0, 4], [0, 11, 12]])
    assert frames == [disposition_frame(0, 0, 9), disposition_frame(0, 11, 12), disposition_frame(1, 0, 3)]
    assert dispositions([[2, 7, 7]]) == [disposition_frame(2, 7, 7)]


def _settled_transfer(handle: int, delivery_id: int, number: int) -> bytes:
    """An empty transfer of a run's delivery as proton writes one settled before it is
    written (channel 0; message-format 0, settled true)."""
    items = _uint(handle) + _uint(delivery_id) + b"\xa0\x10" + run_tag(number) + b"\x43\x41"
    body = b"\x00\x53\x14\xc0" + bytes((len(items) + 1, 5)) + items
    return struct.pack(">IBBH", 8 + len(body), 2, 0, 0) + body


def test_the_padder_counts_a_links_deliveries_without_a_disposition():
    """FramePadder.unsettled_count (what a receiver holds to settle): its unsettled runs'
    deliveries not yet written and those written whose ids wait for a disposition; none
    of a run sent settled, none once the link is forgotten."""
    padder = FramePadder()
    padder.add_run("o", 1, [b"a" * 5] * 10, unsettled=True)
    padder.add_run("s", 11, [b"b"] * 5)  # (a link sending settled)
    padder.add_run("o", 16, [b"c"] * 4, unsettled=True)
    frames = ([_settled_transfer(0, 300 + i, 1 + i) for i in range(10)]
              + [_settled_transfer(1, 310 + i, 11 + i) for i in range(5)]
              + [_settled_transfer(0, 315 + i, 16 + i) for i in range(4)])
    assert (padder.unsettled_count("o"), padder.unsettled_count("s")) == (14, 0)
    padder.feed(HEADER + b"".join(frames[:4]))  # (a run cut: written in part)
    assert padder.unsettled == {"o": [[0, 300, 303]]} and padder.unsettled_count("o") == 14
    padder.unsettled.pop("o")  # (disposed: AmqpConnection.dispose)
    assert padder.unsettled_count("o") == 10
    padder.feed(b"".join(frames[4:13]))
    assert padder.unsettled == {"o": [[0, 304, 309]]} and padder.unsettled_count("o") == 10
    padder.unsettled.pop("o")
    padder.feed(b"".join(frames[13:]))
    assert padder.unsettled == {"o": [[0, 315, 318]]} and padder.unsettled_count("o") == 4
    assert padder.unsettled_count("s") == 0 and padder.lost == 0
    padder.add_run("o", 20, [b"d"] * 3, unsettled=True)
    assert padder.unsettled_count("o") == 7
    padder.forget("o")  # (the link detached: its runs dropped, its ids never disposed)
    assert padder.unsettled_count("o") == 0


# -- over the broker ----------------------------------------------------------------------------
class _Recording:
    """The client's socket, keeping every byte the broker sent."""

    def __init__(self, sock) -> None:
        self.sock, self.data = sock, bytearray()

    def recv(self, n: int) -> bytes:
        data = self.sock.recv(n)
        self.data += data
        return data

    def __getattr__(self, name):
        return getattr(self.sock, name)


def _performatives(data: bytes) -> list[tuple[int, int, list]]:
    """(channel, descriptor, fields) of every frame the broker wrote after the header."""
    assert data[:8] == HEADER
    out, pos = [], 8
    while pos < len(data):
        size, doff, _, channel = struct.unpack_from(">IBBH", data, pos)
        if size > doff * 4:
            d = Data()
            d.decode(bytes(data[pos + doff * 4:pos + size]))
            d.rewind()
            d.next()
            described = d.get_object()
            # (binaries copied while the Data lives: they are views of its memory)
            out.append((channel, int(described.descriptor),
                        [bytes(v) if isinstance(v, (memoryview, bytes)) else v for v in described.value]))
        pos += size
    assert pos == len(data)
    return out


def _body(raw) -> bytes:
    message = Message()
    message.decode(bytes(raw))
    return bytes(message.body)  # (while the message lives: its body is a view of its memory)


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("dispositions") / "data", amqp=True) as b:
        yield b


@pytest.mark.parametrize("settle_every, client_settles", [(50, False), (consume.SETTLE_EVERY, False),
                                                         (consume.SETTLE_EVERY, True)])
def test_every_delivery_is_settled_once_after_its_transfer(broker, monkeypatch, settle_every, client_settles):
    monkeypatch.setattr(consume, "SETTLE_EVERY", settle_every)  # (50: settled mid-stream too)
    hub = f"hub{settle_every}{client_settles:d}"
    broker.create_hub(hub, 2)
    rng = random.Random(SEED)
    bodies = {p: [rng.randbytes(rng.randrange(0, 1500)) for _ in range(800)] for p in (0, 1)}
    # three events too large for one of the client's frames: proton carries their flows, and settles them
    bodies[0][400:403] = [rng.randbytes(6000) for _ in range(3)]
    produce(broker, hub, bodies)
    with RawAmqp(broker.amqp_port) as client:
        client.transport.max_frame_size = 4096
        client.sock = recording = _Recording(client.sock)
        client.open()
        kept = []  # deliveries the client leaves to the broker to settle: it shows on them

        def settle(delivery, n):
            if client_settles and n % 3:  # (ids proton on the broker has forgotten)
                delivery.update(Delivery.ACCEPTED)
                delivery.settle()
            else:
                kept.append(delivery)

        got = read_on_one_session(client, hub, {p: len(items) for p, items in bodies.items()}, 300, settle)
        assert {p: [_body(raw) for _, raw in got[p]] for p in got} == bodies
        # the broker's settlement, as proton reads it
        client.wait(lambda: all(d.settled for d in kept), timeout=10)
        assert {d.remote_state for d in kept} == {Delivery.ACCEPTED}
        kept_tags = {d.tag.encode() if isinstance(d.tag, str) else bytes(d.tag) for d in kept}  # (text: UTF-8)
        frames = _performatives(bytes(recording.data))
        assert client.conn.state & client.conn.REMOTE_ACTIVE  # (the client's settlements refused nothing)
        # the broker holds nothing more to settle
        readers = broker.call(lambda: [h for hs in broker.broker.amqp_server.readers.values() for h in hs
                                       if h.hub == hub])
        assert broker.call(lambda: [(r.conn.padder.unsettled_count(r), r._sent, r in r.conn.settling) for r in readers]) == \
            [(0, [], False)] * 2
    transferred: dict[int, int] = {}  # delivery id -> index of its transfer's last frame
    tags: dict[int, bytes] = {}
    settled: dict[int, int] = {}     # delivery id -> index of the disposition settling it
    assert len({channel for channel, code, _ in frames if code in (TRANSFER, DISPOSITION)}) == 1
    current, continued = None, False
    for i, (_, code, fields) in enumerate(frames):
        if code == TRANSFER:
            assert len(fields) == 11 and fields[4] is None, fields  # unsettled, padded
            if not continued:  # (a large event's next frames: the same delivery)
                current = int(fields[1])
                assert current not in transferred
                tags[current] = fields[2]
            continued = bool(fields[5])
            transferred[current] = i
        elif code == DISPOSITION:
            assert len(fields) == 6, fields
            role, first, last, is_settled, state = fields[:5]
            assert role is False and is_settled is True and int(state.descriptor) == ACCEPTED, fields
            for did in range(int(first), int(last if last is not None else first) + 1):
                assert did in transferred and transferred[did] < i, (did, fields)  # after its transfer
                assert did not in settled, did  # once
                settled[did] = i
    assert sorted(transferred) == list(range(sum(len(b) for b in bodies.values())))
    assert {tags[did] for did in settled} >= kept_tags
    assert len(kept_tags) == (len(transferred) if not client_settles else sum(len(b) // 3 for b in bodies.values()))
    # both kinds went out: runs, and flows proton carried (a large event's transfer in frames)
    assert sum(bool(fields[5]) for _, code, fields in frames if code == TRANSFER) >= 3
