"""``kafka-wire txns``: hanging transactions (KIP-664), the way
``kafka-transactions.sh`` finds and aborts them, against a running broker.

A transaction *hangs* in a partition when the partition's producer state says
it is open (DescribeProducers: a current transaction start offset) but no
transaction coordinator has it open with that partition (ListTransactions,
DescribeTransactions), and it has been open longer than the longest a
transaction may last: its records hold the partition's last stable offset
and read_committed consumers stop there. After a power loss in crash
durability this is what a transaction whose records reached the disk but
whose marker and coordinator state did not looks like; the broker aborts such
a transaction itself once ``--transaction-max-timeout-ms`` has passed, and
this command shows and aborts them sooner.

    kafka-wire txns --bootstrap 127.0.0.1:9092 find-hanging [--topic T] [--max-transaction-timeout-ms MS]
    kafka-wire txns --bootstrap 127.0.0.1:9092 abort-hanging [...same filters]
    kafka-wire txns --bootstrap 127.0.0.1:9092 abort --topic T --partition P --producer-id ID --producer-epoch E

Uses kafka-python's admin client (DescribeProducers, ListTransactions,
DescribeTransactions, WriteTxnMarkers); the abort needs the Manage right.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import NamedTuple

from kafka_wire.whole_numbers import whole_number

__all__ = ["Hanging", "find_hanging", "add_parser", "run"]

OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort")


class Hanging(NamedTuple):
    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    start_offset: int
    last_timestamp: int
    age_ms: int


def _admin(args):
    from kafka.admin import KafkaAdminClient

    options = {"bootstrap_servers": args.bootstrap, "client_id": "kafka-wire-txns",
               "request_timeout_ms": int(args.timeout * 1000)}
    for item in args.kafka_option:
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"--kafka-option {item!r}: use KEY=VALUE (kafka-python option names)")
        number = whole_number(value)
        options[key] = value if number is None else number
    return KafkaAdminClient(**options)


def find_hanging(admin, *, topics: list[str] | None = None, max_timeout_ms: int = 900_000,
                 now_ms: int | None = None) -> list[Hanging]:
    """The hanging transactions of ``topics`` (default: every topic)."""
    from kafka.structs import TopicPartition

    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    names = topics or sorted(t for t in admin.list_topics() if not t.startswith("__"))
    tps = [TopicPartition(t["name"], p["partition_index"]) for t in admin.describe_topics(names)
           for p in t["partitions"]]
    states = admin.describe_producers(tps) if tps else {}
    open_here: dict[int, set] = {}  # producer id -> partitions its coordinator has open
    listings = admin.list_transactions()
    ids = sorted({t.transactional_id for txns in listings.values() for t in txns
                  if getattr(t.state, "value", t.state) in OPEN_STATES})
    if ids:
        for desc in admin.describe_transactions(ids).values():
            if getattr(desc.state, "value", desc.state) in OPEN_STATES:
                open_here.setdefault(desc.producer_id, set()).update(desc.topic_partitions)
    out = []
    for tp, state in sorted(states.items()):
        for p in state.active_producers:
            if p.current_transaction_start_offset < 0:
                continue
            if tp in open_here.get(p.producer_id, ()):
                continue
            age = now_ms - p.last_timestamp if p.last_timestamp >= 0 else max_timeout_ms
            if age < max_timeout_ms:
                continue
            out.append(Hanging(tp.topic, tp.partition, p.producer_id, p.producer_epoch, p.coordinator_epoch,
                               p.current_transaction_start_offset, p.last_timestamp, age))
    return out


def _abort(admin, h: Hanging) -> None:
    from kafka.admin._transactions import AbortTransactionSpec
    from kafka.structs import TopicPartition

    admin.abort_transaction(AbortTransactionSpec(TopicPartition(h.topic, h.partition), h.producer_id,
                                                 h.producer_epoch, -1))


def _print(rows: list[Hanging], as_json: bool) -> None:
    if as_json:
        print(json.dumps([r._asdict() for r in rows], indent=1))
        return
    if not rows:
        print("no hanging transactions")
        return
    head = ("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
            "LastTimestamp", "Duration(min)")
    table = [head] + [(r.topic, r.partition, r.producer_id, r.producer_epoch, r.coordinator_epoch, r.start_offset,
                       r.last_timestamp, r.age_ms // 60_000) for r in rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(head))]
    for row in table:
        print("  ".join(str(v).ljust(w) for v, w in zip(row, widths)).rstrip())


def run(args: argparse.Namespace) -> int:
    if not args.bootstrap:
        raise ValueError("kafka-wire txns needs --bootstrap HOST:PORT of a running broker")
    admin = _admin(args)
    try:
        if args.action == "abort":
            missing = [f for f in ("topic", "partition", "producer_id", "producer_epoch")
                       if getattr(args, f) is None]
            if missing:
                raise ValueError("abort needs " + ", ".join("--" + m.replace("_", "-") for m in missing))
            _abort(admin, Hanging(args.topic, args.partition, args.producer_id, args.producer_epoch, -1, -1, -1, 0))
            print(f"aborted the transaction of producer {args.producer_id} in {args.topic}-{args.partition}")
            return 0
        rows = find_hanging(admin, topics=[args.topic] if args.topic else None,
                            max_timeout_ms=args.max_transaction_timeout_ms)
        if args.action == "abort-hanging":
            for r in rows:
                _abort(admin, r)
                print(f"aborted the transaction of producer {r.producer_id} in {r.topic}-{r.partition} "
                      f"(open since offset {r.start_offset})")
            if not rows:
                print("no hanging transactions")
            return 0
        _print(rows, args.json)
        return 0
    finally:
        admin.close()


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("txns", help="find and abort hanging transactions (KIP-664)",
                       description="A transaction hangs in a partition when the partition's producer "
                       "state has it open but no transaction coordinator does (its state lost in a power "
                       "loss), for longer than a transaction may last: read_committed consumers stop at "
                       "it. find-hanging lists them (DescribeProducers, ListTransactions, "
                       "DescribeTransactions), abort and abort-hanging write their ABORT markers "
                       "(WriteTxnMarkers; the Manage right). The broker aborts them itself once its "
                       "--transaction-max-timeout-ms has passed.")
    p.add_argument("action", choices=("find-hanging", "abort-hanging", "abort"),
                   help="find-hanging lists them; abort-hanging aborts every one found; abort aborts one")
    p.add_argument("--bootstrap", metavar="HOST:PORT", help="a running broker's Kafka listener")
    p.add_argument("--topic", help="only this topic (event hub); with abort, the partition's topic")
    p.add_argument("--partition", type=int, help="abort: the partition")
    p.add_argument("--producer-id", type=int, help="abort: the producer whose transaction to abort")
    p.add_argument("--producer-epoch", type=int, help="abort: its epoch (find-hanging shows it)")
    p.add_argument("--max-transaction-timeout-ms", type=int, default=900_000, metavar="MS",
                   help="a transaction open longer than this hangs (default 900000, Kafka's "
                   "transaction.max.timeout.ms; use the broker's --transaction-max-timeout-ms)")
    p.add_argument("--json", action="store_true", help="find-hanging: print JSON")
    p.add_argument("--kafka-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a kafka-python admin client option (security_protocol, sasl_mechanism, ...)")
    p.add_argument("--timeout", type=float, default=10.0, help="request timeout in seconds (default 10)")
    p.set_defaults(func=run)
    return p


if __name__ == "__main__":  # pragma: no cover
    from kafka_wire.cli import main

    sys.exit(main(["txns", *sys.argv[1:]]))
