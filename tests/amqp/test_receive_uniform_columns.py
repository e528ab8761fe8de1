"""outgoing._uniform checks a one-length batch a column at a time (each byte offset of
the records, strided, in one compare) and takes its values with a struct's iter_unpack;
frames.run_tags cuts a run's tags with one struct unpack. Every byte of the records but
the values' must still be checked: a batch of more than one record with any one of them
changed is left to the record-by-record loop (None here), in either group of offset deltas (one-byte and
two-byte varints), for short and long value lengths; an unchanged batch gives the
record-by-record reader's messages from any start."""
from __future__ import annotations

import random

import pytest

from kafka_wire.amqp import outgoing
from kafka_wire.amqp.frames import run_tag, run_tags
from kafka_wire.log import batch as rb

from .test_receive_uniform_batches import make_batch, reference

SEED = 43
APPEND_MS = 1_700_000_000_123


def _batch(count: int, length: int, stamp: int, base: int) -> bytes:
    rng = random.Random(SEED + count + length)
    return make_batch([(d, stamp, None, rng.randbytes(length), []) for d in range(count)], 0, base)


def _value_spans(data: bytes, count: int) -> set[int]:
    """The positions (in the records) of every value byte."""
    header = rb.parse_header(data, 0)
    recs = memoryview(data)[rb.HEADER_SIZE:header.size]
    spans, p = set(), 0
    for _ in range(count):
        size, q = rb.read_varint(recs, p)
        end = q + size
        q += 1  # attributes
        _, q = rb.read_varint(recs, q)  # timestamp delta
        _, q = rb.read_varint(recs, q)  # offset delta
        q += 1  # null key
        n, q = rb.read_varint(recs, q)
        spans.update(range(q, q + n))
        p = end
    return spans


def _uniform(data: bytes, count: int, skip: int, position: int):
    header = rb.parse_header(data, 0)
    recs = memoryview(data)[rb.HEADER_SIZE:header.size]
    return outgoing._uniform(recs, count, header.base_offset, skip, position * rb.EVENTS_PER_POSITION,
                             outgoing._TIME_STAMP + outgoing._I64.pack(APPEND_MS))


@pytest.mark.parametrize("count, length, stamp", [(70, 3, 0), (66, 200, 5), (130, 300, 70000), (1, 0, 0)])
def test_every_byte_but_the_values_is_checked(count, length, stamp):
    data = _batch(count, length, stamp, 1000)
    values = _value_spans(data, count)
    size = len(data) - rb.HEADER_SIZE
    assert _uniform(data, count, 0, 7) == reference(data, rb.parse_header(data, 0), 0, 7, APPEND_MS)
    checked = 0
    for at in range(size):
        if at in values:
            continue
        for bit in (0, 7):
            p = rb.HEADER_SIZE + at
            changed = data[:p] + bytes((data[p] ^ (1 << bit),)) + data[p + 1:]
            got = _uniform(changed, count, 0, 7)
            if count > 1:
                assert got is None, (at, bit)
            elif got is not None:  # (one record: its timestamp delta is the batch's, read from it)
                assert got == reference(changed, rb.parse_header(changed, 0), 0, 7, APPEND_MS), (at, bit)
        checked += 1
    assert checked == size - len(values)
    # a value's bytes are not the check's: changed, they are the messages' (taken, not compared)
    if values:
        p = rb.HEADER_SIZE + max(values)
        changed = data[:p] + bytes((data[p] ^ 1,)) + data[p + 1:]
        assert _uniform(changed, count, 0, 7) == reference(changed, rb.parse_header(changed, 0), 0, 7, APPEND_MS)


@pytest.mark.parametrize("position", [0, 7, 999_999])
@pytest.mark.parametrize("skip", [0, 1, 63, 64, 65, 129, 130, 500])
def test_any_start_gives_the_record_by_record_messages(skip, position):
    data = _batch(130, 1024, 0, 5000)
    header = rb.parse_header(data, 0)
    assert _uniform(data, 130, skip, position) == reference(data, header, skip, position, APPEND_MS)


def test_run_tags_are_the_run_tag_of_each_number_for_any_count():
    rng = random.Random(SEED)
    for n in list(range(1, 80)) + [rng.randrange(1, 5000) for _ in range(20)]:  # (past the kept cutters)
        first = rng.randrange(1, 2**40)
        assert list(run_tags(first, n)) == [run_tag(first + i) for i in range(n)]
