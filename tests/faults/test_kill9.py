"""Acknowledged data survives SIGKILL of the broker process."""
from __future__ import annotations

import threading
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.faults.harness import read_to_end, scaled, values


def _read_all(bootstrap: str, topic: str, partitions: int) -> dict[int, list[bytes]]:
    return values(read_to_end(bootstrap, topic, partitions))


def test_acked_records_survive_kill_9_exactly_once_in_order(broker_process):
    proc = broker_process()
    admin = AdminClient({"bootstrap.servers": proc.bootstrap_servers})
    admin.create_topics([NewTopic("durable", 3, 1)])["durable"].result(15)

    acked: dict[int, list[bytes]] = {0: [], 1: [], 2: []}
    lock = threading.Lock()
    stop = threading.Event()

    def produce():
        # No retries: a record whose ack was lost must not be written twice.
        p = Producer({"bootstrap.servers": proc.bootstrap_servers, "acks": "all", "linger.ms": 2,
                      "message.send.max.retries": 0, "enable.idempotence": False,
                      "message.timeout.ms": 5000})

        def cb(err, msg):
            if err is None:
                with lock:
                    acked[msg.partition()].append(msg.value())
        i = 0
        while not stop.is_set():
            try:
                p.produce("durable", b"rec-%08d" % i, partition=i % 3, on_delivery=cb)
                i += 1
            except BufferError:
                pass
            p.poll(0.001)
        p.flush(10)

    t = threading.Thread(target=produce, daemon=True)
    t.start()
    deadline = time.monotonic() + 20
    target = scaled(5_000, 20_000)   # acknowledged records before the kill (make soak: 20,000)
    while sum(map(len, acked.values())) < target and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()
    stop.set()
    t.join(30)
    total_acked = sum(map(len, acked.values()))
    assert total_acked > 1000, "producer made too little progress before the kill"

    restarted = broker_process(port=proc.port)
    stored = _read_all(restarted.bootstrap_servers, "durable", 3)
    for part in range(3):
        got = stored[part]
        assert len(got) == len(set(got)), "duplicate records after recovery"
        positions = {v: i for i, v in enumerate(got)}
        missing = [v for v in acked[part] if v not in positions]
        assert not missing, f"partition {part}: {len(missing)} acknowledged records lost"
        idx = [positions[v] for v in acked[part]]
        assert idx == sorted(idx), "acknowledged records out of order"
    assert restarted.terminate() == 0


def test_sigterm_shuts_down_cleanly_and_data_persists(broker_process):
    proc = broker_process()
    p = Producer({"bootstrap.servers": proc.bootstrap_servers, "acks": "all",
                  "allow.auto.create.topics": True})
    for i in range(100):
        p.produce("graceful", b"%d" % i)
    assert p.flush(15) == 0
    assert proc.terminate() == 0
    assert "shutting down" in proc.output()
    again = broker_process(port=proc.port)
    assert _read_all(again.bootstrap_servers, "graceful", 1)[0] == [b"%d" % i for i in range(100)]
