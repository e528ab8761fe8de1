"""What the service does where a client leaves something out: a receiver attached
without a filter starts at the beginning of the retained stream, and a connection
idle past the advertised idle timeout is closed with ``amqp:connection:forced``, so
a producer that slept longer than that sends again on a new connection."""
from __future__ import annotations

import time

import pytest
from azure.eventhub import EventData, EventHubProducerClient

from kafka_wire.amqp import connection as amqp_connection
from kafka_wire.testing import EmulatedBroker

from .conftest import sdk_cs, wait_for
from .pyamqp_raw import receive_client


def test_a_receiver_without_a_filter_starts_at_the_beginning_of_the_stream(tmp_path):
    with EmulatedBroker(tmp_path / "data", amqp=True) as broker:
        broker.create_hub("hub", 1)
        with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name="hub") as p:
            p.send_batch([EventData(f"event {i}") for i in range(3)], partition_id="0")
        client = receive_client(broker, "hub/ConsumerGroups/$Default/Partitions/0")
        got: list = []
        with client:
            deadline = time.monotonic() + 20
            while len(got) < 3 and time.monotonic() < deadline:
                got += client.receive_message_batch(max_batch_size=10, timeout=1)
        numbers = [m.message_annotations[b"x-opt-sequence-number"] for m in got]
        assert numbers == [0, 1, 2]
        assert [b"".join(m.data) for m in got] == [b"event 0", b"event 1", b"event 2"]


@pytest.fixture
def short_idle_timeout(monkeypatch):
    monkeypatch.setattr(amqp_connection, "IDLE_TIMEOUT_S", 1.5)
    return 1.5


def test_a_producer_idle_past_the_idle_timeout_sends_again(tmp_path, short_idle_timeout, caplog):
    caplog.set_level("INFO", logger="kafka_wire.amqp.connection")
    with EmulatedBroker(tmp_path / "data", amqp=True) as broker:
        broker.create_hub("hub", 1)
        with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name="hub") as p:
            p.send_batch([EventData(b"before")], partition_id="0")
            # Idle until the broker has closed the connection (nothing sent meanwhile).
            assert wait_for(lambda: any("idle for" in r.getMessage() for r in caplog.records),
                            timeout=short_idle_timeout * 10)
            assert wait_for(lambda: not broker.broker.amqp_server.connections, timeout=10)
            p.send_batch([EventData(b"after")], partition_id="0")
        from confluent_kafka import Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "check"})
        try:
            assert c.get_watermark_offsets(TopicPartition("hub", 0), timeout=10) == (0, 2)
        finally:
            c.close()


def test_the_open_frame_advertises_the_idle_timeout(tmp_path, short_idle_timeout):
    from azure.eventhub._pyamqp import _connection

    seen: list = []
    original = _connection.Connection._incoming_open

    def spy(self, channel, frame):
        seen.append(frame[4])  # idle-time-out, milliseconds
        return original(self, channel, frame)

    _connection.Connection._incoming_open = spy
    try:
        with EmulatedBroker(tmp_path / "data", amqp=True) as broker:
            broker.create_hub("hub", 1)
            with EventHubProducerClient.from_connection_string(sdk_cs(broker),
                                                               eventhub_name="hub") as p:
                p.get_eventhub_properties()
    finally:
        _connection.Connection._incoming_open = original
    assert seen and seen[0] == 1500
