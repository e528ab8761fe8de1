"""A message's frames before its last are handed to proton without a pump of their own
(InputFrames.ended stays False for them, up to a bound): property tests hold the
scanner's reading of a transfer's ``more`` and ``aborted`` to proton's codec, and its
``ended`` to a model of the rule, whatever the cuts between reads."""
from __future__ import annotations

import struct

from hypothesis import example, given, settings
from hypothesis import strategies as st
from proton import Data, Described, ubyte, uint, ulong

from kafka_wire.amqp.input_frames import InputFrames, _transfer_fields

HEADER = b"AMQP\x00\x01\x00\x00"


def _continued(buf, body: int, stop: int) -> bool:
    """The scanner's answer: is the transfer at ``body`` a message's part with more to come?"""
    fields = _transfer_fields(buf, body, stop)
    return fields is not None and fields[5]


def frame(code: int, fields: list, payload: bytes = b"", channel: int = 0) -> bytes:
    d = Data()
    d.put_object(Described(ulong(code), fields))
    body = bytes(d.encode()) + payload
    return struct.pack(">IBBH", 8 + len(body), 2, 0, channel) + body


booleans = st.one_of(st.none(), st.booleans())
# Field values of any type: what a hostile client may put in a transfer's fields.
anything = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.binary(max_size=8),
                     st.text(max_size=8), st.integers(0, 2**32 - 1).map(uint),
                     st.integers(0, 255).map(ubyte))


@st.composite
def transfer_fields(draw) -> list:
    """A transfer's fields as a client writes them (uints, binary tag, booleans), cut
    after any field from ``more`` on."""
    fields = [uint(draw(st.integers(0, 70000))), draw(st.one_of(st.none(), st.integers(0, 2**32 - 1).map(uint))),
              draw(st.one_of(st.none(), st.binary(max_size=300))),
              draw(st.one_of(st.none(), st.integers(0, 2**32 - 1).map(uint))), draw(booleans),
              draw(st.booleans()), draw(st.one_of(st.none(), st.integers(0, 1).map(ubyte))), None,
              draw(booleans), draw(booleans), draw(booleans)]
    return fields[:draw(st.integers(6, len(fields)))]


def protons_reading(performative: bytes) -> tuple[bool, bool] | None:
    """(more, aborted) as proton's codec reads the transfer's fields; None if it does not."""
    d = Data()
    try:
        d.decode(performative)
        d.rewind()
        d.next()
        fields = d.get_object().value
    except Exception:  # noqa: BLE001
        return None
    fields = list(fields) + [None] * 11
    return fields[5] is True, fields[9] is True


def _performative(raw: bytes) -> bytes:
    return raw[8:]


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.lists(anything, max_size=12), st.binary(max_size=40))
def test_a_transfer_is_continued_only_when_proton_reads_more_and_not_aborted(fields, payload):
    """Whatever its fields hold, a transfer is read as a message's part with more to come
    only when proton's codec reads ``more`` true and ``aborted`` not true."""
    raw = frame(0x14, fields, payload)
    if _continued(raw, 8, len(raw)):
        read = protons_reading(_performative(raw))
        assert read is not None and read[0] and not read[1]


@settings(max_examples=400, deadline=None, derandomize=True)
@given(transfer_fields(), st.binary(max_size=40), st.integers(0, 400))
def test_a_clients_transfer_is_continued_when_it_has_more_to_come(fields, payload, cut):
    """A transfer written as clients write it (its fields of their own types) is a
    message's part with more to come exactly when ``more`` is true and ``aborted`` is not,
    as proton reads it; cut short before its fields end, it is not (it is pumped)."""
    raw = frame(0x14, fields, payload)
    read = protons_reading(_performative(raw))
    assert _continued(raw, 8, len(raw)) == (read[0] and not read[1])
    fields_end = len(raw) - len(payload)
    if cut + 8 < fields_end:
        assert not _continued(raw[:8 + cut], 8, 8 + cut)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.binary(max_size=60), st.integers(0, 60))
def test_bytes_that_are_no_transfer_are_never_continued_and_never_raise(junk, cut):
    """Arbitrary bytes after a transfer's descriptor (cut anywhere) are read without an
    exception, and taken for a message's part only if proton reads them as one."""
    body = b"\x00\x53\x14" + junk
    if _continued(body, 0, min(cut, len(body))) or _continued(body, 0, len(body)):
        read = protons_reading(body)
        assert read is not None and read[0] and not read[1]


_FIELDS_END: dict[bytes, int] = {}  # a transfer frame's bytes before its payload


# A conversation's frames: transfers (more or not, aborted or not), other performatives.
@st.composite
def conversations(draw) -> list[tuple[bytes, bool]]:
    """(frame, continued) for each frame: is it a message's part with more to come?
    (A transfer's payload comes after its fields: ``len(frame(...)) - payload``.)"""
    out = []
    for _ in range(draw(st.integers(1, 10))):
        if draw(st.integers(0, 4)) == 0:  # a flow or a disposition
            code = draw(st.sampled_from([0x13, 0x15]))
            out.append((frame(code, [uint(0), uint(100), uint(0), uint(100)] if code == 0x13
                              else [True, uint(0)], b"", 1), False))
            continue
        more, aborted = draw(st.booleans()), draw(booleans)
        fields = [uint(0), uint(draw(st.integers(0, 9))), b"t", uint(0), False, more, None, None,
                  None, aborted]
        raw = frame(0x14, fields, b"x" * draw(st.integers(0, 3000)), 1)
        out.append((raw, more and not aborted))
        _FIELDS_END[raw] = len(frame(0x14, fields, b"", 1))
    return out


@settings(max_examples=300, deadline=None, derandomize=True)
@example(frames=[(frame(0x14, [uint(0), uint(0), b"t", uint(0), False, True], b"x" * 3000, 1), True)] * 4,
         cuts=[], bound=6000)
@given(conversations(), st.lists(st.integers(0, 40000), max_size=10), st.sampled_from([0, 2000, 6000, 1 << 20]))
def test_a_feed_ends_when_it_ends_a_frame_that_cannot_wait(frames, cuts, bound):
    """Whatever the cuts between reads, the scanner hands proton every byte, and a feed
    says it ended (the connection pumps) when it ended a frame that is not a message's
    part with more to come, or when such parts since the last pump would pass the
    bound; a message's last frame always ends its feed. (A part whose first read held
    less than its fields, but enough to be passed on as it comes, is pumped.)"""
    prefix = HEADER + frame(0x10, ["c"]) + frame(0x11, [None, uint(0), uint(100), uint(100)], b"", 1)
    data = prefix + b"".join(raw for raw, _ in frames)
    ends = [len(HEADER)]  # each frame's end, and whether it can wait
    waits = [False]
    pos = len(HEADER)
    cuts = sorted(c for c in cuts if c < len(data))
    bounds = [0, *cuts, len(data)]
    for raw, continued in [(frame(0x10, ["c"]), False),
                           (frame(0x11, [None, uint(0), uint(100), uint(100)], b"", 1), False), *frames]:
        start, pos = pos, pos + len(raw)
        first_read_end = min(b for b in bounds if b > start)
        if continued and first_read_end < pos and first_read_end - start >= 11:
            continued = first_read_end >= start + _FIELDS_END[raw]  # (passed on as it comes)
        ends.append(pos)
        waits.append(continued)
    scanner = InputFrames(max_frame=65536, deferred_bytes=bound)
    passed = []
    deferred = 0
    for a, b in zip(bounds, bounds[1:]):
        passed += scanner.feed_parts(data[a:b])
        ended = False
        for i, e in enumerate(ends):
            if a < e <= b:
                size = e - (ends[i - 1] if i else 0)
                if waits[i] and deferred + size <= bound:
                    deferred += size
                else:
                    ended = True
        if ended:
            deferred = 0
        assert scanner.ended == ended, (a, b)
    assert b"".join(passed) == data
    if frames and not frames[-1][1]:
        assert scanner.ended or bounds[-2] >= ends[-1]
