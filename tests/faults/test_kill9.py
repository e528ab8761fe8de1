"""Acknowledged data survives SIGKILL of the broker process."""
from __future__ import annotations

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.faults.harness import AckedWriter, read_to_end, scaled, values


def _read_all(bootstrap: str, topic: str, partitions: int) -> dict[int, list[bytes]]:
    return values(read_to_end(bootstrap, topic, partitions))


def test_acked_records_survive_kill_9_exactly_once_in_order(broker_process):
    proc = broker_process()
    admin = AdminClient({"bootstrap.servers": proc.bootstrap_servers})
    admin.create_topics([NewTopic("durable", 3, 1)])["durable"].result(15)

    writer = AckedWriter(proc.bootstrap_servers, "durable", [0, 1, 2])
    writer.wait_for(scaled(5_000, 20_000), 20)   # acknowledged before the kill (make soak: 20,000)
    proc.kill()
    writer.stop()
    acked = writer.acked
    total_acked = writer.written()
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
