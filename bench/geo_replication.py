"""What geo-replication costs a Kafka producer (issue 29): confluent-kafka produces
the same messages to a Premium namespace without replicas, with one asynchronous
secondary (max lag 300 s) and with one synchronous secondary (max lag 0), each on an
in-process broker of its own, in the same run, the order rotating; figures are
medians of ``--repeat`` runs, with each replicated setup's ratio to the plain one.
Every message's acknowledgement is checked, and each secondary's log end offset is
checked to equal the primary's at the end.

    python -m bench.geo_replication [--repeat 3] [--messages 50000] [--size 200]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from confluent_kafka import Producer

from kafka_wire.testing import EmulatedBroker

NAMESPACE = "geonamespace1"


def config(directory: Path, geo: int | None) -> Path:
    lines = [f"[namespaces.{NAMESPACE}]", 'tier = "Premium"', "default = true",
             f"[namespaces.{NAMESPACE}.eventhubs.orders]", "partitions = 2"]
    if geo is not None:
        lines += [f"[namespaces.{NAMESPACE}.geo_replication]", 'replicas = ["westus", "eastus"]',
                  f"max_replication_lag_seconds = {geo}"]
    path = directory / "bench.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def run(geo: int | None, messages: int, size: int) -> float:
    """Messages per second acknowledged."""
    with tempfile.TemporaryDirectory(prefix="bench-geo-") as tmp:
        with EmulatedBroker(Path(tmp) / "data", config_file=config(Path(tmp), geo)) as b:
            p = Producer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 5, "acks": "all",
                          "enable.idempotence": True, "queue.buffering.max.messages": 200_000})
            acked = [0]
            failed = []

            def report(err, _msg):
                if err is None:
                    acked[0] += 1
                else:
                    failed.append(err)
            value = b"x" * size
            start = time.perf_counter()
            for i in range(messages):
                while True:
                    try:
                        p.produce("orders", value, partition=i % 2, on_delivery=report)
                        break
                    except BufferError:
                        p.poll(0.01)
            assert p.flush(120) == 0
            seconds = time.perf_counter() - start
            assert acked[0] == messages and not failed, (acked[0], failed[:3])
            if geo is not None:
                g = b.broker.services.namespaces[NAMESPACE].geo
                deadline = time.monotonic() + 30
                while b.call(lambda: g._stores["eastus"].ends() != g._stores["westus"].ends()):
                    assert time.monotonic() < deadline, "the secondary did not catch up"
                    time.sleep(0.05)
            return messages / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=200)
    args = parser.parse_args()
    setups = [("no replicas", None), ("async secondary", 300), ("sync secondary", 0)]
    rates: dict[str, list[float]] = {name: [] for name, _ in setups}
    for r in range(args.repeat):
        order = setups[r % 3:] + setups[:r % 3]
        for name, geo in order:
            rates[name].append(run(geo, args.messages, args.size))
    base = statistics.median(rates["no replicas"])
    for name, _ in setups:
        median = statistics.median(rates[name])
        print(f"{name:<16} {median:>10,.0f} msg/s (median of {args.repeat})  "
              f"ratio to no replicas {median / base:.2f}")


if __name__ == "__main__":
    main()
