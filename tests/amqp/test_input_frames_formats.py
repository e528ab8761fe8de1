"""InputFrames keeps each delivery's message-format (proton's binding has no getter for
it): property tests send deliveries on several links and sessions, of random formats,
tags and bodies, cut into frames (continuations that omit the format, aborted
deliveries, interleaved links) and the byte stream cut anywhere between reads, and
hold what ``take_format`` answers to what was sent; the scanner's reading of a
transfer's fields is held to proton's codec, and nothing it is fed makes it raise."""
from __future__ import annotations


from hypothesis import given, settings
from hypothesis import strategies as st
from proton import Data, Described, uint, ulong

from kafka_wire.amqp.input_frames import InputFrames, _transfer_fields, _transfer_fields_decoded
from kafka_wire.amqp.messages import BATCH_FORMAT

from .test_input_frames_deferral import HEADER, anything, frame, transfer_fields

MAX_FRAME = 1 << 20


def attach(name: str, handle: int, channel: int) -> bytes:
    return frame(0x12, [name, uint(handle), False, None, None, None, None], channel=channel)


def detach(handle: int, channel: int) -> bytes:
    return frame(0x16, [uint(handle), True], channel=channel)


def transfer(handle: int, channel: int, delivery_id, tag, message_format, more: bool,
             aborted: bool, payload: bytes, short: bool) -> bytes:
    """A transfer frame; ``short``: its fields after ``more`` left out when they may be."""
    fields = [uint(handle), None if delivery_id is None else uint(delivery_id), tag,
              None if message_format is None else uint(message_format), False, more, None, None,
              False, aborted]
    if short and not aborted:
        fields = fields[:6]
    return frame(0x14, fields, payload, channel)


formats = st.one_of(st.sampled_from([0, BATCH_FORMAT, 0x80013701, 1, 0xFFFFFFFF]),
                    st.integers(0, 2**32 - 1))


@st.composite
def streams(draw):
    """(the bytes a client sends, per link name the (tag, format) of each delivery it
    completed or aborted, in order)."""
    links = []  # [name, handle, channel]
    out = [HEADER]
    for i in range(draw(st.integers(1, 4))):
        name, handle, channel = f"link-{i}", draw(st.integers(0, 3)), draw(st.integers(0, 2))
        if any(h == handle and c == channel for _, h, c in links):
            continue  # (a handle names one link of a session at a time)
        links.append([name, handle, channel])
        out.append(attach(name, handle, channel))
    sent: dict[str, list] = {name: [] for name, _, _ in links}
    delivery_id = 0
    # Deliveries as lists of frames, one link's contiguous; links' frames interleaved.
    queues: dict[str, list] = {name: [] for name, _, _ in links}
    for _ in range(draw(st.integers(0, 12))):
        name, handle, channel = draw(st.sampled_from(links))
        tag = draw(st.binary(min_size=0, max_size=16))
        message_format = draw(formats)
        body = draw(st.binary(max_size=64))
        cuts = draw(st.integers(1, 4))
        aborted = draw(st.booleans()) and draw(st.booleans())
        pieces = [body[i * len(body) // cuts:(i + 1) * len(body) // cuts] for i in range(cuts)]
        frames = []
        for k, piece in enumerate(pieces):
            last = k == len(pieces) - 1
            first = k == 0
            repeat = draw(st.booleans())  # a continuation repeats the first's fields, or not
            frames.append(transfer(
                handle, channel, delivery_id if first or repeat else None,
                tag if first or repeat else None,
                (None if message_format == 0 and draw(st.booleans()) else message_format)
                if first or repeat else None,
                not last, aborted and last, b"" if aborted and last else piece, draw(st.booleans())))
        delivery_id += 1
        queues[name].append(frames)
        sent[name].append((tag, message_format))
    pending = {name: [f for d in queues[name] for f in d] for name in queues}
    while any(pending.values()):
        name = draw(st.sampled_from(sorted(n for n in pending if pending[n])))
        out.append(pending[name].pop(0))
    return b"".join(out), sent


def fed(data: bytes, cuts: list[int]) -> InputFrames:
    scanner = InputFrames(MAX_FRAME)
    start = 0
    for cut in sorted(set(cuts)) + [len(data)]:
        scanner.feed_parts(memoryview(bytearray(data[start:cut])))
        start = cut
    return scanner


@settings(max_examples=400, deadline=None, derandomize=True)
@given(streams(), st.lists(st.integers(0, 4000), max_size=12))
def test_each_deliverys_format_is_the_one_its_first_transfer_said(stream, cuts):
    data, sent = stream
    scanner = fed(data, [c % (len(data) + 1) for c in cuts])
    for name, deliveries in sent.items():
        assert [scanner.take_format(name, tag) for tag, _ in deliveries] == \
            [message_format for _, message_format in deliveries]
        assert scanner.take_format(name, b"never sent") is None
    assert not scanner._formats  # (all taken: nothing kept)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(streams(), st.data())
def test_a_delivery_proton_made_without_a_transfer_read_here_is_skipped_by_its_tag(stream, data):
    """Out of step (as cannot happen, but a format must never be another delivery's):
    a tag not kept answers None and takes nothing; a later delivery's tag skips the
    ones before it."""
    raw, sent = stream
    scanner = fed(raw, [])
    for name, deliveries in sent.items():
        if not deliveries:
            continue
        skip = data.draw(st.integers(0, len(deliveries) - 1))
        tag, message_format = deliveries[skip]
        if any(t == tag for t, _ in deliveries[:skip]):
            continue  # (an earlier delivery of the same tag answers first)
        assert scanner.take_format(name, b"\xff" * 17) is None  # (longer than any tag sent)
        assert scanner.take_format(name, tag) == message_format


def test_a_reattached_handle_keeps_formats_under_the_new_links_name():
    data = (HEADER + attach("a", 0, 1) + transfer(0, 1, 0, b"t", BATCH_FORMAT, False, False, b"x", False)
            + detach(0, 1) + attach("b", 0, 1) + transfer(0, 1, 1, b"t", 0, True, False, b"y", True)
            + transfer(0, 1, None, None, None, False, False, b"z", True))
    scanner = fed(data, [])
    assert scanner.take_format("a", b"t") == BATCH_FORMAT
    assert scanner.take_format("b", b"t") == 0
    scanner.forget_link("b")
    assert not scanner._formats


@settings(max_examples=500, deadline=None, derandomize=True)
@given(transfer_fields(), st.binary(max_size=40), st.integers(0, 400))
def test_the_scanners_reading_of_a_transfers_fields_is_protons(fields, payload, cut):
    """Whatever the encodings and however few of the bytes have come, what the scanner
    reads of a transfer is what proton's codec reads, or nothing."""
    d = Data()
    d.put_object(Described(ulong(0x14), fields))
    performative = bytes(d.encode())
    buf = performative + payload
    fast = _transfer_fields(buf, 0, min(cut, len(buf)))
    if fast is not None:  # (continued, the last, is the scanner's own: see test_input_frames_deferral)
        assert fast[:5] == _transfer_fields_decoded(performative)[:5]
    if cut >= len(performative):
        whole, decoded = _transfer_fields(buf, 0, len(buf)), _transfer_fields_decoded(performative)
        assert (whole and whole[:5]) == (decoded and decoded[:5])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.one_of(st.builds(lambda fields, payload, channel: frame(0x14, fields, payload, channel),
                                    st.lists(anything, max_size=12), st.binary(max_size=20),
                                    st.integers(0, 2)),
                          st.builds(attach, st.text(max_size=4), st.integers(0, 3), st.integers(0, 2)),
                          st.builds(detach, st.integers(0, 3), st.integers(0, 2)),
                          st.binary(max_size=30)), max_size=10),
       st.lists(st.integers(0, 2000), max_size=8))
def test_any_frames_and_bytes_never_make_it_raise(pieces, cuts):
    data = HEADER + b"".join(pieces)
    scanner = fed(data, [c % (len(data) + 1) for c in cuts])
    for name in list(scanner._formats):
        while scanner._formats.get(name):
            tag = scanner._formats[name][0][0]
            assert isinstance(scanner.take_format(name, tag), int)
