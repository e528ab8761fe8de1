"""Event Hubs REST send: requests/s and events/s, single events and batches
(``application/vnd.microsoft.servicebus.json``), with the broker's CPU per
request and per event beside a Kafka Produce request of one record on the
same broker (the peer: what the Kafka front end pays for the same append).

A program, not a test (``python -m bench.rest_send [--requests N] [--batch 100] [--repeat 3]``).
Starts ``kafka-wire serve`` (Kafka and HTTP on ephemeral ports) and sends with
one keep-alive ``http.client`` connection, as fast as it answers; every phase
checks, with a Kafka consumer, that the hub holds exactly the events answered 201.
"""
from __future__ import annotations

import argparse
import http.client
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from bench.amqp import Broker, create_hub, start_broker
from bench.small_requests import produce_small
from kafka_wire.eventhubs import sas

BATCH_TYPE = "application/vnd.microsoft.servicebus.json"
HOST = "localhost"  # a plain host name selects the default namespace


def start(work: Path) -> tuple[Broker, int]:
    b = start_broker(work, "http")
    return b, b.http_port


def stored(bootstrap: str, hub: str) -> int:
    """Events in partition 0 of ``hub`` (its high watermark)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "rest-bench"})
    try:
        return c.get_watermark_offsets(TopicPartition(hub, 0), timeout=10)[1]
    finally:
        c.close()


def send(http_port: int, hub: str, requests: int, batch: int) -> dict:
    """``requests`` POSTs to partition 0: one 100 B event each (batch 0), or
    JSON batches of ``batch`` events."""
    # The default namespace of a broker without a config file takes any key.
    token = sas.generate(sas.resource_uri(HOST, hub, None), "RootManageSharedAccessKey", "any-key",
                         int(time.time()) + 3600)
    headers = {"Host": HOST, "Authorization": token}
    if batch:
        headers["Content-Type"] = BATCH_TYPE
        body = json.dumps([{"Body": "x" * 100, "UserProperties": {"n": i}} for i in range(batch)]).encode()
    else:
        body = b"x" * 100
    conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=30)
    ok = 0
    start = time.perf_counter()
    for _ in range(requests):
        conn.request("POST", f"/{hub}/partitions/0/messages", body=body, headers=headers)
        r = conn.getresponse()
        r.read()
        if r.status != 201:
            raise RuntimeError(f"REST send answered {r.status}")
        ok += 1
    secs = time.perf_counter() - start
    conn.close()
    events = ok * (batch or 1)
    return {"requests": ok, "events": events, "seconds": secs, "requests_per_s": ok / secs,
            "events_per_s": events / secs}


def one_round(requests: int, batch: int) -> dict:
    work = Path(tempfile.mkdtemp(prefix="bench-rest-"))
    b, http_port = start(work)
    out = {}
    try:
        for name, n, size in (("single", requests, 0), ("batch", max(requests // 10, 1), batch)):
            hub = f"rest-{name}"
            create_hub(b.bootstrap, hub, 1)
            cpu0 = b.cpu_seconds()
            res = send(http_port, hub, n, size)
            res["broker_us_per_request"] = (b.cpu_seconds() - cpu0) / res["requests"] * 1e6
            res["broker_us_per_event"] = (b.cpu_seconds() - cpu0) / res["events"] * 1e6
            res["verified"] = stored(b.bootstrap, hub) == res["events"]
            out[name] = res
        create_hub(b.bootstrap, "kafka", 1)
        cpu0 = b.cpu_seconds()
        k = produce_small(b.bootstrap, "kafka", requests)
        out["kafka"] = {**k, "broker_us_per_request": (b.cpu_seconds() - cpu0) / max(k["requests"], 1) * 1e6}
    finally:
        b.stop()
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=5_000, help="single-event requests (batches: a tenth)")
    ap.add_argument("--batch", type=int, default=100, help="events per batch request")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    runs = []
    for i in range(args.repeat):
        print(f"round {i + 1}/{args.repeat} ...", flush=True)
        runs.append(one_round(args.requests, args.batch))

    def med(*path):
        vals = []
        for r in runs:
            v = r
            for k in path:
                v = v[k]
            vals.append(v)
        return statistics.median(vals)

    kafka_req = med("kafka", "broker_us_per_request")
    print(f"\n{'figure (median of %d)' % args.repeat:56}{'REST':>12}{'peer':>12}{'ratio':>8}  peer")
    for name, label in (("single", "single 100 B event"), ("batch", f"batch of {args.batch} × 100 B")):
        print(f"{'REST ' + label + ', requests/s':56}{med(name, 'requests_per_s'):>12,.0f}")
        print(f"{'REST ' + label + ', events/s':56}{med(name, 'events_per_s'):>12,.0f}")
        per_req = med(name, "broker_us_per_request")
        print(f"{'  broker CPU µs per request':56}{per_req:>12,.1f}{kafka_req:>12,.1f}"
              f"{per_req / kafka_req:>8.2f}  Kafka Produce request, 1 × 100 B")
        per_ev = med(name, "broker_us_per_event")
        print(f"{'  broker CPU µs per event':56}{per_ev:>12,.1f}{kafka_req:>12,.1f}"
              f"{per_ev / kafka_req:>8.2f}  Kafka Produce request, 1 × 100 B")
    verified = all(r[n]["verified"] for r in runs for n in ("single", "batch"))
    print(f"\nanswered 201 == stored: {verified}")
    return 0 if verified else 1


if __name__ == "__main__":
    sys.exit(main())
