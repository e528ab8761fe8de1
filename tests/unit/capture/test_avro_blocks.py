"""AvroBlocks writes exactly the bytes fastavro writes for the same Capture
records, block framing included, whatever the keys, headers and bodies."""
from __future__ import annotations

from io import BytesIO

import fastavro
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kafka_wire.capture.avro_blocks import AvroBlocks
from kafka_wire.capture.events import EventBatch, avro_records
from kafka_wire.capture.schema import AVRO_CODEC, AVRO_SCHEMA

MARKER = bytes(range(16))

keys = st.one_of(st.none(), st.binary(max_size=40), st.text(max_size=20).map(str.encode))
kafka_values = st.one_of(st.none(), st.binary(max_size=30))
typed_values = st.one_of(kafka_values, st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False),
                         st.text(max_size=10))
headers = st.lists(st.tuples(st.sampled_from(["a", "b", "ü", "x-opt-z"]), kafka_values), max_size=4)
typed_headers = st.lists(st.tuples(st.sampled_from(["a", "b"]), typed_values), max_size=3)
events = st.lists(st.tuples(
    st.integers(0, 2**40), st.integers(0, 2**50), st.sampled_from([1_700_000_000_000, 1_675_708_185_000]),
    keys, st.one_of(headers, typed_headers),
    # bodies up to 3 KB, so files cross fastavro's 16,000-byte block boundary often
    st.one_of(st.none(), st.binary(max_size=50), st.integers(0, 3000).map(lambda n: b"b" * n))), max_size=60)


def _batch(rows) -> EventBatch:
    return EventBatch(*(list(column) for column in zip(*rows))) if rows else EventBatch()


def _fastavro(rows, partition_key: bool) -> bytes:
    out = BytesIO()
    w = fastavro.write.Writer(out, AVRO_SCHEMA, codec=AVRO_CODEC, sync_marker=MARKER)
    for record in avro_records(_batch(rows), partition_key=partition_key):
        w.write(record)
    w.flush()
    return out.getvalue()


def _blocks(rows, partition_key: bool, cut: int) -> bytes:
    out = BytesIO()
    fastavro.write.Writer(out, AVRO_SCHEMA, codec=AVRO_CODEC, sync_marker=MARKER)
    blocks = AvroBlocks(out, MARKER, partition_key=partition_key)
    blocks.write(_batch(rows[:cut]))  # in two writes, as a file fed by several batches is
    blocks.write(_batch(rows[cut:]))
    blocks.flush()
    return out.getvalue()


BIG = [(i, 10**9 + i, 1_700_000_000_000, b"k%d" % i, [("a", b"v")], b"b" * (700 + 37 * i)) for i in range(60)]


@settings(max_examples=300, deadline=None)
@given(events, st.booleans(), st.integers(0, 60))
@example(BIG, True, 7)  # many blocks: where a block ends must match too
def test_the_same_bytes_as_fastavro(rows, partition_key, cut):
    expected = _fastavro(rows, partition_key)
    assert _blocks(rows, partition_key, cut) == expected
    assert [r["SequenceNumber"] for r in fastavro.reader(BytesIO(expected))] == [r[0] for r in rows]
