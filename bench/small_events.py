"""100-byte produce and consume, kafka-wire beside Tansu, driven by the Java client.

A program, not a test (``python -m bench.small_events [--repeat N] [--quick]
[--clients 1,2]``). bench.run measures 100 B records with confluent-kafka's
Python client, which is the bound there for both brokers; this one drives them
with the Kafka 4.3.0 Java client (tests/java/src/BenchSmallEvents.java, built
by tests/java/harness.py) to see what each broker sustains.

Per round, brokers alternating (the order flipped every round, so neither
always runs first): a fresh broker, one topic with a partition per client
instance. Every producer instance sends at least ``--warm`` records untimed
(more while its JIT still compiles), then all start together and each sends
``--count`` records to its own partition; then as many consumer instances read
their partition (the untimed part first, until their JIT settles, then the
``--count`` records timed). Each instance checks that every record was
acknowledged, or read, once and in offset order, with the right size, so a
broker that drops data fails the run instead of winning it.

Figures: msg/s (all instances' records over the slowest instance's time), the
broker's CPU (/proc, all its threads) and the clients' CPU (each JVM's own
reading over the timed window, JIT and GC included) per message, the busiest
client thread's share of the wall time (near 100 %: that thread, not the
broker, set the rate), and the whole machine's busy cores over the window:
broker and clients share its cores with the kernel and with whatever else
runs, which the "kernel threads" and "anything else" rows show (the latter:
other programs, and interrupt time such as loopback TCP's).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from bench.run import CLK_TCK, ROOT, create_topic, start_broker, tansu_binary

# acks=1: both brokers keep one replica, so acks=all would wait for nothing more; without
# idempotence (which acks=1 requires) neither broker keeps producer-id state. 256 KiB
# batches and 5 ms linger: whole batches at these rates. No compression; random values.
# buffer.memory 8 MiB (default 32): more only queues more records, each holding a callback
# and a future the young GC copies (64 MiB: 0.2 s pauses, 1.3 M/s instead of 1.5 M/s).
PRODUCER = {"acks": "1", "enable.idempotence": "false", "batch.size": 262_144, "linger.ms": 5,
            "compression.type": "none", "max.in.flight.requests.per.connection": 5,
            "buffer.memory": 8_388_608, "delivery.timeout.ms": 120_000, "request.timeout.ms": 30_000}
# By assignment, no group. 4 MiB a partition per fetch (the default 1 MiB means a Fetch
# every ~9,000 records); 10,000 records a poll; CRCs checked, as by default.
CONSUMER = {"max.partition.fetch.bytes": 4_194_304, "fetch.max.bytes": 52_428_800,
            "fetch.min.bytes": 1, "fetch.max.wait.ms": 500, "max.poll.records": 10_000,
            "check.crcs": "true", "enable.auto.commit": "false", "auto.offset.reset": "none"}
# A young generation big enough that collections are rare (serial GC, as the harness has).
# The producer keeps the harness's C1-only JIT: under C2 it never settled (30 s of warm-up
# records and still 0.2-3.4 s of compiling in a 2-3 s timed window, 0.97-1.85 M msg/s from
# run to run); C1 settles within ~2 s. The consumer settles under C2 too and reads ~1.8x
# faster with it than with C1.
JVM_ARGS = {"produce": ("-XX:TieredStopAtLevel=1", "-Xms1g", "-Xmx1g", "-Xmn512m"),
            "consume": ("-XX:TieredStopAtLevel=4", "-Xms1g", "-Xmx1g", "-Xmn512m")}
SIZE = 100
BUSY = 0.85  # busiest client thread's share of the wall at which the run counts as client-bound


def load() -> str:
    """The 1, 5 and 15 minute load averages: another agent may be benchmarking too."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def machine_busy_s() -> float:
    """CPU seconds all cores spent busy since boot (/proc/stat): broker, clients, the kernel
    (interrupts, writeback) and whatever else runs on the machine."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    return (sum(fields) - fields[3] - fields[4]) / CLK_TCK  # all but idle and iowait


def kernel_threads_s() -> float:
    """CPU seconds of the kernel's own threads (kworker, writeback, ksoftirqd: children of
    kthreadd, pid 2) now alive: kafka-wire's segment files are written back by them."""
    total = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if fields[1] == "2":
            total += int(fields[11]) + int(fields[12])
    return total / CLK_TCK


def parse_result(line: str) -> dict:
    """BenchSmallEvents.Window's RESULT line (bench.partitions' Java producer prints it too)."""
    _, records, secs, cpu, busiest, thread, jit, ok, detail = line.split()
    return {"records": int(records), "seconds": float(secs), "cpu_s": float(cpu),
            "busiest_thread_cpu_s": float(busiest), "busiest_thread": thread,
            "jit_s": float(jit), "verified": ok == "1", "detail": detail}


def _phase(runner, b, mode: str, topic: str, warms: list[int], count: int, settings: dict) -> dict:
    """One instance of ``mode`` per partition, ``warms[p]`` records untimed each; when all
    are warm, ``count`` records each, timed together."""
    args = [f"{k}={v}" for k, v in settings.items()]
    clients = len(warms)
    procs = [runner.start("BenchSmallEvents", mode, b.bootstrap, topic, str(p), str(warm), str(count),
                          str(SIZE), *args, jvm_args=JVM_ARGS[mode]) for p, warm in enumerate(warms)]
    try:
        # A producer says how many it sent untimed (more while its JIT compiled): the consumer
        # of its partition reads as many untimed.
        warmed = [int((proc.wait_for(lambda line: line.startswith("WARM"), timeout=180) + f" {w}").split()[1])
                  for proc, w in zip(procs, warms)]
        kernel0, busy0 = kernel_threads_s(), machine_busy_s()
        cpu0, wall0 = b.cpu_seconds(), time.monotonic()
        for proc in procs:
            proc.send("go")
        lines = [proc.wait_for(lambda line: line.startswith("RESULT"), timeout=600) for proc in procs]
        broker_cpu, wall = b.cpu_seconds() - cpu0, time.monotonic() - wall0
        machine, kernel = machine_busy_s() - busy0, kernel_threads_s() - kernel0
        for proc in procs:
            proc.wait(60)
    finally:
        for proc in procs:
            proc.kill()
    inst = [parse_result(line) for line in lines]
    records = sum(i["records"] for i in inst)
    seconds = max(i["seconds"] for i in inst)
    client_cpu = sum(i["cpu_s"] for i in inst)
    busy = max(i["busiest_thread_cpu_s"] / i["seconds"] for i in inst)
    return {"msgs_per_s": records / seconds, "records": records, "seconds": seconds, "wall_s": wall,
            "broker_cpu_us_per_msg": broker_cpu / records * 1e6,
            "client_cpu_us_per_msg": client_cpu / records * 1e6,
            "broker_cores": broker_cpu / wall, "client_cores": client_cpu / seconds,
            "machine_cores": machine / wall,
            "kernel_thread_cores": kernel / wall,
            "other_cores": max(0.0, machine - broker_cpu - client_cpu - kernel) / wall,
            "busiest_client_thread": busy, "client_bound": busy >= BUSY,
            "machine_saturated": machine / wall >= 0.9 * (os.cpu_count() or 1),
            "verified": all(i["verified"] for i in inst) and records == clients * count,
            "warmed": warmed, "instances": inst}


def one_round(runner, name: str, clients: int, warm: int, count: int) -> dict:
    out = {"load_before": load()}
    b = start_broker(name)
    try:
        create_topic(b.bootstrap, "small", clients)
        out["produce"] = _phase(runner, b, "produce", "small", [warm] * clients, count, PRODUCER)
        out["consume"] = _phase(runner, b, "consume", "small", out["produce"]["warmed"], count, CONSUMER)
        out["broker_rss_mb"] = b.rss_mb("VmHWM")
    finally:
        b.stop()
    out["load_after"] = load()
    return out


def _stats(vals: list[float]) -> tuple[float, float, float]:
    return statistics.median(vals), min(vals), max(vals)


def report(runs: dict, brokers: list[str], clients: list[int]) -> dict:
    rows = [("msg/s", "msgs_per_s", "{:,.0f}"),
            ("broker CPU us/msg", "broker_cpu_us_per_msg", "{:.3f}"),
            ("client CPU us/msg", "client_cpu_us_per_msg", "{:.3f}"),
            ("broker cores", "broker_cores", "{:.2f}"),
            ("client cores", "client_cores", "{:.2f}"),
            (f"machine busy cores (of {os.cpu_count()})", "machine_cores", "{:.2f}"),
            ("  of which kernel threads", "kernel_thread_cores", "{:.2f}"),
            ("  of which anything else", "other_cores", "{:.2f}"),
            ("busiest client thread", "busiest_client_thread", "{:.0%}")]
    summary: dict = {}
    print(f"\n{os.cpu_count()} cores shared by broker and client JVMs; median (min-max) of "
          f"{len(next(iter(runs.values())))} rounds")
    head = f"{'':34}" + "".join(f"{b:>32}" for b in brokers) + (f"{'kw/Tansu':>10}" if len(brokers) == 2 else "")
    for n in clients:
        for phase in ("produce", "consume"):
            print(f"\n{phase} {SIZE} B, {n} Java client{'s' if n > 1 else ''}\n{head}")
            for label, key, fmt in rows:
                line = f"{'  ' + label:34}"
                meds = {}
                for b in brokers:
                    med, lo, hi = _stats([r[phase][key] for r in runs[(b, n)]])
                    meds[b] = med
                    summary.setdefault(f"{phase} {n} clients {label}", {})[b] = {"median": med, "min": lo, "max": hi}
                    line += f"{fmt.format(med) + ' (' + fmt.format(lo) + '-' + fmt.format(hi) + ')':>32}"
                if len(brokers) == 2 and key in ("msgs_per_s", "broker_cpu_us_per_msg"):
                    line += f"{meds['kafka-wire'] / meds['tansu']:>10.2f}"
                print(line)
            for label, key in (("client-bound rounds", "client_bound"),
                               ("machine-saturated rounds (>= 90 %)", "machine_saturated")):
                bound = {b: sum(r[phase][key] for r in runs[(b, n)]) for b in brokers}
                print(f"  {label:32}" + "".join(f"{f'{bound[b]} of {len(runs[(b, n)])}':>32}" for b in brokers))
    print(f"\nClient-bound: the busiest client thread was busy >= {BUSY:.0%} of the time, so that broker's "
          "msg/s is a floor; machine-saturated: broker, clients and the rest used >= 90 % of the cores.")
    return summary


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="10x fewer records, one round")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--count", type=int, default=5_000_000, help="timed records per client instance")
    ap.add_argument("--warm", type=int, default=1_000_000,
                    help="untimed records per instance first, at least (more while the JIT compiles)")
    ap.add_argument("--clients", default="1,2", help="comma list of parallel client instances")
    ap.add_argument("--brokers", default=None)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args(argv)
    if args.quick:
        args.count, args.warm, args.repeat = args.count // 10, args.warm // 10, 1
    brokers = args.brokers.split(",") if args.brokers else (
        ["kafka-wire", "tansu"] if tansu_binary() else ["kafka-wire"])
    clients = [int(c) for c in args.clients.split(",")]
    from tests.java.harness import JavaUnavailable, compile_sources
    try:
        runner = compile_sources(log=lambda s: None)
    except JavaUnavailable as exc:  # a compile error is not a skip: it raises
        print(f"bench.small_events SKIPPED: {exc}", file=sys.stderr)
        return 0
    runs: dict = {(b, n): [] for b in brokers for n in clients}
    for i in range(args.repeat):
        for n in clients:
            order = brokers if i % 2 == 0 else brokers[::-1]
            for b in order:
                print(f"round {i + 1}/{args.repeat}, {n} client(s): {b} (load {load()}) ...", flush=True)
                runs[(b, n)].append(one_round(runner, b, n, args.warm, args.count))
    summary = report(runs, brokers, clients)
    verified = {b: all(r[p]["verified"] for n in clients for r in runs[(b, n)] for p in ("produce", "consume"))
                for b in brokers}
    print("\nevery record acknowledged and read back once, in order:", verified)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    path = Path(args.out) / f"small-events-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version()},
        "settings": {"size": SIZE, "count_per_client": args.count, "warm_per_client": args.warm,
                     "producer": PRODUCER, "consumer": CONSUMER, "jvm_args": JVM_ARGS},
        "summary": summary, "verified": verified,
        "runs": {f"{b} {n} clients": r for (b, n), r in runs.items()}}, indent=2))
    print(f"wrote {path}")
    return 0 if all(verified.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
