"""Event Hubs removes each event when its retention has passed since it was
enqueued, whatever the segment size: on the virtual clock, with 1 GiB segments
(so no segment is ever deleted), expired events are served by nothing —
ListOffsets earliest, a Kafka consumer from the beginning, an SDK receiver from
-1 — and a shorter retention applies to the events already stored."""
from __future__ import annotations

from azure.eventhub import EventData, EventHubProducerClient
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import receive
from tests.amqp.test_sdk_python import consumer

HOUR_MS = 3_600_000


def _produce(broker, values: list[bytes]) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for v in values:
        p.produce("kept", v, partition=0)
    assert p.flush(10) == 0


def _earliest_and_values(broker) -> tuple[int, list[bytes]]:
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "retention",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        low, high = c.get_watermark_offsets(TopicPartition("kept", 0), timeout=10)
        c.assign([TopicPartition("kept", 0, 0)])  # below the log start: reset to earliest
        values = []
        while len(values) < high - low:
            m = c.poll(10)
            assert m is not None, "the consumer read nothing"
            if not m.error():
                values.append(m.value())
        return low, values
    finally:
        c.close()


def test_expired_events_are_never_served_with_1_gib_segments(tmp_path):
    with EmulatedBroker(tmp_path / "data", virtual_clock=True, amqp=True) as broker:
        broker.create_hub("kept", 1, configs={"retention.ms": str(HOUR_MS),
                                              "segment.bytes": str(1 << 30)})
        _produce(broker, [b"old-%d" % i for i in range(5)])
        broker.clock.advance(HOUR_MS // 2)
        with EventHubProducerClient.from_connection_string(broker.amqp_connection_string(),
                                                           eventhub_name="kept") as p:
            p.send_batch([EventData(b"new-sdk")], partition_id="0")
        _produce(broker, [b"new-%d" % i for i in range(4)])
        broker.clock.advance(HOUR_MS // 2 + 60_000)  # the old ones are now 61 minutes old

        low, values = _earliest_and_values(broker)
        assert low == 5
        assert values == [b"new-sdk"] + [b"new-%d" % i for i in range(4)]
        got = receive(consumer(broker, "kept"), 5, partition_id="0", starting_position="-1")
        assert [e.body_as_str().encode() for _, e in got] == values

        # A shorter retention applies to what is stored, at the next check (every 30 s).
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        resource = ConfigResource("topic", "kept", set_config={"retention.ms": str(10 * 60_000)})
        admin.alter_configs([resource])[resource].result(10)
        broker.clock.advance(60_000)
        low, values = _earliest_and_values(broker)
        assert (low, values) == (10, [])
