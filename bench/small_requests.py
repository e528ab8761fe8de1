"""Broker CPU per small request: Produce and Fetch requests carrying one
100 B record each, kafka-wire beside Tansu in the same run.

A program, not a test (``python -m bench.small_requests [--requests N] [--repeat 3]``).
Per round and broker: a confluent-kafka producer with linger.ms=0 and
batch.num.messages=1 sends N records (one batch, so one Produce request, each);
a consumer with max.partition.fetch.bytes=1 reads them back (one batch per
Fetch). The request counts come from librdkafka's own statistics (``req``
per broker), the broker's CPU from /proc (utime + stime). Then the Java
producer with client defaults (bench.run's BenchProducer, 200,000 × 1 KiB,
``--java N``) and its msg/s. Prints medians of ``--repeat`` rounds, the peer
and the ratio, against issue 30's goals: Java producer >= 2x Tansu, and the
broker's CPU per request.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from bench.run import create_topic, java_producer, produce_n, start_broker, tansu_binary


def _req_counts(stats_json: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for b in json.loads(stats_json).get("brokers", {}).values():
        for k, v in (b.get("req") or {}).items():
            out[k] = out.get(k, 0) + v
    return out


def produce_small(bootstrap: str, topic: str, n: int) -> dict:
    last = {}
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                  "batch.num.messages": 1, "enable.idempotence": False,
                  "statistics.interval.ms": 100, "stats_cb": lambda s: last.update(s=s)})
    value = b"x" * 100
    errors = []
    cb = lambda err, _m: errors.append(err) if err else None  # noqa: E731
    start = time.perf_counter()
    produce_n(p, topic, value, n, cb, wait=0.001, serve_each=True)
    left = p.flush(60)
    secs = time.perf_counter() - start
    time.sleep(0.25)
    p.poll(0.2)  # a last statistics callback
    if errors or left:
        raise RuntimeError(f"produce failed: {errors[:3]} {left}")
    reqs = _req_counts(last["s"]).get("Produce", 0) if last else 0
    return {"requests": reqs, "seconds": secs, "msgs_per_s": n / secs}


def fetch_small(bootstrap: str, topic: str, n: int) -> dict:
    last = {}
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "small", "enable.auto.commit": False,
                  "max.partition.fetch.bytes": 1, "fetch.wait.max.ms": 100,
                  "statistics.interval.ms": 100, "stats_cb": lambda s: last.update(s=s)})
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    start = time.perf_counter()
    deadline = start + 120
    while got < n and time.perf_counter() < deadline:
        for m in c.consume(10_000, 0.5):
            if m.error() is None:
                got += 1
            elif m.error().code() != KafkaError._PARTITION_EOF:
                raise RuntimeError(m.error())
    secs = time.perf_counter() - start
    c.poll(0.3)
    c.close()
    reqs = _req_counts(last["s"]).get("Fetch", 0) if last else 0
    return {"requests": reqs, "read": got, "seconds": secs, "msgs_per_s": got / secs}


def one_round(name: str, n: int, java_n: int) -> dict:
    b = start_broker(name)
    try:
        create_topic(b.bootstrap, "small")
        cpu0 = b.cpu_seconds()
        prod = produce_small(b.bootstrap, "small", n)
        cpu1 = b.cpu_seconds()
        cons = fetch_small(b.bootstrap, "small", n)
        cpu2 = b.cpu_seconds()
        out = {"produce": prod, "fetch": cons,
               "produce_us_per_req": (cpu1 - cpu0) / max(prod["requests"], 1) * 1e6,
               "fetch_us_per_req": (cpu2 - cpu1) / max(cons["requests"], 1) * 1e6}
        if java_n:
            create_topic(b.bootstrap, "java")
            cpu3 = b.cpu_seconds()
            out["java"] = java_producer(b.bootstrap, "java", java_n, 1024)
            out["java"]["broker_cpu_us_per_msg"] = (b.cpu_seconds() - cpu3) / java_n * 1e6
        return out
    finally:
        b.stop()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=20_000)
    ap.add_argument("--java", type=int, default=200_000, help="Java producer records (0: skip)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--brokers", default=None)
    args = ap.parse_args(argv)
    brokers = args.brokers.split(",") if args.brokers else (
        ["kafka-wire", "tansu"] if tansu_binary() else ["kafka-wire"])
    runs: dict[str, list] = {b: [] for b in brokers}
    for i in range(args.repeat):
        for b in brokers:
            print(f"round {i + 1}/{args.repeat}: {b} ...", flush=True)
            runs[b].append(one_round(b, args.requests, args.java))

    def med(b, *path):
        vals = []
        for r in runs[b]:
            v = r
            for k in path:
                v = v.get(k, float("nan")) if isinstance(v, dict) else float("nan")
            vals.append(v)
        return statistics.median(vals)

    rows = [("broker CPU µs per Produce request (1 × 100 B)", ("produce_us_per_req",), "lower"),
            ("  Produce requests counted by the client", ("produce", "requests"), None),
            ("broker CPU µs per Fetch request (1 × 100 B)", ("fetch_us_per_req",), "lower"),
            ("  Fetch requests counted by the client", ("fetch", "requests"), None)]
    if args.java:
        rows += [("Java producer msg/s (1 KiB, client defaults)", ("java", "msgs_per_s"), "higher"),
                 ("  broker CPU µs per Java message", ("java", "broker_cpu_us_per_msg"), "lower")]
    peer = "tansu" if "tansu" in brokers and "kafka-wire" in brokers else None
    print(f"\n{'figure (median of %d)' % args.repeat:50}{'kafka-wire':>14}{'Tansu':>14}{'kw/Tansu':>10}")
    for label, path, _better in rows:
        kw = med("kafka-wire", *path) if "kafka-wire" in brokers else float("nan")
        tn = med("tansu", *path) if peer else float("nan")
        ratio = f"{kw / tn:10.2f}" if peer and tn else ""
        print(f"{label:50}{kw:>14,.2f}{tn:>14,.2f}{ratio}")
    if peer and med("tansu", "fetch", "requests") < args.requests / 2:
        print("(Tansu answers a Fetch with many records whatever max.partition.fetch.bytes says: its "
              "Fetch figure is per request of many records, not comparable)")
    if args.java and peer:
        r = med("kafka-wire", "java", "msgs_per_s") / med("tansu", "java", "msgs_per_s")
        print(f"\nJava producer, kafka-wire / Tansu: {r:.2f} (goal >= 2.0: {'met' if r >= 2 else 'missed'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
