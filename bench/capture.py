"""Capture throughput: events/s drained from the log into Avro and into Parquet.

    python -m bench.capture [--events 1000000] [--size 200] [--partitions 4] [--master local[*]]
                            [--cluster N]   # a standalone cluster of N one-core workers here

Writes the events straight into a log directory (log.LogManager, batches of
1,000 records built with kafka-python, as a producer would send them), then
starts Spark and times, separately: Spark start-up, a warm-up query (first
use of the Python workers and of our data sources, on a one-event hub), and
``--once`` captures of everything into Avro and into Parquet. Then reads
every file back (untimed) and checks that each event is in exactly one file,
with its body. Prints a table and writes JSON to
bench/results/.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder

from kafka_wire.log.config import LogConfig
from kafka_wire.log.manager import LogManager

NAMESPACE = "emulatorNs1"
RESULTS = Path(__file__).resolve().parent / "results"


def fill(data_dir: Path, hub: str, events: int, size: int, partitions: int, per_batch: int = 1000) -> float:
    """Append ``events`` of ``size`` bytes round-robin over the partitions; returns seconds."""
    t0 = time.perf_counter()
    manager = LogManager(data_dir / NAMESPACE, LogConfig())
    manager.create_topic(hub, partitions)
    body = os.urandom(size // 2).hex().encode()[:size]
    n = 0
    while n < events:
        for p in range(partitions):
            count = min(per_batch, events - n)
            if count <= 0:
                break
            b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                          producer_epoch=-1, base_sequence=-1, batch_size=1 << 26)
            now = int(time.time() * 1000)
            for i in range(count):
                b.append(i, timestamp=now, key=b"key-%d" % ((n + i) % 1000), value=body, headers=[])
            manager.get_log(hub, p).append(bytes(b.build()), now_ms=now)
            n += count
    manager.close()
    return time.perf_counter() - t0


def check(out: Path, encoding: str, events: int, partitions: int, size: int) -> None:
    """Every event in exactly one file, in order within its partition, with its body."""
    import fastavro
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    seen: dict[int, list[int]] = {p: [] for p in range(partitions)}
    for path in sorted(out.rglob(f"*.{encoding}")):
        partition = int(path.relative_to(out).parts[2])
        if encoding == "avro":
            with open(path, "rb") as f:
                rows = [(r["SequenceNumber"], len(r["Body"])) for r in fastavro.reader(f)]
        else:
            t = pq.read_table(path, columns=["SequenceNumber", "Body"])
            rows = list(zip(t.column("SequenceNumber").to_pylist(), pc.binary_length(t.column("Body")).to_pylist()))
        if any(n != size for _, n in rows):
            raise SystemExit(f"{path}: a body is not {size} bytes")
        seen[partition].extend(seq for seq, _ in rows)
    for p, seqs in seen.items():
        seqs.sort()
        if seqs != list(range(len(seqs))):
            raise SystemExit(f"{encoding}: partition {p} has duplicates or gaps")
    if sum(map(len, seen.values())) != events:
        raise SystemExit(f"{encoding}: {sum(map(len, seen.values()))} events in files, {events} expected")


def drain(spark, data_dir: Path, hub: str, out: Path, encoding: str) -> tuple[float, int, int]:
    from kafka_wire.spark.capture_job import CaptureJobSettings, run

    settings = CaptureJobSettings(namespace=NAMESPACE, hubs=[hub], out_dir=str(out), encoding=encoding,
                                  data_dir=str(data_dir), once=True, interval_seconds=900)
    t0 = time.perf_counter()
    totals = run(settings, spark=spark)
    return time.perf_counter() - t0, totals.events, totals.files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=200, help="event body bytes")
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--cluster", type=int, metavar="N",
                    help="start a Spark standalone cluster of N one-core workers on this machine and use it")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args(argv)
    if args.cluster:
        from bench.spark_cluster import local_cluster

        with local_cluster(args.cluster) as url:
            return run(args, url, f"standalone cluster, {args.cluster} worker(s) of 1 core")
    return run(args, args.master, args.master)


def run(args, master: str, label: str) -> int:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

    work = Path(tempfile.mkdtemp(prefix="kafka-wire-bench-capture-"))
    data = work / "data"
    try:
        fill_s = fill(data, "bench", args.events, args.size, args.partitions)
        # The warm-up hub has as many partitions (of one event) as the measured one, so the warm-up
        # query starts as many Python workers as the drains use: start-up, not drain time.
        fill(data, "warmup", args.partitions, args.size, args.partitions)
        print(f"log filled: {args.events:,} x {args.size} B in {args.partitions} partitions in {fill_s:.1f} s",
              flush=True)

        t0 = time.perf_counter()
        from kafka_wire.spark.session import get_session

        spark = get_session(master, app_name="kafka-wire-bench-capture")
        startup_s = time.perf_counter() - t0
        warmup_s, _, _ = drain(spark, data, "warmup", work / "warmup", "avro")

        results = {}
        for encoding in ("avro", "parquet"):
            seconds, events, files = drain(spark, data, "bench", work / encoding, encoding)
            if events != args.events:
                raise SystemExit(f"{encoding}: {events} events captured, {args.events} expected")
            t0 = time.perf_counter()
            check(work / encoding, encoding, args.events, args.partitions, args.size)
            print(f"{encoding}: every event checked in {time.perf_counter() - t0:.1f} s (not timed)", flush=True)
            size = sum(p.stat().st_size for p in (work / encoding).rglob(f"*.{encoding}"))
            results[encoding] = {"seconds": round(seconds, 2), "events_per_s": round(events / seconds),
                                 "mb_per_s_in": round(events * args.size / seconds / 1e6, 1),
                                 "files": files, "bytes_written": size}
        spark.stop()

        print()
        print(f"Spark ({label}) start-up (session, JVM): {startup_s:6.1f} s   first query (warm-up): "
              f"{warmup_s:5.1f} s")
        print(f"{'encoding':10} {'seconds':>8} {'events/s':>10} {'MB/s in':>8} {'files':>6}")
        for encoding, r in results.items():
            print(f"{encoding:10} {r['seconds']:8.2f} {r['events_per_s']:10,} {r['mb_per_s_in']:8.1f} {r['files']:6}")
        report = {
            "benchmark": "capture", "events": args.events, "event_bytes": args.size, "partitions": args.partitions,
            "master": label, "cpus": os.cpu_count(), "python": platform.python_version(),
            "spark_startup_s": round(startup_s, 2), "warmup_query_s": round(warmup_s, 2), "fill_s": round(fill_s, 2),
            "results": results, "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"capture-{time.strftime('%Y%m%d-%H%M%S')}.json"
        path.write_text(json.dumps(report, indent=1) + "\n")
        print(f"\nwritten {path}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
