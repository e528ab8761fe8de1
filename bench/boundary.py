"""What hostile requests cost a broker whose namespaces require auth: a hub of
3,000 partitions asked for, 2,000 namespaces asked for by the owner, and as many
namespace PUTs without a token. Prints each answer's status counts and the
broker process's open descriptors and RSS before and after, so a refusal that
still spends resources shows.

A program, not a test: ``kafka-wire serve`` as a child process on ephemeral
ports with tests/eventhubs/data/multi.toml, driven with ``requests``.

    python -m bench.boundary [--namespaces 2000] [--partitions 3000]
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

from kafka_wire.testing.processes import stop_processes

CONFIG = Path(__file__).resolve().parent.parent / "tests" / "eventhubs" / "data" / "multi.toml"
MG = "/subscriptions/s/resourceGroups/g/providers/Microsoft.EventHub/namespaces"
API = "?api-version=2024-01-01"


def usage(pid: int) -> tuple[int, float]:
    """(open descriptors, RSS in MB) of process ``pid``."""
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    rss = next(int(line.split()[1]) for line in open(f"/proc/{pid}/status") if line.startswith("VmRSS"))
    return fds, rss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--namespaces", type=int, default=2000)
    ap.add_argument("--partitions", type=int, default=3000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        log = open(Path(tmp) / "broker.log", "w+")
        proc = subprocess.Popen([sys.executable, "-m", "kafka_wire.cli", "serve", "--config", str(CONFIG),
                                 "--data-dir", str(data), "--listen", "127.0.0.1:0", "--http-listen",
                                 "127.0.0.1:0", "--no-amqp"], stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 60
            http = None
            while http is None and time.monotonic() < deadline:
                log.seek(0)
                found = re.search(r"console and metrics on http://([\d.]+:\d+)/", log.read())
                http = found and f"http://{found.group(1)}"
                time.sleep(0.1)
            assert http, "the broker did not start"
            token = subprocess.run([sys.executable, "-m", "kafka_wire.cli", "token", "--management",
                                    "--data-dir", str(data)], capture_output=True, text=True,
                                   check=True).stdout.strip()
            owner = {"Authorization": f"Bearer {token}"}
            s = requests.Session()
            print(f"{'step':<44} {'answers':<28} {'fds':>6} {'RSS MB':>8}")
            fds, rss = usage(proc.pid)
            print(f"{'started':<44} {'':<28} {fds:>6} {rss:>8.1f}")

            def step(name: str, requests_: list[tuple[str, dict, dict]]) -> None:
                counts = collections.Counter()
                for path, body, headers in requests_:
                    counts[s.put(http + path, json=body, headers=headers, timeout=30).status_code] += 1
                fds, rss = usage(proc.pid)
                shown = ", ".join(f"{n}x{c}" for c, n in sorted(counts.items()))
                print(f"{name:<44} {shown:<28} {fds:>6} {rss:>8.1f}")

            step(f"hub of {args.partitions} partitions (owner)",
                 [(f"{MG}/contoso/eventhubs/wide{API}", {"properties": {"partitionCount": args.partitions}},
                   owner)])
            step(f"{args.namespaces} namespace PUTs without a token",
                 [(f"{MG}/anon{i:05d}-ns{API}", {}, {}) for i in range(args.namespaces)])
            step(f"{args.namespaces} namespace PUTs by the owner",
                 [(f"{MG}/owned{i:05d}-ns{API}", {}, owner) for i in range(args.namespaces)])
            dirs = sum(1 for p in data.iterdir() if p.is_dir())
            print(f"directories in the data dir after: {dirs}")
        finally:
            stop_processes([proc])
            log.close()


if __name__ == "__main__":
    main()
