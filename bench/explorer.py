"""The Data Explorer's reads on a large partition: how long a page takes from each
kind of start, the largest page, one search request (it stops after 20,000 events
or 25 ms) and a search of the whole partition request by request, as the console
makes it, and one whole event. The broker answers on its event loop, so each time is also
how long Kafka and AMQP clients of that broker wait behind the request.

Then ``--bombs N`` (0: not) decompression bombs stored between events (as a broker
before Produce refused them stored them), paged through to the end as the console goes
on: the time it takes, and the longest a Kafka client (ApiVersions round trips, all the
while) waited for the broker meanwhile (before the console decompressed them off the
loop: ~0.2 s a bomb, ~2 s a page over 10).

A program, not a test: an in-process broker with HTTP on an ephemeral port,
``--events`` JSON events of ``--size`` bytes produced to one partition with
confluent-kafka, then each request ``--repeat`` times with ``requests``; prints
median and max milliseconds, and checks every answer (the page starts where it
should, holds the events it should).

    python -m bench.explorer [--events 200000] [--size 1024] [--repeat 15] [--bombs 10]
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time

import requests
from confluent_kafka import Producer

from kafka_wire.console import explorer
from kafka_wire.testing import EmulatedBroker


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--bombs", type=int, default=10)
    args = ap.parse_args()
    n = args.events
    with tempfile.TemporaryDirectory() as tmp, EmulatedBroker(f"{tmp}/data", http=True) as broker:
        broker.create_hub("big", 1)
        pad = "x" * max(args.size - 60, 0)
        p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 20,
                      "batch.num.messages": 1000, "queue.buffering.max.messages": 200_000})
        for i in range(n):
            while True:
                try:
                    p.produce("big", json.dumps({"i": i, "pad": pad}).encode(), key=f"k{i % 97}".encode(),
                              partition=0)
                    break
                except BufferError:
                    p.poll(0.05)
            if i % 10_000 == 0:
                p.poll(0)
        assert p.flush(120) == 0
        base = f"{broker.http_url}/api/namespaces/emulatorNs1/hubs/big/partitions/0/events"
        mid = n // 2
        mid_event = requests.get(base, params={"from": "sequence", "value": mid, "count": 1}, timeout=30).json()
        mid_offset = mid_event["events"][0]["offset"]
        mid_time = mid_event["events"][0]["enqueued_time_ms"]
        cases = [
            ("50 from earliest", {"from": "earliest"}, lambda s: s[0] == 0 and len(s) == 50),
            ("50 from latest", {"from": "latest"}, lambda s: s[-1] == n - 1 and len(s) == 50),
            ("50 from a sequence number", {"from": "sequence", "value": mid}, lambda s: s[0] == mid),
            ("50 from an offset", {"from": "offset", "value": mid_offset}, lambda s: s[0] == mid),
            ("50 from a time", {"from": "time", "value": mid_time}, lambda s: s[0] <= mid < s[0] + 2000),
            ("50 before a sequence number", {"before": mid}, lambda s: s[-1] == mid - 1 and len(s) == 50),
            (f"{explorer.PAGE_MAX} from a sequence number", {"from": "sequence", "value": mid, "count": explorer.PAGE_MAX},
             lambda s: s == list(range(mid, mid + explorer.PAGE_MAX))),
            ("search, one request (no match)", {"from": "earliest", "q": "no such text"},
             lambda s: s == []),
        ]
        print(f"{n:,} events of {args.size} B in one partition; median (max) of {args.repeat} requests")
        for name, query, check in cases:
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                r = requests.get(base, params=query, timeout=60)
                times.append((time.perf_counter() - t0) * 1000)
                assert r.status_code == 200, r.text
                seqs = [e["sequence_number"] for e in r.json()["events"]]
                assert check(seqs), (name, seqs[:3], seqs[-3:])
            print(f"  {name:<38} {statistics.median(times):8.1f} ms  ({max(times):.1f})")
        # The whole partition, request by request from where each stopped, as the console goes on.
        t0, requests_made, looked, nxt = time.perf_counter(), 0, 0, 0
        while nxt < n:
            r = requests.get(base, params={"from": "sequence", "value": nxt, "q": "no such text"}, timeout=60)
            body = r.json()
            assert body["events"] == [] and body["next_sequence_number"] > nxt
            nxt, looked, requests_made = body["next_sequence_number"], looked + body["scanned"], requests_made + 1
        took = time.perf_counter() - t0
        assert looked == n
        print(f"  {'search of the whole partition':<38} {took * 1000:8.1f} ms  in {requests_made} requests "
              f"({looked / took:,.0f} events/s, {looked // requests_made:,} events a request)")
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            r = requests.get(f"{base}/{mid}", timeout=30)
            times.append((time.perf_counter() - t0) * 1000)
            assert r.json()["sequence_number"] == mid
        print(f"  {'one whole event':<38} {statistics.median(times):8.1f} ms  ({max(times):.1f})")
        if args.bombs:
            bombs(broker, args.bombs)


def bombs(broker, count: int) -> None:
    """Pages over ``count`` bombs, and how long another client waited meanwhile."""
    import pytest

    from kafka_wire import codec
    from kafka_wire.log import records as rec
    from tests.rawclient import RawClient
    from tests.undecodable_batches import batch, bomb, produce, stored_unchecked

    broker.create_hub("bombs", 1)
    blob = bomb()
    with pytest.MonkeyPatch.context() as mp, RawClient(broker.bootstrap_servers) as c:
        stored_unchecked(mp)
        for i in range(count):
            assert produce(c, "bombs", batch([f"good{i}".encode()], codec_id=rec.ZSTD)).error_code == 0
            assert produce(c, "bombs", blob).error_code == 0
    base = f"{broker.http_url}/api/namespaces/emulatorNs1/hubs/bombs/partitions/0/events"
    stop, waits = threading.Event(), []

    def kafka_client():
        with RawClient(broker.bootstrap_servers) as c:
            while not stop.is_set():
                t0 = time.perf_counter()
                c.request(codec.ApiKey.ApiVersions, 0)
                waits.append(time.perf_counter() - t0)
    other = threading.Thread(target=kafka_client)
    other.start()
    try:
        t0, pages, met, query = time.perf_counter(), 0, 0, {}
        while True:
            body = requests.get(base, params=query, timeout=120).json()
            pages, met = pages + 1, met + len(body["unreadable_batches"])
            if body["next_sequence_number"] > body["last_sequence_number"]:
                break
            query = {"from": "sequence", "value": body["next_sequence_number"]}
        took = time.perf_counter() - t0
    finally:
        stop.set()
        other.join()
    assert met == count, (met, count)
    print(f"  {f'{count} bombs, paged to the end':<38} {took * 1000:8.1f} ms  in {pages} pages; "
          f"another client's longest wait {max(waits) * 1000:.1f} ms ({len(waits):,} round trips)")


if __name__ == "__main__":
    main()
