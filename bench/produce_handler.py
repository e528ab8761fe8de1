"""CPU of the Produce handler alone (issue 30, small requests and many partitions): an
in-process broker, a real request captured from a client, then the handler called on it
again and again, timed with the calling thread's CPU clock (the machine's other load
moves it far less than wall time or the broker's CPU in a whole-broker bench).

Three kinds of request: ``small``, one 100 B record to one partition (what librdkafka sends
with linger.ms=0, one partition a request), ``multi``, one 1 KiB record to each of 958
partitions of a Dedicated hub in one request (what kafka-python and the Java producer
send when many partitions are ready), and ``spread``, every request librdkafka (client
defaults) sends for 30,000 × 1 KiB records round robin over 1,000 partitions, as in
bench.partitions (one partition a request, tens of records each), the handler called on
each in turn. Every call appends for real, to the log on disk.

    python -m bench.produce_handler [--repeat 5] [--against /path/to/other/tree]

``--against`` runs the same measurement on another checkout (for example
``git worktree add /tmp/before <commit>``) in alternation, and prints the ratio.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CALLS = {"small": 20_000, "multi": 60, "spread": 1}  # spread: passes over the captured requests
SPREAD_RECORDS, SPREAD_PARTITIONS = 30_000, 1000
CONFIG = """default_namespace = "handlerbench"
[namespaces.handlerbench]
tier = "Dedicated"
capacity_units = 1
[namespaces.handlerbench.eventhubs.wide]
partitions = 1024
[namespaces.handlerbench.eventhubs.one]
partitions = 1
"""


def child(mode: str, calls: int) -> None:
    """In the tree on sys.path: print the handler's median µs per call over 5 rounds."""
    import dataclasses
    import gc
    import tempfile
    import time

    from kafka_wire.apis import registry
    from kafka_wire.testing import EmulatedBroker

    work = Path(tempfile.mkdtemp(prefix="bench-handler-"))
    (work / "ns.toml").write_text(CONFIG)
    captured = []
    with EmulatedBroker(work / "data", config_file=work / "ns.toml") as b:
        registry.load_all()
        reg = registry.lookup(0)

        def grab(request, ctx, handler=reg.handler):
            parts = sum(len(t.partition_data) for t in request.topic_data)
            if mode == "spread" and parts and request.topic_data[0].name == "wide" or \
                    mode != "spread" and not captured and parts >= (1 if mode == "small" else 900):
                for t in request.topic_data:  # the frame's buffer is reused: keep copies
                    for pd in t.partition_data:
                        pd.records = bytearray(pd.records)
                captured.append((request, ctx, parts))
            return handler(request, ctx)

        registry._REGISTRY[0] = dataclasses.replace(reg, handler=grab)
        if mode == "small":
            from confluent_kafka import Producer
            p = Producer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 0,
                          "batch.num.messages": 1, "enable.idempotence": False})
            for _ in range(10):
                p.produce("one", b"x" * 100)
            if p.flush(30):
                raise RuntimeError("the producer did not finish")
        elif mode == "spread":
            from confluent_kafka import Producer
            p = Producer({"bootstrap.servers": b.bootstrap_servers})  # client defaults, as a user has them
            p.list_topics(timeout=30)
            value = os.urandom(1024)
            for i in range(SPREAD_RECORDS):
                while True:
                    try:
                        p.produce("wide", value, partition=i % SPREAD_PARTITIONS)
                        break
                    except BufferError:
                        p.poll(0.005)
            if p.flush(60):
                raise RuntimeError("the producer did not finish")
        else:
            from kafka import KafkaProducer
            p = KafkaProducer(bootstrap_servers=b.bootstrap_servers, linger_ms=60_000, batch_size=1 << 20)
            p.partitions_for("wide")
            for i in range(958):
                p.send("wide", os.urandom(1024), partition=i)
            p.flush(60)
            p.close()
        registry._REGISTRY[0] = reg
        if not captured:
            raise RuntimeError(f"no {mode} request was captured")
        handler, clock = reg.handler, time.thread_time
        rounds = []
        gc.disable()
        if mode == "spread":  # µs per request, each request one partition
            parts = 1
            for _ in range(5):
                t0 = clock()
                for _ in range(calls):
                    for request, ctx, _parts in captured:
                        handler(request, ctx)
                rounds.append((clock() - t0) / (calls * len(captured)) * 1e6)
        else:
            request, ctx, parts = captured[0]
            for _ in range(5):
                t0 = clock()
                for _ in range(calls):
                    handler(request, ctx)
                rounds.append((clock() - t0) / calls * 1e6)
        gc.enable()
    shutil.rmtree(work, ignore_errors=True)  # the spread runs write hundreds of MB
    print(f"{statistics.median(rounds)} {parts}")


def measure(tree: Path, mode: str) -> tuple[float, int]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", mode], cwd=tree, env=env,
                         capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(f"{tree}: {out.stderr[-2000:]}")
    us, parts = out.stdout.split()[-2:]
    return float(us), int(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="alternating rounds (each a median of 5)")
    ap.add_argument("--against", type=Path, help="another checkout, measured in alternation")
    ap.add_argument("--child", choices=sorted(CALLS), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, CALLS[args.child])
        return 0
    trees = [ROOT] + ([args.against.resolve()] if args.against else [])
    results: dict = {}
    for _ in range(args.repeat):
        for tree in trees:
            for mode in CALLS:
                results.setdefault((tree, mode), []).append(measure(tree, mode))
    print(f"Produce handler CPU (thread time), medians of {args.repeat} alternating rounds")
    print(f"{'request':<40} {'this tree':>12} {'--against':>12} {'ratio':>7}")
    for mode in CALLS:
        parts = results[(ROOT, mode)][0][1]
        here = statistics.median(us for us, _ in results[(ROOT, mode)]) / parts
        label = f"{mode}: µs per partition ({parts}/request)"
        if args.against:
            there = statistics.median(us for us, _ in results[(trees[1], mode)]) / parts
            print(f"{label:<40} {here:>12.2f} {there:>12.2f} {here / there:>7.2f}")
        else:
            print(f"{label:<40} {here:>12.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
