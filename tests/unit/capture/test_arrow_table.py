"""The column-at-a-time ``arrow_table`` builds the table a value-at-a-time
build gives (so Parquet files keep their bytes), for Kafka headers and AMQP's
typed properties, with and without partition keys."""
from __future__ import annotations

from io import BytesIO

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.capture.events import (ENQUEUED_TIME, OFFSET, PARTITION_KEY, SEQUENCE_NUMBER, EventBatch,
                                       arrow_table, format_enqueued_time)
from kafka_wire.capture.schema import ARROW_SCHEMA, PROPERTY_MAP, union_member


def reference_table(events: EventBatch, partition_key: bool) -> pa.Table:
    """One dict per value, the plain way."""
    sysprops, props = [], []
    for seq, off, ms, key, hdrs in zip(events.sequence_numbers, events.offsets, events.enqueued_ms, events.keys,
                                       events.headers):
        entry = [(SEQUENCE_NUMBER, {"member0": seq}), (OFFSET, {"member2": str(off)}),
                 (ENQUEUED_TIME, {"member0": ms})]
        if partition_key and key is not None:
            try:
                entry.append((PARTITION_KEY, {"member2": key.decode()}))
            except UnicodeDecodeError:
                pass
        sysprops.append(entry)
        props.append([(k, union_member(v)) for k, v in dict(hdrs).items()] if hdrs else [])
    return pa.Table.from_arrays([
        pa.array(events.sequence_numbers, pa.int64()),
        pa.array([str(o) for o in events.offsets], pa.string()),
        pa.array([format_enqueued_time(ms) for ms in events.enqueued_ms], pa.string()),
        pa.array(sysprops, PROPERTY_MAP), pa.array(props, PROPERTY_MAP),
        pa.array(events.bodies, pa.binary())], schema=ARROW_SCHEMA)


def parquet_bytes(table: pa.Table) -> bytes:
    out = BytesIO()
    pq.write_table(table, out, compression="snappy")
    return out.getvalue()


keys = st.one_of(st.none(), st.binary(max_size=8), st.text(max_size=6).map(str.encode))
kafka_headers = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.one_of(st.none(), st.binary(max_size=6))),
                         max_size=4)
typed_headers = st.lists(st.tuples(st.sampled_from(["a", "b"]), st.one_of(
    st.none(), st.binary(max_size=4), st.integers(-2**63, 2**63 - 1), st.floats(allow_nan=False),
    st.text(max_size=5), st.booleans())), max_size=3)
rows = st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 2**50), st.integers(0, 2**42), keys,
                          st.one_of(kafka_headers, typed_headers), st.one_of(st.none(), st.binary(max_size=20))),
                max_size=30)
all_keyed = st.lists(st.tuples(st.integers(0, 2**40), st.integers(0, 2**50), st.integers(0, 2**42),
                               st.text(max_size=6).map(str.encode), kafka_headers, st.binary(max_size=20)),
                     min_size=1, max_size=30)


@settings(max_examples=300, deadline=None)
@given(st.one_of(rows, all_keyed), st.booleans())
def test_the_same_table_and_parquet_bytes(data, partition_key):
    events = EventBatch(*(list(c) for c in zip(*data))) if data else EventBatch()
    expected = reference_table(events, partition_key)
    table = arrow_table(events, partition_key=partition_key)
    assert table.equals(expected)
    assert parquet_bytes(table) == parquet_bytes(expected)
