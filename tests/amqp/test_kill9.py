"""Events an SDK producer had settled survive SIGKILL of the broker, exactly once."""
from __future__ import annotations

import threading
import time

from azure.eventhub import EventData, EventHubProducerClient
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_wire.eventhubs import connection_string
from kafka_wire.testing.ports import free_port

from tests.faults.harness import read_to_end, values



def test_settled_sdk_events_survive_kill_9_exactly_once(broker_process):
    amqp_port = free_port()
    extra = ["--amqp-listen", f"127.0.0.1:{amqp_port}"]
    proc = broker_process(extra=extra)
    admin = AdminClient({"bootstrap.servers": proc.bootstrap_servers})
    admin.create_topics([NewTopic("sdk-durable", 2, 1)])["sdk-durable"].result(15)
    cs = connection_string.build(f"127.0.0.1:{amqp_port}", key_name="RootManageSharedAccessKey",
                                 key="any-key-works", emulator=True)
    settled: dict[int, list[bytes]] = {0: [], 1: []}
    stop = threading.Event()
    failures: list = []

    def produce():
        # No retries: an event whose settlement was lost must not be sent twice.
        with EventHubProducerClient.from_connection_string(cs, eventhub_name="sdk-durable",
                                                           retry_total=0) as p:
            i = 0
            while not stop.is_set():
                bodies = [b"ev-%06d-%d" % (i, j) for j in range(5)]
                try:
                    p.send_batch([EventData(b) for b in bodies], partition_id=str(i % 2))
                    settled[i % 2].extend(bodies)
                except Exception as exc:  # the broker is gone: stop sending
                    failures.append(exc)
                    return
                i += 1

    t = threading.Thread(target=produce, daemon=True)
    t.start()
    deadline = time.monotonic() + 20
    while sum(map(len, settled.values())) < 2_000 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()
    stop.set()
    t.join(30)
    assert sum(map(len, settled.values())) >= 100, "the SDK producer made too little progress"

    restarted = broker_process(port=proc.port, extra=extra)
    stored = values(read_to_end(restarted.bootstrap_servers, "sdk-durable", 2))
    for part in (0, 1):
        got = stored[part]
        assert len(got) == len(set(got)), "duplicate events after recovery"
        positions = {v: i for i, v in enumerate(got)}
        missing = [v for v in settled[part] if v not in positions]
        assert not missing, f"partition {part}: {len(missing)} settled events lost"
        assert [positions[v] for v in settled[part]] == sorted(positions[v] for v in settled[part])
    # The SDK connects again to the restarted broker and goes on.
    with EventHubProducerClient.from_connection_string(cs, eventhub_name="sdk-durable") as p:
        p.send_batch([EventData(b"after")], partition_id="0")
    assert values(read_to_end(restarted.bootstrap_servers, "sdk-durable", 2))[0][-1] == b"after"
    assert restarted.terminate() == 0
