"""CPU per append in the log alone (issue 30, item 3): ``PartitionLog.append`` of one 1 KiB
LogAppendTime batch, on one partition and round robin over 1,000, timed with the calling
thread's CPU clock (user + kernel: the pwrites count), in a temporary directory.

    python -m bench.log_append [--repeat 3] [--against /path/to/other/tree]

``--against`` measures another checkout (``git worktree add /tmp/before <commit>``) in
alternation, each round in a fresh process, and prints medians and the ratio.

``--stamp``: an Event Hubs send's batch built and appended to a LogAppendTime log, built
unstamped (the log stamps it: a second CRC-32C pass) against built stamped (one pass).

``--first-write``: a partition's first write (its directory made by the topic's creation, then
the lazy load, the first segment's files created, one small batch appended), wall time per
partition over a LogManager's 1,000 partitions in /var/tmp (a real disk, not a tmpfs), and the
files each partition directory then holds; with ``--against`` in alternating rounds.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPENDS = 20_000


def _one_record_batch(size: int) -> bytes:
    """A batch of one record of ``size`` zero bytes, at offset 0 (in the tree on sys.path)."""
    from kafka_wire.log import batch as rb
    return rb.encode_batch(
        base_offset=0, partition_leader_epoch=0, attributes=0, last_offset_delta=0, base_timestamp=1,
        max_timestamp=1, producer_id=-1, producer_epoch=-1, base_sequence=-1, records_count=1,
        records=b"\x00" * size)


def _measure(parts: int) -> float:
    """In the tree on sys.path: µs of thread CPU per append, round robin over ``parts``."""
    from kafka_wire.log.config import LogConfig
    from kafka_wire.log.partition_log import PartitionLog

    batch = _one_record_batch(1024)
    root = Path(tempfile.mkdtemp(prefix="bench-log-append-", dir="/var/tmp"))
    try:
        logs = [PartitionLog(root / f"p-{i}", LogConfig(), now_ms=0) for i in range(parts)]
        # Made, opened, first entries written: past index.interval.bytes, so that the sparse
        # indexes, created by their first entry, are there too (creating them is not an append's CPU).
        warm = LogConfig().index_interval_bytes // len(batch) + 2
        for log in logs:
            for _ in range(warm):
                log.append(batch, now_ms=1)
        t0 = time.thread_time()
        for i in range(APPENDS):
            logs[i % parts].append(batch, now_ms=2 + i // 1000)
        cpu = time.thread_time() - t0
        for log in logs:
            log.close()
        return cpu / APPENDS * 1e6
    finally:
        shutil.rmtree(root, ignore_errors=True)


FIRST_WRITES = 1_000


def _first_write(parts: int = FIRST_WRITES) -> tuple[float, float]:
    """In the tree on sys.path: (ms of wall time per partition's first write, files per partition)."""
    from kafka_wire.log.config import LogConfig
    from kafka_wire.log.manager import LogManager

    batch = _one_record_batch(100)
    root = Path(tempfile.mkdtemp(prefix="bench-first-write-", dir="/var/tmp"))
    try:
        manager = LogManager(root, LogConfig())
        manager.create_topic("t", parts)
        logs = [manager.get_log("t", p) for p in range(parts)]
        t0 = time.perf_counter()
        for log in logs:
            log.append(batch, now_ms=1)
        wall = time.perf_counter() - t0
        files = sum(1 for p in range(parts) for _ in manager.partition_dir("t", p).iterdir())
        for log in logs:
            log.abandon()  # not close(): sealing is not the first write's cost
        return wall / parts * 1e3, files / parts
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _stamp(size: int, count: int, rounds: int = 5, n: int = 300) -> tuple[float, float]:
    """µs of thread CPU per event: (built unstamped, built stamped), medians of ``rounds``."""
    from kafka_wire.eventhubs.events import Incoming, records_batch
    from kafka_wire.log.config import LogConfig
    from kafka_wire.log.partition_log import PartitionLog

    events = [Incoming(None, [], bytes([i % 251]) * size, []) for i in range(count)]
    res: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(rounds):
        for stamped in (False, True):
            # (in memory where there is a tmpfs: the CRC passes are what differs, not the disk)
            root = Path(tempfile.mkdtemp(prefix="bench-stamp-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
            log = PartitionLog(root, LogConfig(segment_bytes=1 << 30), now_ms=0)
            t0 = time.thread_time()
            for i in range(n):
                log.append(records_batch(events, 1_000 + i, log_append_time=stamped), now_ms=1_000 + i)
            res[stamped].append((time.thread_time() - t0) / (n * count) * 1e6)
            log.abandon()
            shutil.rmtree(root, ignore_errors=True)
    return statistics.median(res[False]), statistics.median(res[True])


def _round(tree: Path, what: str = "m._measure(1), m._measure(1000)") -> tuple[float, float]:
    # This file's _measure, with ``tree``'s kafka_wire first on the path (an older tree has no bench here).
    code = (f"import sys, importlib.util; sys.path.insert(0, {str(tree)!r}); "
            f"spec = importlib.util.spec_from_file_location('log_append_bench', {str(Path(__file__).resolve())!r}); "
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); "
            "import kafka_wire; assert kafka_wire.__file__.startswith(sys.path[0]), kafka_wire.__file__; "
            f"print(*({what}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, check=True)
    one, many = out.stdout.split()
    return float(one), float(many)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--against", type=Path, help="another checkout, measured in alternation")
    ap.add_argument("--stamp", action="store_true", help="one CRC pass or two for a send's batch")
    ap.add_argument("--first-write", action="store_true", help="a partition's first write, per partition")
    args = ap.parse_args(argv)
    if args.first_write:
        trees = [ROOT] + ([args.against.resolve()] if args.against else [])
        runs: dict[Path, list[tuple[float, float]]] = {t: [] for t in trees}
        for _ in range(args.repeat):
            for tree in trees:
                runs[tree].append(_round(tree, "m._first_write()"))
        print(f"first write of each of {FIRST_WRITES:,} partitions (wall ms per partition), "
              f"medians (min-max) of {args.repeat} alternating rounds; files per partition after it")
        for tree in trees:
            ms = [r[0] for r in runs[tree]]
            label = "this tree" if tree == ROOT else "--against"
            print(f"{label:<12} {statistics.median(ms):8.3f} ms ({min(ms):.3f}-{max(ms):.3f}), "
                  f"{runs[tree][0][1]:.0f} files")
        if args.against:
            print(f"ratio {statistics.median(r[0] for r in runs[ROOT]) / statistics.median(r[0] for r in runs[trees[1]]):.2f}")
        return 0
    if args.stamp:
        print("Event Hubs send, build + append to a LogAppendTime log, µs per event, medians of 5 alternating rounds")
        print(f"{'events per batch':<28} {'2 CRCs':>10} {'1 CRC':>10} {'ratio':>7}")
        for size, count in ((1024, 100), (100, 100), (1024, 1)):
            two, one = _stamp(size, count)
            print(f"{f'{count} x {size} B':<28} {two:>10.3f} {one:>10.3f} {one / two:>7.2f}")
        return 0
    trees = [ROOT] + ([args.against.resolve()] if args.against else [])
    results: dict[Path, list[tuple[float, float]]] = {t: [] for t in trees}
    for _ in range(args.repeat):
        for tree in trees:
            results[tree].append(_round(tree))
    print(f"log append CPU (thread time, µs per 1 KiB append), medians of {args.repeat} alternating rounds")
    print(f"{'partitions':<28} {'this tree':>10} {'--against':>10} {'ratio':>7}")
    for i, label in enumerate(("1", "1,000 round robin")):
        here = statistics.median(r[i] for r in results[ROOT])
        if args.against:
            there = statistics.median(r[i] for r in results[trees[1]])
            print(f"{label:<28} {here:>10.2f} {there:>10.2f} {here / there:>7.2f}")
        else:
            print(f"{label:<28} {here:>10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
