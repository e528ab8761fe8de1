"""Time to a usable in-process broker (answers ApiVersions) and to full
teardown, median of 50 (``python -m bench.inprocess [--runs N]``)."""
from __future__ import annotations

import argparse
import socket
import statistics
import time

from kafka_wire.testing import EmulatedBroker

_API_VERSIONS_V0 = b"\x00\x00\x00\x0b\x00\x12\x00\x00\x00\x00\x00\x01\x00\x01b"


def one(in_memory: bool) -> tuple[float, float]:
    t0 = time.perf_counter()
    b = EmulatedBroker(in_memory=in_memory).start()
    with socket.create_connection(("127.0.0.1", b.port)) as s:
        s.sendall(_API_VERSIONS_V0)
        assert s.recv(4)
    t1 = time.perf_counter()
    b.stop()
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args(argv)
    one(True)  # imports and first-use costs are not what we measure
    for in_memory in (True, False):
        starts, stops = zip(*(one(in_memory) for _ in range(args.runs)))
        label = "in-memory (tmpfs)" if in_memory else "disk temp dir"
        print(f"{label:18} start→ApiVersions median {statistics.median(starts) * 1000:6.1f} ms "
              f"(p90 {sorted(starts)[int(len(starts) * 0.9)] * 1000:.1f}), "
              f"teardown median {statistics.median(stops) * 1000:6.1f} ms over {args.runs} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
