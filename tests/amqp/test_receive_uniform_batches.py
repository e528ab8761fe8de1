"""A batch whose records are alike but for their offset deltas and values (one value
length, no key, no headers, one timestamp delta: what the SDKs' sends are stored as)
is turned into messages without a step per record (outgoing._uniform). The messages
must be byte for byte those of the record-by-record reader and encoder, for any start
in the batch, and any batch that is not quite alike (a key, a header, a gap in the
deltas, another length, another timestamp, a flipped or missing byte) must be left to
the general loop, which then gives the same messages or CorruptRecord as before."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.amqp import outgoing
from kafka_wire.amqp.messages import encode_event
from kafka_wire.amqp.outgoing import batch_events
from kafka_wire.log import batch as rb
from kafka_wire.log import records as rr
from kafka_wire.log.errors import CorruptRecord


def make_batch(records: list[tuple], codec: int, base: int) -> bytes:
    """``records``: (offset delta, timestamp delta, key, value, headers)."""
    body = b"".join(rr.encode_record(d, t, k, v, hs) for d, t, k, v, hs in records)
    return bytes(rb.encode_batch(
        base_offset=base, partition_leader_epoch=0, attributes=codec, last_offset_delta=max(r[0] for r in records),
        base_timestamp=0, max_timestamp=0, producer_id=-1, producer_epoch=-1, base_sequence=-1,
        records_count=len(records), records=rr.compress(codec, body) if codec else body))


def reference(data, header, skip, position, append_ms) -> list[bytes]:
    out = []
    for delta, key, value, hs in rr.read_events(data, header):
        if delta < skip:
            continue
        sequence = header.base_offset + delta
        out.append(encode_event(sequence, rb.event_offset(position, delta), append_ms, key, value, hs, False, b""))
    return out


def _outcome(f):
    try:
        return f()
    except CorruptRecord:
        return CorruptRecord


lengths = st.sampled_from([0, 1, 63, 64, 127, 128, 255, 256, 1024, 8191, 8192]) | st.integers(0, 3000)
changes = st.sampled_from(["none", "key", "header", "gap", "length", "stamp", "null value", "flip", "cut", "tail"])


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.integers(1, 200) | st.sampled_from([63, 64, 65, 128]), lengths, st.sampled_from([0, 5, 300, -1, 70000]),
       st.sampled_from([rr.NONE, rr.GZIP]), st.integers(0, 2**40), st.sampled_from([0, 7, 999_999, 10**6]),
       st.integers(-2, 210), changes, st.integers(0, 10**9), st.randoms(use_true_random=False))
def test_uniform_batches_read_as_the_record_by_record_loop_reads_them(count, length, stamp, codec, base, position,
                                                                       skip, change, where, rng):
    records = [[d, stamp, None, rng.randbytes(length), []] for d in range(count)]
    at = where % count
    if change == "key":
        records[at][2] = b"k"
    elif change == "header":
        records[at][4] = [(b"h", b"v")]
    elif change == "gap" and at:
        for r in records[at:]:
            r[0] += 1
    elif change == "length":
        records[at][3] += b"x"
    elif change == "stamp":
        records[at][1] += 1
    elif change == "null value":
        records[at][3] = None
    data = make_batch([tuple(r) for r in records], codec, base)
    if change == "flip" and codec == rr.NONE:  # any byte of the records but the values'
        p = rb.HEADER_SIZE + where % (len(data) - rb.HEADER_SIZE)
        data = data[:p] + bytes((data[p] ^ (1 << where % 8),)) + data[p + 1:]
    elif change == "cut" and codec == rr.NONE:  # records that end too soon
        data = data[:len(data) - 1 - where % min(40, len(data) - rb.HEADER_SIZE)]
    elif change == "tail" and codec == rr.NONE:  # bytes after the last record (read as before: not looked at)
        data = data + b"\x07\x00"
    header = rb.parse_header(data, 0)
    append_ms = 1_700_000_000_000 + where
    got = _outcome(lambda: batch_events(data, header, skip, position, append_ms, False, b""))
    assert got == _outcome(lambda: reference(data, header, skip, position, append_ms))
    if change == "none":  # alike: it was the one-step path that read it
        recs = rr.records_bytes(data, header) if codec else memoryview(data)[rb.HEADER_SIZE:header.size]
        assert outgoing._uniform(recs, count, header.base_offset, max(skip, 0), position * rb.EVENTS_PER_POSITION,
                                 outgoing._TIME_STAMP + outgoing._I64.pack(append_ms)) == got
