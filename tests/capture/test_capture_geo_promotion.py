"""A running capture job of a geo-replicated namespace goes on across a promotion
(docs/capture.md, "Geo-replicated namespaces"): after a planned promotion the events go to
the new primary's logs, and the running job (the one the broker runs for a hub with
Capture enabled, here with 1 s windows rather than the service's 60 s minimum) reads them
there from its checkpoint; every acknowledged event is captured once. (Before: the job
kept reading the first primary's directory and captured nothing after the promotion.)"""
from __future__ import annotations

import json
import time

import fastavro
from confluent_kafka import Producer

from kafka_wire.testing import EmulatedBroker

NAMESPACE = "geocapture1"


def _config(tmp_path, out) -> str:
    path = tmp_path / "geo-capture.toml"
    path.write_text(f"""
[namespaces.{NAMESPACE}]
tier = "Premium"
default = true
[namespaces.{NAMESPACE}.eventhubs.orders]
partitions = 1
[namespaces.{NAMESPACE}.geo_replication]
replicas = ["westus", "eastus"]
max_replication_lag_seconds = 300
""")
    return str(path)


def _send(broker, values: list[str]) -> None:
    errors = []
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "message.timeout.ms": 10000})
    for v in values:
        p.produce("orders", v.encode(), partition=0, on_delivery=lambda err, _m: errors.append(err))
    assert p.flush(30) == 0 and errors == [None] * len(values)


def _announced(out) -> int:
    events = out / "_capture_events.jsonl"
    lines = events.read_text().splitlines() if events.exists() else []
    return sum(json.loads(line)["data"]["eventCount"] for line in lines)


def _wait_announced(out, n: int, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while _announced(out) < n and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _announced(out) >= n, f"{_announced(out)} events captured, waiting for {n}"


def test_a_running_capture_job_goes_on_in_the_new_primary_after_a_promotion(spark, tmp_path):
    from kafka_wire.spark.capture_job import CaptureJobSettings, run_in_background

    out = tmp_path / "capture"
    broker = EmulatedBroker(tmp_path / "data", config_file=_config(tmp_path, out)).start()
    handle = None
    try:
        handle = run_in_background(CaptureJobSettings(
            namespace=NAMESPACE, hubs=["orders"], out_dir=str(out), data_dir=str(broker.data_dir),
            interval_seconds=1, trigger_seconds=0.5, grace_seconds=0.5, skip_empty=True), spark=spark)
        geo = broker.broker.services.namespaces[NAMESPACE].geo
        _send(broker, [f"a-{i}" for i in range(10)])
        _wait_announced(out, 10)
        assert broker.call(lambda: geo.promote("eastus")).lost_events == 0
        broker.call(lambda: geo.pause("westus"))  # the first primary's region takes nothing more
        _send(broker, [f"b-{i}" for i in range(10)])
        _wait_announced(out, 20)
    finally:
        if handle is not None:
            handle.stop()
        broker.stop()
    assert handle.error is None
    bodies = []
    for f in sorted(out.rglob("*.avro")):
        with open(f, "rb") as fh:
            bodies += [r["Body"].decode() for r in fastavro.reader(fh)]
    assert sorted(bodies) == sorted([f"a-{i}" for i in range(10)] + [f"b-{i}" for i in range(10)])
    assert _announced(out) == 20
