"""Capture's per-event costs, without Spark: decoding a stored batch and
encoding Avro and Parquet, each beside what it replaced.

    python -m bench.capture_codec [--events 1000] [--size 200] [--rounds 50]

Prints µs per event for: kafka-python's DefaultRecordBatch iteration and
log.records.read_event_columns (via capture.events.decode_batch); fastavro
with a dict per record and capture.avro_blocks.AvroBlocks; and
capture.events.arrow_table (Parquet's table).
"""
from __future__ import annotations

import argparse
import os
import time
from io import BytesIO

import fastavro
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kafka_wire.capture.avro_blocks import AvroBlocks
from kafka_wire.capture.events import arrow_table, avro_records, decode_batch
from kafka_wire.capture.schema import AVRO_SCHEMA


def _per_event(fn, rounds: int, events: int) -> float:
    t0 = time.perf_counter()
    for _ in range(rounds):
        fn()
    return (time.perf_counter() - t0) / rounds / events * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1000, help="events in the stored batch")
    ap.add_argument("--size", type=int, default=200, help="event body bytes")
    ap.add_argument("--rounds", type=int, default=50)
    args = ap.parse_args(argv)
    body = os.urandom(args.size // 2 + 1).hex().encode()[:args.size]
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 26)
    for i in range(args.events):
        b.append(i, timestamp=1, key=b"key-%d" % i, value=body, headers=[])
    data = bytes(b.build())
    events = decode_batch(data, 5, 1_700_000_000_000)

    def kafka_python():
        for r in DefaultRecordBatch(data):
            r.offset, r.key, r.value, r.headers

    def fastavro_dicts():
        w = fastavro.write.Writer(BytesIO(), AVRO_SCHEMA, sync_marker=b"M" * 16)
        for record in avro_records(events):
            w.write(record)
        w.flush()

    def avro_blocks():
        blocks = AvroBlocks(BytesIO(), b"M" * 16)
        blocks.write(events)
        blocks.flush()

    rows = [
        ("decode: kafka-python DefaultRecordBatch", kafka_python),
        ("decode: decode_batch (read_event_columns)", lambda: decode_batch(data, 5, 1_700_000_000_000)),
        ("Avro: fastavro, a dict per record", fastavro_dicts),
        ("Avro: AvroBlocks", avro_blocks),
        ("Parquet: arrow_table", lambda: arrow_table(events)),
    ]
    print(f"{args.events} events of {args.size} B, {args.rounds} rounds")
    for name, fn in rows:
        print(f"{name:45} {_per_event(fn, args.rounds, args.events):6.2f} µs/event")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
