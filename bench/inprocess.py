"""Time to a usable in-process broker (answers ApiVersions) and to full
teardown, median of 50 (``python -m bench.inprocess [--runs N]``); and the
azure-eventhub sync consumer's time from ``receive()`` to its first event in the
same process, at the interpreter's default switch interval and at the one an
EmulatedBroker sets (``--sdk-runs N``, 0 to skip)."""
from __future__ import annotations

import argparse
import socket
import statistics
import sys
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


def sdk_first_event(runs: int, interval: float) -> list[float]:
    """Seconds from the sync consumer's receive() to its first event, ``runs`` times."""
    import threading

    from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

    from kafka_wire.eventhubs import connection_string
    from kafka_wire.testing import broker as testing_broker

    saved, testing_broker.SWITCH_INTERVAL = testing_broker.SWITCH_INTERVAL, interval
    took = []
    try:
        with EmulatedBroker(in_memory=True, amqp=True) as b:
            b.create_hub("bench", 1)
            cs = connection_string.build(f"127.0.0.1:{b.amqp_port}", key_name="k", key="a2V5",
                                         emulator=True)
            with EventHubProducerClient.from_connection_string(cs, eventhub_name="bench") as p:
                p.send_batch([EventData(b"x")], partition_id="0")
            for _ in range(runs):
                client = EventHubConsumerClient.from_connection_string(
                    cs, consumer_group="$Default", eventhub_name="bench", load_balancing_interval=1)
                got = threading.Event()
                thread = threading.Thread(target=client.receive, daemon=True, kwargs=dict(
                    on_event=lambda _c, e: e is not None and got.set(), partition_id="0",
                    starting_position="-1", max_wait_time=1))
                started = time.perf_counter()
                thread.start()
                if not got.wait(30):
                    raise RuntimeError("no event in 30 s")
                took.append(time.perf_counter() - started)
                client.close()
                thread.join(15)
    finally:  # (the module's value, for what runs after in this process)
        testing_broker.SWITCH_INTERVAL = saved
    return took


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--sdk-runs", type=int, default=5)
    args = ap.parse_args(argv)
    one(True)  # imports and first-use costs are not what we measure
    for in_memory in (True, False):
        starts, stops = zip(*(one(in_memory) for _ in range(args.runs)))
        label = "in-memory (tmpfs)" if in_memory else "disk temp dir"
        print(f"{label:18} start→ApiVersions median {statistics.median(starts) * 1000:6.1f} ms "
              f"(p90 {sorted(starts)[int(len(starts) * 0.9)] * 1000:.1f}), "
              f"teardown median {statistics.median(stops) * 1000:6.1f} ms over {args.runs} runs")
    if args.sdk_runs:
        from kafka_wire.testing.broker import SWITCH_INTERVAL

        default = sys.getswitchinterval()
        figures = {}
        for interval in (default, SWITCH_INTERVAL, default, SWITCH_INTERVAL):  # alternating
            figures.setdefault(interval, []).extend(sdk_first_event(args.sdk_runs, interval))
        base, lowered = (statistics.median(figures[i]) for i in (default, SWITCH_INTERVAL))
        print(f"azure-eventhub sync receive() to first event, median of {2 * args.sdk_runs}: "
              f"{base * 1000:.0f} ms at a {default * 1000:g} ms switch interval, "
              f"{lowered * 1000:.0f} ms at {SWITCH_INTERVAL * 1000:g} ms (EmulatedBroker's): "
              f"{base / lowered:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
