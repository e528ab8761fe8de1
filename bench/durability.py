"""Produce throughput and latency in each durability mode (docs/durability.md):
``kafka-wire serve --durability crash`` and ``--durability power-loss`` as
child processes on ephemeral ports, the same load for both, on this machine.

Two loads per mode, with confluent-kafka, acks=all:
* pipelined: one producer, 100-byte records, linger.ms=5, up to 10,000 in
  flight over 3 partitions: records/s (batches amortise each fsync);
* one at a time: each record waits for its acknowledgement before the next
  is sent: the per-request cost of the fsync (p50/p99 ms).
Group commits are timed too: synchronous OffsetCommit of 3 partitions, one
at a time (power-loss mode fsyncs the checkpoint store once per request).

Prints a table and writes bench/results/durability.json.

    python -m bench.durability [--records 100000] [--one-at-a-time 2000]
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_wire.testing.processes import stop_processes

RESULTS = Path(__file__).resolve().parent / "results" / "durability.json"


def _start(mode: str, data: Path, log_path: Path) -> tuple[subprocess.Popen, str]:
    log = open(log_path, "w+")
    proc = subprocess.Popen([sys.executable, "-m", "kafka_wire.cli", "serve", "--data-dir", str(data),
                             "--listen", "127.0.0.1:0", "--no-http", "--no-amqp", "--durability", mode],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        log.seek(0)
        m = re.search(r"bootstrap\.servers=(\S+)", log.read())
        if m:
            return proc, m.group(1)
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    stop_processes([proc])
    log.seek(0)
    raise RuntimeError(f"the broker did not start:\n{log.read()}")


def _pipelined(bootstrap: str, topic: str, n: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "queue.buffering.max.messages": 10_000})
    value = b"x" * 100
    errors = []
    start = time.perf_counter()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, partition=i % 3,
                          on_delivery=lambda err, _m: err is not None and errors.append(err))
                break
            except BufferError:
                p.poll(0.001)
        p.poll(0)
    p.flush(120)
    elapsed = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"{len(errors)} records failed, first: {errors[0]}")
    return n / elapsed


def _one_at_a_time(bootstrap: str, topic: str, n: int) -> list[float]:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    out = []
    for i in range(n):
        t = time.perf_counter()
        p.produce(topic, b"y" * 100, partition=i % 3)
        p.flush(30)
        out.append((time.perf_counter() - t) * 1000)
    return out


def _commits(bootstrap: str, topic: str, n: int) -> list[float]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-commits", "enable.auto.commit": False})
    out = []
    for i in range(n):
        t = time.perf_counter()
        c.commit(offsets=[TopicPartition(topic, p, i + 1) for p in range(3)], asynchronous=False)
        out.append((time.perf_counter() - t) * 1000)
    c.close()
    return out


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return round(s[min(len(s) - 1, int(q * (len(s) - 1)))], 3)


def run_mode(mode: str, records: int, single: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        proc, bootstrap = _start(mode, Path(tmp) / "data", Path(tmp) / "broker.log")
        try:
            admin = AdminClient({"bootstrap.servers": bootstrap})
            admin.create_topics([NewTopic("bench", 3, 1)])["bench"].result(30)
            _pipelined(bootstrap, "bench", min(records, 5000))  # warm up
            rate = _pipelined(bootstrap, "bench", records)
            lat = _one_at_a_time(bootstrap, "bench", single)
            commits = _commits(bootstrap, "bench", max(200, single // 4))
        finally:
            stop_processes([proc])
    return {"mode": mode, "records_per_s": round(rate), "records": records,
            "one_at_a_time_p50_ms": _pct(lat, 0.5), "one_at_a_time_p99_ms": _pct(lat, 0.99),
            "commit_p50_ms": _pct(commits, 0.5), "commit_p99_ms": _pct(commits, 0.99),
            "mean_one_at_a_time_ms": round(statistics.fmean(lat), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--one-at-a-time", type=int, default=2000)
    ap.add_argument("--quick", action="store_true", help="20,000 records, 500 one at a time")
    args = ap.parse_args()
    if args.quick:
        args.records, args.one_at_a_time = 20_000, 500
    rows = [run_mode(mode, args.records, args.one_at_a_time) for mode in ("crash", "power-loss")]
    print(f"{'mode':<11} {'records/s':>10} {'1-at-a-time p50':>16} {'p99':>8} {'commit p50':>11} {'p99':>8}")
    for r in rows:
        print(f"{r['mode']:<11} {r['records_per_s']:>10,} {r['one_at_a_time_p50_ms']:>13} ms "
              f"{r['one_at_a_time_p99_ms']:>5} ms {r['commit_p50_ms']:>8} ms {r['commit_p99_ms']:>5} ms")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                   "command": "make bench (python -m bench.durability)", "rows": rows},
                                  indent=2) + "\n")


if __name__ == "__main__":
    main()
