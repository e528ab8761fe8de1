"""What one more event hub costs a namespace that holds many: ms per CreateTopics of
one hub, for the last ``--timed`` hubs up to ``--hubs`` (``python -m bench.hub_creation``).

The first ``--hubs - --timed`` hubs (one partition each) are written straight into the
namespace's data directory with a LogManager, not measured; the broker starts on it
(the TopicManager's load) and a confluent-kafka AdminClient creates the rest one
request at a time, through the door ([limits] and the tier's rules, in the default
relaxed Standard namespace) as any client would. [limits] are raised so that all
``--hubs`` fit. ``PYTHONPATH=/tmp/wt-before python -m bench.hub_creation`` measures
another checkout with the same script.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from kafka_wire.eventhubs.bounds import Bounds
from kafka_wire.log.config import LogConfig
from kafka_wire.log.manager import LogManager
from kafka_wire.testing import EmulatedBroker

NAMESPACE = "emulatorNs1"  # the default namespace of a broker without a config file


def prefill(data_dir: Path, count: int) -> None:
    logs = LogManager(data_dir / NAMESPACE, LogConfig())
    try:
        for i in range(count):
            logs.create_topic(f"pre-{i:05d}", 1)
    finally:
        logs.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hubs", type=int, default=10_000)
    ap.add_argument("--timed", type=int, default=100)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hub-creation-", dir="/dev/shm") as tmp:
        data_dir = Path(tmp)
        t0 = time.perf_counter()
        prefill(data_dir, args.hubs - args.timed)
        filled = time.perf_counter() - t0
        bounds = Bounds(hubs_per_namespace=args.hubs, partitions_per_namespace=args.hubs)
        with EmulatedBroker(data_dir, bounds=bounds) as broker:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            took = []
            for i in range(args.timed):
                name = f"timed-{i:05d}"
                t = time.perf_counter()
                admin.create_topics([NewTopic(name, 1)], operation_timeout=30)[name].result(60)
                took.append((time.perf_counter() - t) * 1000)
            # one over [limits] hubs_per_namespace: refused, as before
            over = admin.create_topics([NewTopic("one-too-many", 1)])["one-too-many"]
            try:
                over.result(60)
                raise SystemExit("the hub past [limits] hubs_per_namespace was made")
            except Exception as exc:  # noqa: BLE001  KafkaException: the refusal expected
                if "hubs_per_namespace" not in str(exc):
                    raise
    print(f"{args.hubs - args.timed} hubs written in {filled:.1f} s; CreateTopics of hubs "
          f"{args.hubs - args.timed + 1}..{args.hubs}: median {statistics.median(took):.2f} ms, "
          f"mean {statistics.fmean(took):.2f} ms, p90 {sorted(took)[int(len(took) * 0.9)]:.2f} ms "
          "a creation")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
