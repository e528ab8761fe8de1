"""Group join latency: time from ``subscribe()`` to assignment, confluent-kafka,
classic protocol (JoinGroup/SyncGroup).

A program, not a test: starts ``kafka-wire serve`` as a subprocess on an
ephemeral port (or uses ``--bootstrap``), creates a 6-partition topic, then
for each repetition uses a fresh group id:

- **one**: one consumer; seconds from ``subscribe()`` until its ``on_assign``
  callback delivers all 6 partitions;
- **three**: three consumers subscribe at the same moment (a barrier); seconds
  until every one holds its final share (2 partitions each, disjoint).

Prints the median (and min/max) of ``--repeat`` runs (default 5) and writes
JSON to bench/results/. Consumers use librdkafka's defaults (heartbeat
3 s, session 45 s, assignors range,roundrobin) unless ``--heartbeat-ms`` is
given; the broker's ``group.initial.rebalance.delay.ms`` is kafka-wire's 0
(Kafka's is 3000 ms).

    python -m bench.group_join [--repeat 5] [--bootstrap HOST:PORT] [--heartbeat-ms N]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer

from bench.run import create_topic
from kafka_wire.testing.ports import free_port
from kafka_wire.testing.processes import stop_processes

ROOT = Path(__file__).resolve().parent.parent
PARTITIONS = 6
TIMEOUT_S = 60.0



def start_broker(work: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    log = open(work / "broker.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "kafka_wire.cli", "--log-level", "WARNING",
                             "serve", "--data-dir", str(work / "data"),
                             "--listen", f"127.0.0.1:{port}", "--no-http", "--no-amqp"],
                            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited: {(work / 'broker.log').read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc, f"127.0.0.1:{port}"
        except OSError:
            time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    raise RuntimeError("broker did not listen within 30 s")


def stop_broker(proc: subprocess.Popen) -> None:
    stop_processes([proc], 20)


class Member:
    """A consumer on its own thread; records when its assignment changes."""

    def __init__(self, conf: dict, topic: str, start: threading.Barrier) -> None:
        self.conf, self.topic, self.start = conf, topic, start
        self.lock = threading.Lock()
        self.assignment: set[int] = set()
        self.assigned_at: float | None = None   # when the current assignment arrived
        self.subscribed_at: float | None = None
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _on_assign(self, consumer, partitions) -> None:
        with self.lock:
            self.assignment = {tp.partition for tp in partitions}
            self.assigned_at = time.monotonic()

    def _on_revoke(self, consumer, partitions) -> None:
        with self.lock:
            self.assignment = set()

    def _run(self) -> None:
        try:
            c = Consumer(self.conf)
            try:
                self.start.wait(TIMEOUT_S)
                self.subscribed_at = time.monotonic()
                c.subscribe([self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
                while not self.stop.is_set():
                    c.poll(0.01)
            finally:
                c.close()
        except BaseException as exc:
            self.error = exc

    def state(self) -> tuple[set[int], float | None]:
        with self.lock:
            return set(self.assignment), self.assigned_at


def join_seconds(bootstrap: str, topic: str, group: str, members: int,
                 heartbeat_ms: int | None) -> float:
    """Seconds from the common subscribe() until every member holds its final share."""
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False}
    if heartbeat_ms is not None:
        conf["heartbeat.interval.ms"] = heartbeat_ms
    barrier = threading.Barrier(members)
    group_members = [Member(dict(conf, **{"client.id": f"bench-{i}"}), topic, barrier)
                     for i in range(members)]
    share = PARTITIONS // members
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            for m in group_members:
                if m.error is not None:
                    raise m.error
            states = [m.state() for m in group_members]
            owned = [s for s, _t in states]
            if all(len(s) == share for s in owned) and \
                    set().union(*owned) == set(range(PARTITIONS)):
                start = min(m.subscribed_at for m in group_members)
                return max(t for _s, t in states) - start
            time.sleep(0.002)
        raise RuntimeError(f"{members} consumer(s) did not settle within {TIMEOUT_S} s")
    finally:
        for m in group_members:
            m.stop.set()
        for m in group_members:
            m.thread.join(30)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.group_join", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--bootstrap", help="use a running broker instead of starting one")
    parser.add_argument("--heartbeat-ms", type=int,
                        help="consumer heartbeat.interval.ms (default: librdkafka's 3000)")
    parser.add_argument("--no-json", action="store_true", help="do not write bench/results/")
    args = parser.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="bench-group-join-"))
    proc = None
    try:
        if args.bootstrap:
            bootstrap = args.bootstrap
        else:
            proc, bootstrap = start_broker(work)
        topic = f"group-join-{os.getpid()}"
        create_topic(bootstrap, topic, PARTITIONS)
        results: dict[str, list[float]] = {"one": [], "three": []}
        for i in range(args.repeat):
            for name, members in (("one", 1), ("three", 3)):
                results[name].append(join_seconds(bootstrap, topic, f"bench-{name}-{i}",
                                                  members, args.heartbeat_ms))
    finally:
        if proc is not None:
            stop_broker(proc)
        shutil.rmtree(work, ignore_errors=True)

    print(f"group join, confluent-kafka (librdkafka), classic protocol, {PARTITIONS} partitions, "
          f"heartbeat.interval.ms={args.heartbeat_ms or 'default (3000)'}, "
          f"median of {args.repeat}")
    labels = {"one": "1 consumer: subscribe() -> assigned 6 partitions",
              "three": "3 consumers together: subscribe() -> 2 partitions each"}
    for name, values in results.items():
        print(f"  {labels[name]:<58} median {statistics.median(values) * 1000:7.1f} ms   "
              f"(min {min(values) * 1000:.1f}, max {max(values) * 1000:.1f})")
    if not args.no_json:
        out = ROOT / "bench" / "results" / f"group-join-{time.strftime('%Y%m%d-%H%M%S')}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({
            "benchmark": "group_join", "partitions": PARTITIONS, "repeat": args.repeat,
            "heartbeat_interval_ms": args.heartbeat_ms, "seconds": results,
            "median_ms": {k: statistics.median(v) * 1000 for k, v in results.items()},
            "python": platform.python_version(), "cpus": os.cpu_count(),
        }, indent=2))
        print(f"  written to {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
