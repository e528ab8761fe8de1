"""A transfer the broker refuses reaches the SDK as its own error, at once: the
rejected outcome carries every field of its error (pyamqp indexes them), so the
send raises instead of waiting forever. Each send runs in a thread with a
bounded wait, so a hang fails the test rather than the run."""
from __future__ import annotations

import threading

import pytest
from azure.eventhub import EventData, EventHubProducerClient
from azure.eventhub.exceptions import EventDataSendError, EventHubError

from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.test_quotas import _produce
from tests.rawclient import RawClient
from tests.unit.log.log_helpers import make_batch


def outcome(broker, hub: str, send, timeout: float = 30.0):
    """What ``send(producer)`` ends with: None, or the exception it raised."""
    result: list = []

    def run() -> None:
        try:
            with EventHubProducerClient.from_connection_string(
                    broker.amqp_connection_string(), eventhub_name=hub, retry_total=0) as p:
                send(p)
            result.append(None)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            result.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert result, f"the send neither settled nor failed in {timeout} s"
    return result[0]


def test_an_oversized_message_is_refused_and_the_link_keeps_sending(tmp_path):
    with EmulatedBroker(tmp_path / "data", amqp=True) as broker:
        broker.create_hub("hub", 1)
        sent: list = []

        def send(p) -> None:
            # A client that ignores the attach's max-message-size (the SDK itself checks it).
            p.create_batch()
            p._max_message_size_on_link = 4 * 1024 * 1024
            big = p.create_batch(max_size_in_bytes=4 * 1024 * 1024, partition_id="0")
            big.add(EventData(b"x" * (2 * 1024 * 1024)))
            with pytest.raises(EventDataSendError, match="message-size-exceeded|MessageSizeExceeded"):
                p.send_batch(big)
            p.send_batch([EventData(b"small")], partition_id="0")
            sent.append(True)

        assert outcome(broker, "hub", send) is None and sent
        assert _watermarks(broker, "hub") == (0, 1)  # only the small event was stored


def _watermarks(broker, hub: str) -> tuple[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "watermarks"})
    try:
        return c.get_watermark_offsets(TopicPartition(hub, 0), timeout=10)
    finally:
        c.close()




def test_a_send_over_the_throughput_units_for_too_long_is_server_busy(metered):
    broker, _ = metered
    # Kafka traffic puts the namespace 69 s into its 1,000 events/s (the clock stands still):
    # an SDK send would wait longer than its operation timeout, so it is refused.
    for _ in range(2):  # under max.message.bytes each; a throttled connection is muted
        with RawClient(broker.bootstrap_servers) as c:
            answer = _produce(c, make_batch(35_000, value_size=1), timeout_ms=120_000)
            assert answer.responses[0].partition_responses[0].error_code == 0
    assert answer.throttle_time_ms > 0  # (reported throttles are capped at 30 s)
    error = outcome(broker, "hub", lambda p: p.send_batch([EventData(b"late")], partition_id="0"))
    assert isinstance(error, EventHubError) and "server-busy" in str(error)


def test_a_send_to_a_hub_deleted_under_the_producer_fails(tmp_path):
    from confluent_kafka.admin import AdminClient

    with EmulatedBroker(tmp_path / "data", amqp=True) as broker:
        broker.create_hub("doomed", 1)

        def send(p) -> None:
            p.send_batch([EventData(b"before")], partition_id="0")
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            admin.delete_topics(["doomed"])["doomed"].result(10)
            p.send_batch([EventData(b"after")], partition_id="0")

        error = outcome(broker, "doomed", send)
        assert isinstance(error, EventHubError) and "deleted" in str(error)
