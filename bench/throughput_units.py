"""Throughput units: produce as fast as possible against a 1-TU namespace.

A Standard namespace with ``throughput_units = 1`` accepts 1 MB/s (here
1 MiB/s, 1,048,576 bytes) or 1,000 events/s, whichever comes first. This
program runs kafka-wire in-process, produces 10 KiB events with
confluent-kafka as fast as the client can for ``--seconds`` (20), and prints
the acknowledged bytes per second (the curve), their mean, and the throttle
times the client was told (``throttle_time_ms``, via librdkafka's throttle
events). The target: a mean within ±10% of 1 MB/s, with throttling seen.

    .venv/bin/python -m bench.throughput_units [--seconds 20] [--units 1] [--size 10240]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time

from confluent_kafka import KafkaError, Producer

from kafka_wire.eventhubs.model import EventHubsModel, Namespace, Tier
from kafka_wire.testing import EmulatedBroker

MIB = 1024 * 1024


def run(seconds: int, units: int, size: int, partitions: int) -> dict:
    model = EventHubsModel({"bench-ns": Namespace("bench-ns", Tier.STANDARD, units=units)}, "bench-ns")
    with tempfile.TemporaryDirectory(prefix="kw-tu-") as tmp, \
            EmulatedBroker(tmp, eventhubs=model) as broker:
        broker.create_hub("ingest", partitions)
        lock = threading.Lock()
        acked = [0] * (seconds + 2)
        throttles: list[int] = []
        errors: list = []
        start = time.monotonic()

        def delivered(err, msg) -> None:
            if err is not None:
                if err.code() not in (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT):
                    errors.append(err)
                return
            second = int(time.monotonic() - start)
            if second < len(acked):
                with lock:
                    acked[second] += len(msg.value())

        def throttled(event) -> None:
            throttles.append(int(event.throttle_time * 1000))

        producer = Producer({
            "bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5, "acks": 1,
            "compression.type": "none", "queue.buffering.max.kbytes": 8192,
            "batch.size": 256 * 1024, "throttle_cb": throttled, "log_level": 3})
        payload = b"e" * size
        start = time.monotonic()
        deadline = start + seconds
        sent = 0
        while time.monotonic() < deadline:
            try:
                producer.produce("ingest", payload, partition=sent % partitions,
                                 on_delivery=delivered)
                sent += 1
            except BufferError:
                producer.poll(0.01)
                continue
            producer.poll(0)
        producer.purge(in_queue=True)
        producer.flush(5)
        quota = broker.broker.services.namespaces["bench-ns"].quota
        return {"curve": acked[:seconds], "throttles": throttles, "errors": len(errors),
                "broker_throttled": quota.throttled_requests, "units": quota.units}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--units", type=int, default=1)
    parser.add_argument("--size", type=int, default=10 * 1024, help="event size in bytes")
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args(argv)
    result = run(args.seconds, args.units, args.size, args.partitions)
    target = args.units * MIB
    curve = result["curve"]
    print(f"{args.units} throughput unit(s): target {target:,} B/s; {args.size} B events, "
          f"{args.partitions} partitions")
    print(" second   acked B/s    MB/s  ")
    for i, b in enumerate(curve):
        bar = "#" * round(40 * b / target) if target else ""
        print(f"  {i + 1:>4}  {b:>11,}  {b / MIB:6.3f}  {bar}")
    mean = sum(curve) / len(curve)
    settled = sum(curve[1:]) / max(len(curve) - 1, 1)
    throttles = result["throttles"]
    print(f"mean over {len(curve)} s: {mean:,.0f} B/s = {mean / target:.3f} x target "
          f"(after the first second: {settled / target:.3f} x)")
    if throttles:
        print(f"client saw {len(throttles)} throttle events, throttle_time_ms mean "
              f"{sum(throttles) / len(throttles):.0f}, max {max(throttles)}")
    else:
        print("client saw no throttle events")
    print(f"broker throttled {result['broker_throttled']} requests; delivery errors: {result['errors']}")
    ok = abs(mean / target - 1) <= 0.10 and bool(throttles)
    print("PASS" if ok else "FAIL", "(mean within ±10% of the quota, throttling seen)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
