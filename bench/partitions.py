"""What ten thousand partitions cost a broker (issue 30, item 3): start-up time,
open descriptors and RSS idle, after touching every partition, and the produce
byte rate round robin over 1,000 partitions against one partition.

A program, not a test: ``kafka-wire serve`` runs as a child process (so the
descriptors and RSS are the broker's) with a TOML config declaring a Dedicated
namespace of 5 capacity units holding 9 hubs of 1,024 partitions and 196 hubs
of 4: 10,000 partitions. The first start creates them (not measured); each of
the ``--repeat`` runs then starts the broker on what a clean shutdown left,
measures it idle, writes one record to every partition, measures again,
produces with confluent-kafka to 1,000 partitions and to one (same run, the
order alternating), then kills it with SIGKILL and times a start after that
crash. Figures are medians of the runs; every produce checks its
acknowledgements. Beside the broker's CPU per GB it prints the producer's (this
process: the Python loop and librdkafka's threads), since both share the machine,
and the CPU of librdkafka's broker thread alone: it builds every request and
reads every answer, so its CPU per GB bounds the rate by itself. After the goal's
figures, an extra pair of produce runs (labelled, not the goal's) comes from a
producer that has not written to the 10,000 partitions: the same config, the
same broker, without librdkafka's per-partition work for the partitions it
wrote to in the touch.

Then, an extra too (labelled), the same two runs from the Java producer
(Kafka 4.3.0, tests/java/src/BenchPartitions.java, when a JDK and the jars are
there): it puts every ready partition in one Produce request, where librdkafka
sends one partition a request, so it shows what the broker sustains. Its JIT
settles first (untimed), every acknowledgement is checked (the next offset of
its partition), and beside the broker's CPU per GB it prints the JVM's, its
busiest thread's share of the time (client-bound at 85 %) and the machine's busy
cores (saturated at 90 %). ``--client confluent`` or ``java`` runs one of them.

Before each pair of produce runs the broker's files are written back and
dropped from the page cache (``--keep-page-cache``: not): on this VM, writing
into memory the guest has not used lately costs ten times the CPU per byte, and
a broker that had written 5 GB paid it on every later run.

``--produce-only`` skips the start-up, idle and kill -9 measurements: one broker,
``--repeat`` rounds of the two produce runs (each round's order alternating).
``--against TREE`` runs the same broker from another checkout (for example
``git worktree add /tmp/before <commit>``) in alternation and prints both.

    python -m bench.partitions [--repeat 3] [--messages 100000] [--size 1024]
    python -m bench.partitions --produce-only --repeat 6 --against /tmp/before
    python -m bench.partitions --produce-only --client java --java-set linger.ms=50
"""
from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer

from bench.run import wait_api_versions
from bench.small_events import BUSY, kernel_threads_s, load, machine_busy_s, parse_result
from kafka_wire.log.handles import IDLE_CLOSE_S
from kafka_wire.testing.ports import free_port
from kafka_wire.testing.processes import stop_processes

ROOT = Path(__file__).resolve().parent.parent
BIG_HUBS, BIG_PARTITIONS = 9, 1024  # Event Hubs Dedicated's largest hub
SMALL_HUBS, SMALL_PARTITIONS = 196, 4
TOTAL = BIG_HUBS * BIG_PARTITIONS + SMALL_HUBS * SMALL_PARTITIONS  # 10,000
SPREAD = 1000  # partitions the round-robin producer writes to
RECYCLE_BYTES = 1 << 20  # files smaller on disk are left cached (recycle_page_cache)
CLK_TCK = os.sysconf("SC_CLK_TCK")
LIMITS = {"startup_s": 2.0, "fds": 1024, "rss_mb": 150.0}


def config_text() -> str:
    lines = ['default_namespace = "bigpartitions"', "", "[namespaces.bigpartitions]", 'tier = "Dedicated"',
             "capacity_units = 5", ""]
    for i in range(BIG_HUBS):
        lines += [f"[namespaces.bigpartitions.eventhubs.wide{i}]", f"partitions = {BIG_PARTITIONS}", ""]
    for i in range(SMALL_HUBS):
        lines += [f"[namespaces.bigpartitions.eventhubs.small{i:03d}]", f"partitions = {SMALL_PARTITIONS}", ""]
    return "\n".join(lines)


def usage(pid: int) -> tuple[int, float]:
    """(open descriptors, RSS in MB) of process ``pid``."""
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    rss = next(int(line.split()[1]) for line in open(f"/proc/{pid}/status") if line.startswith("VmRSS"))
    return fds, rss / 1024


class Broker:
    def __init__(self, work: Path, tree: Path = ROOT):
        self.work = work
        self.tree = tree  # the checkout whose kafka-wire serves
        self.config = work / "big.toml"
        self.config.write_text(config_text())
        self.proc: subprocess.Popen | None = None
        self.port = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> float:
        """Start it; seconds until it answers ApiVersions."""
        self.port = free_port()
        cmd = [sys.executable, "-m", "kafka_wire.cli", "--log-level", "WARNING", "serve",
               "--config", str(self.config), "--data-dir", str(self.work / "data"),
               "--listen", self.bootstrap, "--no-http", "--no-amqp"]
        t0 = time.monotonic()
        env = dict(os.environ, PYTHONPATH=str(self.tree))
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(self.work / "stderr.log", "ab"),
                                     cwd=self.tree, env=env)
        wait_api_versions("127.0.0.1", self.port, timeout=120)
        return time.monotonic() - t0

    def usage(self) -> tuple[int, float]:
        return usage(self.proc.pid)

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK

    def stop(self) -> None:
        stop_processes([self.proc], 120)
        if self.proc.returncode not in (0, -signal.SIGTERM):
            raise RuntimeError(f"the broker exited with {self.proc.returncode}: see {self.work}/stderr.log")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)


def thread_cpu_s() -> dict[str, float]:
    """CPU seconds of this process's threads by name: ``python`` (the produce loop, delivery
    callbacks) and librdkafka's ``rdk:broker<id>`` (builds every request, reads every answer:
    one thread per broker connection, so its CPU per GB bounds the rate on its own)."""
    out: dict[str, float] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            name = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / CLK_TCK
    return out


RECYCLE = True  # --keep-page-cache: off


def recycle_page_cache(data: Path) -> None:
    """Write back and drop the cached pages of the broker's files (``data``), so that the next
    run writes into memory the guest has used before. On this VM, writing into page cache the
    guest has not touched lately costs about ten times the CPU (0.24 s per GB of pwrite, then
    2.3 s per GB once 5 to 6 GB were written; the guest hands idle memory back to its host),
    which tripled the broker's CPU per GB in the later runs of one broker (1.45 -> 4.2 s), both
    ways at once. Called before each pair's untimed records, which read back the last pages.
    Only files holding at least RECYCLE_BYTES on disk: the produce runs' segments. Dropping
    every partition's files made the next start's write to each of the 10,000 partitions read
    them all back from disk (22 s against 4.5)."""
    if not RECYCLE:
        return
    os.sync()
    for path in data.rglob("*"):
        try:
            if path.stat().st_blocks * 512 < RECYCLE_BYTES:
                continue
            fd = os.open(path, os.O_RDONLY)
        except OSError:  # gone meanwhile
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # mapped pages stay: no harm
        finally:
            os.close(fd)


def producer(bootstrap: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 1_000_000,
                     "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
                     "compression.type": "none", "enable.idempotence": False})


def send(p: Producer, items, value: bytes) -> float:
    """Produce ``value`` to each (topic, partition) in ``items``; seconds until all are acknowledged."""
    errors: list = []
    acked = [0]

    def cb(err, _msg):
        if err is not None:
            errors.append(err)
        else:
            acked[0] += 1

    n = 0
    start = time.perf_counter()
    for topic, partition in items:
        while True:
            try:
                p.produce(topic, value, partition=partition, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.005)
        n += 1
    left = p.flush(300)
    elapsed = time.perf_counter() - start
    if errors or left or acked[0] != n:
        raise RuntimeError(f"produce failed: {len(errors)} errors, {left} unflushed, {acked[0]}/{n}: {errors[:3]}")
    return elapsed


def every_partition():
    for i in range(BIG_HUBS):
        for p in range(BIG_PARTITIONS):
            yield f"wide{i}", p
    for i in range(SMALL_HUBS):
        for p in range(SMALL_PARTITIONS):
            yield f"small{i:03d}", p


def produce_runs(b: Broker, p: Producer, run: int, messages: int, size: int) -> dict:
    """Round robin over SPREAD partitions and one partition, the order alternating by ``run``:
    byte rates, their ratio, and CPU s per GB of the broker and of this process (the producer)."""
    recycle_page_cache(b.work / "data")
    value = os.urandom(size)
    wide = [(f"wide{run % BIG_HUBS}", i % SPREAD) for i in range(messages)]
    one = [(f"wide{(run + 1) % BIG_HUBS}", 0)] * messages
    send(p, wide[:SPREAD * 2], value)  # connections, metadata and partitions warm for both
    send(p, one[:1000], value)
    out = {}
    gb = messages * size / 1e9
    for name, items in (("spread", wide), ("one", one)) if run % 2 == 0 else (("one", one), ("spread", wide)):
        cpu0, client0, threads0 = b.cpu_s(), time.process_time(), thread_cpu_s()
        out[f"mb_s_{name}"] = messages * size / send(p, items, value) / 1e6
        out[f"cpu_gb_{name}"] = (b.cpu_s() - cpu0) / gb
        out[f"client_cpu_gb_{name}"] = (time.process_time() - client0) / gb
        threads = thread_cpu_s()
        out[f"rdk_cpu_gb_{name}"] = sum(v - threads0.get(k, 0.0) for k, v in threads.items()
                                        if k.startswith("rdk:broker")) / gb
    out["ratio"] = out["mb_s_spread"] / out["mb_s_one"]
    return out


def one_run(b: Broker, run: int, messages: int, size: int, confluent: bool = True, java=None) -> dict:
    """One start of the broker; ``java``: a Java runner, for the Java producer's extra figures."""
    out = {"startup_s": b.start()}
    time.sleep(1.0)  # idle: whatever start-up left running has settled
    out["fds_idle"], out["rss_idle"] = b.usage()
    p = producer(b.bootstrap)
    # Metadata for the 205 hubs first: not part of the touch's time.
    p.list_topics(timeout=60)
    out["touch_s"] = send(p, every_partition(), b"t")
    out["fds_touched"], out["rss_touched"] = b.usage()
    if confluent:
        out.update(produce_runs(b, p, run, messages, size))
    out["fds_after_produce"], out["rss_after_produce"] = b.usage()
    del p
    if confluent:
        # Not the goal's figure: the same runs from a producer that has not written to the
        # 10,000 partitions (same config). librdkafka's broker thread visits every partition
        # it has produced to, so the touch above multiplies its CPU per GB on the spread run.
        fresh = producer(b.bootstrap)
        fresh.list_topics(timeout=60)
        out.update({f"fresh_{k}": v for k, v in produce_runs(b, fresh, run, messages, size).items()})
        del fresh
    if java is not None:  # an extra too: what the broker sustains with many partitions a request
        out["load_java"] = float(load().split()[0])
        out.update(java_produce_runs(java, b, run, messages, size))
    time.sleep(IDLE_CLOSE_S + 3)  # the log flusher closes idle files about once a second
    out["fds_idle_after"], out["rss_idle_after"] = b.usage()
    b.kill()  # a crash: the next start recovers nothing until a partition is used
    out["startup_after_kill_s"] = b.start()
    time.sleep(1.0)
    out["fds_after_kill"], out["rss_after_kill"] = b.usage()
    b.stop()
    return out


# The Java producer (Kafka 4.3.0, tests/java/src/BenchPartitions.java), an extra beside the goal's
# librdkafka figures: it drains every ready partition of a broker into one Produce request (up to
# max.request.size), where librdkafka sends one partition a request, so it shows what the broker
# sustains over 1,000 partitions. acks=all and no idempotence or compression, as above. Its
# batches are per partition and take batch.size from buffer.memory each when opened: 1,000 open
# batches of 64 KiB fit 128 MiB (otherwise the pool runs dry and every send waits on it).
JAVA_PRODUCER = {"acks": "all", "enable.idempotence": "false", "compression.type": "none",
                 "linger.ms": 5, "batch.size": 65_536, "buffer.memory": 134_217_728,
                 "max.in.flight.requests.per.connection": 5, "max.request.size": 1_048_576,
                 "delivery.timeout.ms": 300_000, "request.timeout.ms": 60_000}
JAVA_WARM = 200_000  # untimed records at least, each way, before the JIT has settled
JAVA_LEAST = 100_000  # records a timed Java run takes at least (see java_produce_runs)
# C2, unlike bench.small_events' 100 B producer (C1 only, since C2 never settled there): with
# 1 KiB records C2 settles (0-0.2 s of compiling in a timed run) and costs the JVM 2.7 / 1.7 s
# per GB (1,000 partitions / one) against C1's 4.8 / 2.9, so more of the two cores is left
# to the broker. The same heap as bench.small_events.
JAVA_JVM_ARGS = ("-XX:TieredStopAtLevel=4", "-Xms1g", "-Xmx1g", "-Xmn512m")


def java_runner():
    """The compiled Java programs, or None (and why, to stderr) without a JDK or the jars."""
    from tests.java.harness import JavaUnavailable, compile_sources
    try:
        return compile_sources(log=lambda s: None)
    except JavaUnavailable as exc:  # a compile error is not a skip: it raises
        print(f"bench.partitions: no Java producer figures: {exc}", file=sys.stderr)
        return None


def java_produce_runs(runner, b: Broker, run: int, messages: int, size: int) -> dict:
    """As produce_runs, from one Java producer (JIT settled on both ways first, untimed), plus
    whether a run was client-bound (its busiest thread busy >= BUSY of the time) or the machine
    saturated (>= 90 % of its cores busy: broker, client, kernel and anything else)."""
    spread_topic, one_topic = f"wide{(run + 2) % BIG_HUBS}", f"wide{(run + 3) % BIG_HUBS}"
    recycle_page_cache(b.work / "data")
    # At least 100,000 records a run: --quick's 30,000 take the JVM about 0.1 s, too short a
    # window for its first batches' linger and its 100 Hz CPU clock (ratios 0.37-0.42 then).
    messages = max(messages, JAVA_LEAST)
    proc = runner.start("BenchPartitions", b.bootstrap, spread_topic, str(SPREAD), one_topic, str(JAVA_WARM),
                        str(messages), str(size), *(f"{k}={v}" for k, v in JAVA_PRODUCER.items()),
                        jvm_args=JAVA_JVM_ARGS)
    out: dict = {}
    gb = messages * size / 1e9
    try:
        if not proc.wait_for(lambda line: line.startswith("WARM"), timeout=300).endswith(" 1"):
            raise RuntimeError(f"the Java producer's untimed records were not all acknowledged in order: {proc.stdout}")
        for name in ("spread", "one") if run % 2 == 0 else ("one", "spread"):
            kernel0, busy0 = kernel_threads_s(), machine_busy_s()
            cpu0, wall0 = b.cpu_s(), time.monotonic()
            proc.send(name)
            res = parse_result(proc.wait_for(lambda line: line.startswith("RESULT"), timeout=600))
            broker, wall = b.cpu_s() - cpu0, time.monotonic() - wall0
            machine, kernel = machine_busy_s() - busy0, kernel_threads_s() - kernel0
            if not res["verified"]:
                raise RuntimeError(f"the Java producer's {name} run was not all acknowledged in order: {res['detail']}")
            busiest = res["busiest_thread_cpu_s"] / res["seconds"]
            out.update({f"java_mb_s_{name}": messages * size / res["seconds"] / 1e6,
                        f"java_cpu_gb_{name}": broker / gb,
                        f"java_client_cpu_gb_{name}": res["cpu_s"] / gb,
                        f"java_busiest_{name}": busiest,
                        f"java_main_thread_{name}": float(res["detail"].split("main_thread=")[1].split(",")[0]),
                        f"java_machine_cores_{name}": machine / wall,
                        f"java_kernel_cores_{name}": kernel / wall,
                        f"java_client_bound_{name}": float(busiest >= BUSY),
                        f"java_saturated_{name}": float(machine / wall >= 0.9 * (os.cpu_count() or 1))})
            print(f"  java {name}: busiest thread {res['busiest_thread']} {busiest:.0%}, jit {res['jit_s']:.2f} s, "
                  f"{res['detail']}", flush=True)
        proc.send("quit")
        proc.wait(60)
    finally:
        proc.kill()
    out["java_ratio"] = out["java_mb_s_spread"] / out["java_mb_s_one"]
    return out


PRODUCE_FIGURES = [
    ("mb_s_spread", f"produce MB/s, round robin over {SPREAD} partitions"),
    ("mb_s_one", "produce MB/s, one partition"),
    ("cpu_gb_spread", f"broker CPU s per GB, {SPREAD} partitions"),
    ("cpu_gb_one", "broker CPU s per GB, one partition"),
    ("client_cpu_gb_spread", f"producer CPU s per GB, {SPREAD} partitions"),
    ("client_cpu_gb_one", "producer CPU s per GB, one partition"),
    ("rdk_cpu_gb_spread", f"... its librdkafka broker thread, {SPREAD} partitions"),
    ("rdk_cpu_gb_one", "... its librdkafka broker thread, one partition"),
    ("ratio", f"{SPREAD}-partition / 1-partition byte rate"),
]
JAVA_FIGURES = [
    ("java_mb_s_spread", f"Java producer: MB/s, round robin over {SPREAD}"),
    ("java_mb_s_one", "  MB/s, one partition"),
    ("java_cpu_gb_spread", f"  broker CPU s per GB, {SPREAD} partitions"),
    ("java_cpu_gb_one", "  broker CPU s per GB, one partition"),
    ("java_client_cpu_gb_spread", f"  producer JVM CPU s per GB, {SPREAD} partitions"),
    ("java_client_cpu_gb_one", "  producer JVM CPU s per GB, one partition"),
    ("java_busiest_spread", f"  busiest producer thread's share, {SPREAD}"),
    ("java_busiest_one", "  busiest producer thread's share, one"),
    ("java_main_thread_spread", f"  sending thread's share, {SPREAD}"),
    ("java_main_thread_one", "  sending thread's share, one"),
    ("java_machine_cores_spread", f"  machine busy cores (of {os.cpu_count()}), {SPREAD}"),
    ("java_machine_cores_one", f"  machine busy cores (of {os.cpu_count()}), one"),
    ("java_ratio", f"  {SPREAD}-partition / 1-partition byte rate"),
]


def java_bound_lines(runs: list[dict]) -> list[str]:
    """How many Java runs were client-bound or ran on a saturated machine."""
    if not runs or "java_ratio" not in runs[0]:
        return []
    return [f"  {what} runs ({SPREAD} / one): "
            f"{sum(r[f'java_{key}_spread'] for r in runs):.0f} / {sum(r[f'java_{key}_one'] for r in runs):.0f} "
            f"of {len(runs)}"
            for what, key in ((f"client-bound (busiest thread >= {BUSY:.0%})", "client_bound"),
                              ("machine-saturated (>= 90 % of the cores)", "saturated"))]


def produce_only(trees: list[Path], repeat: int, messages: int, size: int, confluent: bool = True,
                 java=None) -> None:
    """``repeat`` rounds of the produce runs on a broker from each tree, alternating: confluent-kafka's
    and (with a Java runner) the Java producer's."""
    with tempfile.TemporaryDirectory(prefix="bench-partitions-") as tmp:
        brokers, producers = [], []
        try:
            for n, tree in enumerate(trees):
                work = Path(tmp) / str(n)
                work.mkdir()
                brokers.append(Broker(work, tree))
                brokers[-1].start()
                if confluent:
                    producers.append(producer(brokers[-1].bootstrap))
                    producers[-1].list_topics(timeout=60)
            runs: dict = {tree: [] for tree in trees}
            for r in range(repeat):
                for n, tree in enumerate(trees):
                    out = {"load": float(load().split()[0])}
                    if confluent:
                        out.update(produce_runs(brokers[n], producers[n], r, messages, size))
                    if java is not None:
                        out.update(java_produce_runs(java, brokers[n], r, messages, size))
                    runs[tree].append(out)
                    print(f"round {r + 1} {tree}: " + ", ".join(f"{k} {v:.3g}" for k, v in runs[tree][-1].items()),
                          flush=True)
        finally:
            producers.clear()  # before their brokers go
            for b in brokers:
                if b.proc is not None:
                    b.stop()
    med = {tree: {k: statistics.median(run[k] for run in runs[tree]) for k in runs[tree][0]} for tree in trees}
    java_part = f" ({max(messages, JAVA_LEAST)} for the Java producer's)" if java is not None else ""
    print(f"\nmedians of {repeat} rounds, {messages} x {size} B per produce run{java_part}; "
          "the broker from each tree in turn")
    print(f"{'figure':<50} " + " ".join(f"{str(t)[-18:]:>18}" for t in trees) + ("   ratio" if len(trees) > 1 else ""))
    for key, name in PRODUCE_FIGURES + JAVA_FIGURES + [("load", "1-minute load average at the start")]:
        if key not in med[trees[0]]:
            continue
        values = [med[t][key] for t in trees]
        line = f"{name:<50} " + " ".join(
            f"{v:>10.4g} ({min(r[key] for r in runs[t]):.3g}-{max(r[key] for r in runs[t]):.3g})"
            for t, v in zip(trees, values))
        if len(trees) > 1:
            line += f" {values[0] / values[1]:>7.2f}"
        print(line)
    for t in trees:
        for line in java_bound_lines(runs[t]):
            print(f"{line} [{str(t)[-18:]}]")
    print(f"(goal: the {SPREAD}-partition / 1-partition byte rate at least 0.70, confluent-kafka's)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--messages", type=int, default=100_000, help="records per produce run (default 100000)")
    ap.add_argument("--size", type=int, default=1024, help="record value bytes (default 1024)")
    ap.add_argument("--quick", action="store_true", help="one run of 30000 records")
    ap.add_argument("--produce-only", action="store_true",
                    help="only the two produce runs, --repeat rounds on one broker (no start-up, idle or kill -9)")
    ap.add_argument("--against", type=Path,
                    help="with --produce-only: another checkout's broker, measured in alternation")
    ap.add_argument("--client", choices=("both", "confluent", "java"), default="both",
                    help="which producers: confluent-kafka (the goal's figures), the Java producer (an extra, "
                         "when a JDK and the jars are there) or both (default)")
    ap.add_argument("--java-set", action="append", default=[], metavar="KEY=VALUE",
                    help="a Java producer setting instead of JAVA_PRODUCER's (repeatable)")
    ap.add_argument("--keep-page-cache", action="store_true",
                    help="no sync and drop of the broker's cached pages before each pair of produce runs")
    args = ap.parse_args()
    global RECYCLE
    RECYCLE = not args.keep_page_cache
    JAVA_PRODUCER.update(kv.split("=", 1) for kv in args.java_set)
    if args.quick:
        args.repeat, args.messages = 1, 30_000
    if args.against and not args.produce_only:
        ap.error("--against needs --produce-only")
    confluent = args.client != "java"
    java = java_runner() if args.client != "confluent" else None
    if args.produce_only:
        produce_only([ROOT] + ([args.against.resolve()] if args.against else []), args.repeat, args.messages,
                     args.size, confluent, java)
        return
    with tempfile.TemporaryDirectory(prefix="bench-partitions-") as tmp:
        b = Broker(Path(tmp))
        created = b.start()
        b.stop()
        print(f"{TOTAL} partitions ({BIG_HUBS} hubs x {BIG_PARTITIONS} + {SMALL_HUBS} hubs x {SMALL_PARTITIONS}); "
              f"first start (creating them) {created:.2f} s")
        runs = []
        for r in range(args.repeat):
            runs.append(one_run(b, r, args.messages, args.size, confluent, java))
            print(f"run {r + 1}: " + ", ".join(f"{k} {v:.3g}" for k, v in runs[-1].items()), flush=True)
    med = {k: statistics.median(run[k] for run in runs) for k in runs[0]}
    rows = [
        ("start-up (s), after a clean shutdown", "startup_s", LIMITS["startup_s"], "max"),
        ("start-up (s), after kill -9", "startup_after_kill_s", LIMITS["startup_s"], "max"),
        ("open descriptors, idle after start", "fds_idle", LIMITS["fds"], "max"),
        ("RSS MB, idle after start", "rss_idle", LIMITS["rss_mb"], "max"),
        (f"open descriptors, just after writing all {TOTAL}", "fds_touched", None, ""),
        (f"RSS MB, after writing all {TOTAL}", "rss_touched", LIMITS["rss_mb"], "max"),
        (f"seconds to write 1 record to each of {TOTAL}", "touch_s", None, ""),
        ("open descriptors, just after the produce runs", "fds_after_produce", None, ""),
        (f"open descriptors, idle {IDLE_CLOSE_S + 3:g} s after them", "fds_idle_after", LIMITS["fds"], "max"),
        (f"RSS MB, idle {IDLE_CLOSE_S + 3:g} s after them", "rss_idle_after", LIMITS["rss_mb"], "max"),
        ("open descriptors, idle after kill -9 + start", "fds_after_kill", LIMITS["fds"], "max"),
        ("RSS MB, idle after kill -9 + start", "rss_after_kill", LIMITS["rss_mb"], "max"),
        (f"produce MB/s, round robin over {SPREAD} partitions", "mb_s_spread", None, ""),
        ("produce MB/s, one partition", "mb_s_one", None, ""),
        (f"broker CPU s per GB, {SPREAD} partitions", "cpu_gb_spread", None, ""),
        ("broker CPU s per GB, one partition", "cpu_gb_one", None, ""),
        (f"producer CPU s per GB, {SPREAD} partitions", "client_cpu_gb_spread", None, ""),
        ("producer CPU s per GB, one partition", "client_cpu_gb_one", None, ""),
        (f"... its librdkafka broker thread, {SPREAD} partitions", "rdk_cpu_gb_spread", None, ""),
        ("... its librdkafka broker thread, one partition", "rdk_cpu_gb_one", None, ""),
        (f"{SPREAD}-partition / 1-partition byte rate", "ratio", 0.70, "min"),
        ("extra, not the goal's figure: the same from a producer", "fresh_ratio", None, "head"),
        (f"  that has not written to all {TOTAL}: MB/s over {SPREAD}", "fresh_mb_s_spread", None, ""),
        ("  MB/s to one partition", "fresh_mb_s_one", None, ""),
        (f"  producer CPU s per GB over {SPREAD}", "fresh_client_cpu_gb_spread", None, ""),
        (f"  ... its librdkafka broker thread, {SPREAD} partitions", "fresh_rdk_cpu_gb_spread", None, ""),
        (f"  broker CPU s per GB over {SPREAD}", "fresh_cpu_gb_spread", None, ""),
        (f"  {SPREAD}-partition / 1-partition byte rate", "fresh_ratio", None, ""),
    ]
    rows += [("extra, not the goal's figure: the same from the Java producer (many partitions a request)",
              "java_ratio", None, "head")]
    rows += [(name, key, None, "") for key, name in JAVA_FIGURES]
    print(f"\nmedians of {len(runs)} runs, {args.messages} x {args.size} B per produce run")
    print(f"{'figure':<50} {'value':>9} {'limit':>8} {'ratio':>7}  goal")
    for name, key, limit, kind in rows:
        if key not in med:  # a producer not run (--client)
            continue
        value = med[key]
        if kind == "head":
            print(name)
        elif limit is None:
            spread = f"  ({min(r[key] for r in runs):.4g}-{max(r[key] for r in runs):.4g})" if len(runs) > 1 else ""
            print(f"{name:<50} {value:>9.4g}{spread}")
        else:
            ok = value <= limit if kind == "max" else value >= limit
            print(f"{name:<50} {value:>9.4g} {limit:>8g} {value / limit:>7.2f}  {'met' if ok else 'MISSED'}")
    for line in java_bound_lines(runs):
        print(line)
    if "load_java" in med:
        print(f"  1-minute load average before the Java runs: {med['load_java']:.2f} "
              f"({min(r['load_java'] for r in runs):.2f}-{max(r['load_java'] for r in runs):.2f})")


if __name__ == "__main__":
    main()
