"""What one more event hub costs a namespace that holds many: ms per CreateTopics of
one hub, for the last ``--timed`` hubs up to ``--hubs`` (``python -m bench.hub_creation``).

The first ``--hubs - --timed`` hubs (one partition each) are written straight into the
namespace's data directory with a LogManager, not measured; the broker starts on it
(the TopicManager's load) and a confluent-kafka AdminClient creates the rest one
request at a time, through the door ([limits] and the tier's rules, in the default
relaxed Standard namespace) as any client would. [limits] are raised so that all
``--hubs`` fit. ``PYTHONPATH=/tmp/wt-before python -m bench.hub_creation`` measures
another checkout with the same script.

``--reported R``: the compatibility report already holds R entries (the namespace is past
its tier's limit of 10 hubs, relaxed: each hub made adds one, up to the report's 2,000),
written into the data directory before the start as the door would have.

``--parked N --deletes D``: instead, what deleting a hub costs while long-poll Fetch
requests wait on N other one-partition hubs (one Fetch a hub, each on its connection;
``--fetches F``: F connections, each parking one Fetch of N / F hubs): ms of
TopicManager.delete, timed on the broker's loop, for D hubs no fetch waits on. The broker
runs in this process, so each connection takes two of its descriptors (the client's end and
the broker's): past half the process's RLIMIT_NOFILE (20,000 here: 10,000 connections did not
all connect, 9,000 parked at once) give F.
"""
from __future__ import annotations

import argparse
import json
import resource
import socket
import statistics
import struct
import tempfile
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from kafka_wire import codec
from kafka_wire.eventhubs.bounds import Bounds
from kafka_wire.eventhubs.report import REPORT_FILE
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


def prefill_report(data_dir: Path, hubs: int, count: int) -> None:
    """``count`` of the first ``hubs`` hubs reported past Standard's limit, as made through
    the door of a relaxed namespace."""
    entries = [{"namespace": NAMESPACE, "rule": "hubs-per-namespace", "event_hub": f"pre-{i:05d}",
                "enforced": False, "kind": "violation", "count": 1, "first": "2026-01-01T00:00:00.000+00:00",
                "reason": "limit", "error_code": 44, "last": "2026-01-01T00:00:00.000+00:00",
                "message": f"namespace {NAMESPACE!r} already has {i} event hubs, the Standard limit "
                           "is 10: delete one or use another namespace", "client_id": "rdkafka"}
               for i in range(hubs - count, hubs)]
    (data_dir / REPORT_FILE).write_text(json.dumps({"entries": entries}, indent=1))


def park(bootstrap: str, hubs: list[str]) -> socket.socket:
    """A connection whose one Fetch waits on partition 0 of each of ``hubs`` (no data)."""
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    F = codec.request_class(codec.ApiKey.Fetch)
    body = bytes(F(version=11, replica_id=-1, max_wait_ms=300_000, min_bytes=1, max_bytes=1 << 20,
                   isolation_level=0, session_id=0, session_epoch=-1, rack_id="", forgotten_topics_data=[],
                   topics=[F.FetchTopic(topic=hub, partitions=[F.FetchTopic.FetchPartition(
                       partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                       partition_max_bytes=1 << 20)]) for hub in hubs]).encode(version=11))
    header = struct.pack(">hhih", codec.ApiKey.Fetch, 11, 1, 5) + b"bench"
    sock.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
    return sock


def deletions(args) -> int:
    per = max(1, args.parked // (args.fetches or args.parked or 1))
    connections = -(-args.parked // per)
    room = resource.getrlimit(resource.RLIMIT_NOFILE)[0] - 512  # (the broker's own files)
    if 2 * connections > room:
        raise SystemExit(f"{connections} connections take {2 * connections} descriptors here (both "
                         f"ends), more than the {room} this process may open: give --fetches")
    with tempfile.TemporaryDirectory(prefix="hub-deletion-", dir="/dev/shm") as tmp:
        data_dir = Path(tmp)
        logs = LogManager(data_dir / NAMESPACE, LogConfig())
        try:
            for i in range(args.parked):
                logs.create_topic(f"parked-{i:05d}", 1)
            for i in range(args.deletes):
                logs.create_topic(f"gone-{i:05d}", 1)
        finally:
            logs.close()
        total = args.parked + args.deletes
        bounds = Bounds(hubs_per_namespace=total, partitions_per_namespace=total)
        with EmulatedBroker(data_dir, bounds=bounds) as broker:
            topics = broker.broker.services.default.topics
            names = [f"parked-{i:05d}" for i in range(args.parked)]
            socks = [park(broker.bootstrap_servers, names[i:i + per]) for i in range(0, len(names), per)]
            deadline = time.monotonic() + 60
            while broker.call(lambda: len(topics._waiters)) < args.parked:  # each hub waited on
                if time.monotonic() > deadline:
                    raise SystemExit("the fetches did not all park within 60 s")
                time.sleep(0.05)

            def timed_delete(name: str) -> float:
                t = time.perf_counter()
                topics.delete(name)
                return (time.perf_counter() - t) * 1000

            took = [broker.call(timed_delete, f"gone-{i:05d}") for i in range(args.deletes)]
            still = broker.call(lambda: len(topics._waiters))
            for sock in socks:
                sock.close()
    if still != args.parked:
        raise SystemExit(f"{args.parked - still} of the other hubs' waiters were dropped")
    print(f"{args.parked} other hubs waited on by {len(socks)} parked fetches: delete of a hub "
          f"median {statistics.median(took):.3f} ms, mean {statistics.fmean(took):.3f} ms, "
          f"p90 {sorted(took)[int(len(took) * 0.9)]:.3f} ms")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hubs", type=int, default=10_000)
    ap.add_argument("--timed", type=int, default=100)
    ap.add_argument("--reported", type=int, default=0)
    ap.add_argument("--parked", type=int, default=None)
    ap.add_argument("--fetches", type=int, default=None)
    ap.add_argument("--deletes", type=int, default=200)
    args = ap.parse_args(argv)
    if args.parked is not None:
        return deletions(args)
    with tempfile.TemporaryDirectory(prefix="hub-creation-", dir="/dev/shm") as tmp:
        data_dir = Path(tmp)
        t0 = time.perf_counter()
        prefill(data_dir, args.hubs - args.timed)
        if args.reported:
            prefill_report(data_dir, args.hubs - args.timed, args.reported)
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
          "a creation" + (f" ({args.reported} entries in the report before)" if args.reported else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
