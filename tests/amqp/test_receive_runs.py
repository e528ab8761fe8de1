"""A receiver hands the padder a flow's events as one run (FramePadder.add_run): tags
that are the numbers in sixteen hex digits, and proton's transfers of them written again in
steps (frames built from the first one's template, checked against proton's bytes in
one compare). What goes out must be byte for byte what the padder writes frame by
frame from payloads held by tag, whatever lies between the run's transfers (other
links' transfers, heartbeats, other channels), wherever proton's output is cut, and
whatever the delivery ids (a smalluint below 256, a uint from there, a wrap at 2**32);
and a client reading over the broker gets every event whole and in order."""
from __future__ import annotations

import random
import struct

import pytest
from cproton import lib as pn
from hypothesis import given, settings
from hypothesis import strategies as st
from proton import Message

from kafka_wire.amqp.frames import FramePadder, run_tag
from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.raw_amqp import RawAmqp

from .conftest import produce, read_on_one_session, wait_for

HEADER = b"AMQP\x00\x01\x00\x00"
SEED = 20261127


def _uint(n: int) -> bytes:
    return b"\x43" if n == 0 else (b"\x52" + bytes((n,)) if n < 256 else b"\x70" + n.to_bytes(4, "big"))


def transfer8(channel: int, handle: int, delivery_id: int, tag: bytes, extra: bytes, payload: bytes) -> bytes:
    """A transfer as proton writes it: list8 fields after a smallulong descriptor."""
    items = _uint(handle) + _uint(delivery_id) + b"\xa0" + bytes((len(tag),)) + tag + extra
    count = 3 + {b"": 0, b"\x43": 1, b"\x43\x41": 2}[extra]
    body = b"\x00\x53\x14\xc0" + bytes((len(items) + 1, count)) + items + payload
    return struct.pack(">IBBH", 8 + len(body), 2, 0, channel) + body


def _frames(draw_order: list[int], owners: list[dict], others: list[tuple],
            wire: bool = False) -> tuple[list[bytes], dict]:
    """Proton's output: the owners' transfers in ``draw_order`` (an owner's own in order),
    with ``others`` (position, kind) put between; and the payloads by tag (the reference).
    An ``unsettled`` owner's transfers are settled ones (proton's of a delivery settled
    before it is written), or with ``wire`` unsettled ones (as the client is to get them);
    its (channel, delivery id) pairs in ``owner["ids"]``."""
    next_id: dict[int, int] = {}
    frames, by_tag = [], {}
    at = {id(o): 0 for o in owners}
    others = sorted(others)
    k = 0
    for n, who in enumerate(draw_order):
        while k < len(others) and others[k][0] <= n:
            _, kind, channel, payload, tag = others[k]
            if kind == "heartbeat":
                frames.append(struct.pack(">IBBH", 8, 2, 0, 0))
            else:  # another link's transfer, with a payload (a tag like ours, even)
                d = next_id.get(channel, 0)
                next_id[channel] = (d + 1) % 2**32
                frames.append(transfer8(channel, 9, d, tag, b"\x43", payload))
            k += 1
        owner = owners[who]
        j = at[id(owner)]
        at[id(owner)] = j + 1
        channel = owner["channel"]
        d = next_id.setdefault(channel, owner["first_id"])
        next_id[channel] = (d + 1) % 2**32
        number = owner["first"] + j
        extra = b"\x43" if wire and owner["unsettled"] else owner["extra"]
        frames.append(transfer8(channel, owner["handle"], d, run_tag(number), extra, b""))
        owner.setdefault("ids", []).append((channel, d))
        by_tag[run_tag(number)] = (owner["events"][j], owner["key"], number)
    return frames, by_tag


def _padded(padder: FramePadder, data: bytes, cuts: list[int]) -> bytes:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return b"".join(padder.feed(data[a:b]) for a, b in zip(points, points[1:]))


first_ids = st.one_of(st.sampled_from([0, 1, 200, 255, 256, 300, 2**32 - 3, 2**32 - 1]),
                      st.integers(0, 2**32 - 1))
owner_st = st.fixed_dictionaries({
    "channel": st.integers(0, 3), "handle": st.sampled_from([0, 1, 7, 300, 70000]),
    "first_id": first_ids, "extra": st.sampled_from([b"\x43", b"\x43\x41", b""]),
    "sizes": st.lists(st.sampled_from([0, 1, 17, 255, 256, 1000]) | st.integers(0, 400), min_size=1, max_size=40),
    "unsettled": st.booleans(),
})


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(owner_st, min_size=1, max_size=3, unique_by=lambda o: (o["channel"], o["handle"])),
       st.randoms(use_true_random=False), st.lists(st.integers(0, 10**6), max_size=8),
       st.lists(st.tuples(st.integers(0, 120), st.sampled_from(["heartbeat", "transfer"]), st.integers(0, 3),
                          st.binary(min_size=1, max_size=50), st.binary(min_size=1, max_size=8)), max_size=6))
def test_runs_are_written_as_the_padder_writes_them_frame_by_frame(owners, rng, cuts, others):
    number = 1
    for n, owner in enumerate(owners):
        if owner["unsettled"]:  # settled in proton, unsettled to the client (proton's settled: true)
            owner["extra"] = b"\x43\x41"
        owner["key"] = f"owner{n}"
        owner["first"] = number
        owner["events"] = [bytes([n + 1]) * size for size in owner["sizes"]]
        number += len(owner["events"])
    order = [n for n, o in enumerate(owners) for _ in o["events"]]
    rng.shuffle(order)
    # the owners' own transfers in order (the shuffle only interleaves them)
    others = [(p, kind, ch, payload, run_tag(owners[0]["first"]) if len(tag) == 8 else tag)
              for p, kind, ch, payload, tag in others]
    # (two owners on one channel share its delivery ids: each starts where it finds them)
    frames, by_tag = _frames(order, owners, others)
    for owner in owners:
        del owner["ids"]
    wire, _ = _frames(order, owners, others, wire=True)
    data = HEADER + b"".join(frames)
    reference = FramePadder()
    reference.payloads.update(by_tag)
    expected = _padded(reference, HEADER + b"".join(wire), cuts)
    padder = FramePadder()
    for owner in owners:
        padder.add_run(owner["key"], owner["first"], owner["events"], owner["unsettled"])
    assert _padded(padder, data, cuts) == expected
    # an unsettled owner's delivery ids kept for the broker's disposition, each once, in order
    # (consecutive ones of a channel in one range), none of the others'
    for owner in owners:
        ranges = padder.unsettled.get(owner["key"], [])
        ids = [(ch, d) for ch, first, last in ranges for d in range(first, last + 1)]
        assert ids == (owner["ids"] if owner["unsettled"] else [])
        assert all(a[0] != b[0] or a[2] + 1 != b[1] for a, b in zip(ranges, ranges[1:]))
    assert padder.written == reference.written == {o["key"]: o["first"] + len(o["events"]) - 1 for o in owners}
    assert padder.payloads == reference.payloads == {}
    assert padder.lost == reference.lost == 0


def _run_fed(frames: list[bytes], first: int, events: list[bytes], wire: list[bytes] | None = None) -> FramePadder:
    """A padder handed ``events`` as one run from tag number ``first``, fed proton's ``frames``
    in one piece; what it wrote checked against a padder writing them frame by frame from
    payloads held by tag (fed ``wire``, when given: the run settled in proton, its frames
    as the client is to get them)."""
    reference = FramePadder()
    reference.payloads.update({run_tag(first + i): (e, "o", first + i) for i, e in enumerate(events)})
    padder = FramePadder()
    padder.add_run("o", first, events, unsettled=wire is not None)
    assert padder.feed(HEADER + b"".join(frames)) == reference.feed(HEADER + b"".join(wire or frames))
    return padder


def test_a_long_run_in_one_piece_goes_in_one_step():
    events = [b"%05d" % i * 200 for i in range(600)]
    padder = _run_fed([transfer8(1, 2, 300 + i, run_tag(5 + i), b"\x43", b"") for i in range(600)], 5, events)
    assert padder.bulk == 600 and padder.payloads == {} and padder.written == {"o": 604}


def _cut_run(extra: bytes) -> list[bytes]:
    """A run of 100 transfers (delivery ids 1000 on) with another link's transfer (id 1040) and
    a heartbeat between."""
    frames = [transfer8(0, 0, 1000 + i + (i >= 40), run_tag(1 + i), extra, b"") for i in range(100)]
    frames.insert(40, transfer8(0, 1, 1040, run_tag(41), b"\x43", b"another link's"))  # (a tag like ours)
    frames.insert(70, struct.pack(">IBBH", 8, 2, 0, 0))  # a heartbeat
    return frames


def test_a_run_cut_by_other_frames_goes_in_steps_between_them():
    padder = _run_fed(_cut_run(b"\x43"), 1, [b"x%d" % i * 30 for i in range(100)])
    assert padder.bulk == 100 and padder.payloads == {} and padder.lost == 0 and padder.unsettled == {}


def test_an_unsettled_run_goes_out_unsettled_and_keeps_its_ids_but_another_links():
    padder = _run_fed(_cut_run(b"\x43\x41"), 1, [b"x%d" % i * 30 for i in range(100)], wire=_cut_run(b"\x43"))
    assert padder.bulk == 100 and padder.payloads == {} and padder.lost == 0
    assert padder.unsettled == {"o": [[0, 1000, 1039], [0, 1041, 1100]]}
    padder.forget("o")
    assert padder.unsettled == {}


def test_a_forgotten_owner_leaves_nothing_and_its_transfers_are_lost_not_filled():
    padder = FramePadder()
    padder.add_run("gone", 1, [b"a", b"b"])
    padder.add_run("kept", 3, [b"c"])
    padder.forget("gone")
    assert list(padder.payloads) == [3]
    out = padder.feed(HEADER + transfer8(0, 0, 0, run_tag(1), b"\x43", b"") + transfer8(0, 1, 1, run_tag(3), b"\x43", b""))
    assert padder.lost == 1 and padder.payloads == {} and padder.written == {"kept": 3}
    assert out.endswith(b"c")
    padder.add_run("x", 4, [b"d"])
    padder.clear()
    assert padder.payloads == {} and padder.written == {}


# -- over the broker ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("runs") / "data", amqp=True) as b:
        b.create_hub("hub", 2)
        yield b


def test_two_receivers_on_one_session_get_every_event_whole_and_in_order(broker):
    rng = random.Random(SEED)
    bodies = {p: [rng.randbytes(rng.randrange(0, 2000)) for _ in range(1500)] for p in (0, 1)}
    produce(broker, "hub", bodies)
    with RawAmqp(broker.amqp_port) as client:
        client.open()
        host, port = client.sock.getsockname()[:2]
        conn = wait_for(lambda: broker.call(lambda: next(
            (c for c in broker.broker.amqp_server.connections if c.peer == f"{host}:{port}"), None)))
        got = read_on_one_session(client, "hub", {p: len(items) for p, items in bodies.items()}, 700)
        for p in got:
            messages = []
            for _, raw in got[p]:
                m = Message()
                m.decode(raw)
                messages.append(m)
            assert [bytes(m.body) for m in messages] == bodies[p]
            assert [m.annotations["x-opt-sequence-number"] for m in messages] == list(range(len(bodies[p])))
            tags = [delivery.tag for delivery, _ in got[p]]
            assert len(set(tags)) == len(tags) and {len(t) for t in tags} == {16}
        # most went in steps; none lost, none held, every delivery settled on the broker's side
        assert broker.call(lambda: conn.padder.bulk) > 2000
        readers = broker.call(lambda: [h for hs in broker.broker.amqp_server.readers.values() for h in hs
                                       if h.conn is conn])
        assert len(readers) == 2
        assert wait_for(lambda: broker.call(lambda: sum(pn.pn_link_unsettled(r.link._impl) for r in readers)) == 0,
                        timeout=10)
        assert broker.call(lambda: (conn.padder.payloads, conn.padder.lost)) == ({}, 0)
