"""Throughput units are one budget per namespace for AMQP and Kafka: an SDK send over
the quota is settled only after its throttle time (on the broker's virtual clock),
and a Kafka produce after it pays for what the SDK used."""
from __future__ import annotations

import threading

from azure.eventhub import EventData, EventHubProducerClient

from kafka_wire.eventhubs.model import EventHubsModel, Namespace
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.test_quotas import _advance, _produce
from tests.rawclient import RawClient
from tests.unit.log.log_helpers import make_batch




def test_sdk_sends_share_the_namespace_quota_with_kafka(metered):
    broker, clock = metered
    body = b"x" * (700 * 1024)
    with EventHubProducerClient.from_connection_string(broker.amqp_connection_string(),
                                                       eventhub_name="hub") as p:
        p.send_batch([EventData(body)], partition_id="0")  # within the one-second burst
        done = threading.Event()
        thread = threading.Thread(target=lambda: (p.send_batch([EventData(body)], partition_id="0"),
                                                  done.set()), daemon=True)
        thread.start()
        assert not done.wait(2), "the send over the quota was settled before its throttle time"
        _advance(broker, clock, 1000)
        assert done.wait(10), "the send was not settled after its throttle time"
        thread.join(10)
    # The SDK's 1.4 MB drew the bucket down: a Kafka produce now pays too.
    with RawClient(broker.bootstrap_servers) as c:
        answer = _produce(c, make_batch(1, value_size=900 * 1024))
        assert answer.responses[0].partition_responses[0].error_code == 0
        assert answer.throttle_time_ms > 0


def test_a_strict_basic_namespace_takes_amqp_though_it_has_no_kafka_endpoint(tmp_path):
    from kafka_wire.eventhubs.model import Tier

    model = EventHubsModel({"basic-ns": Namespace("basic-ns", Tier.BASIC, mode="strict")}, "basic-ns")
    with EmulatedBroker(tmp_path / "data", eventhubs=model, amqp=True) as broker:
        broker.create_hub("hub", 1)
        sent: list = []

        def send() -> None:
            with EventHubProducerClient.from_connection_string(
                    broker.amqp_connection_string(), eventhub_name="hub", retry_total=0) as p:
                p.send_batch([EventData(b"basic")], partition_id="0")
            sent.append(True)

        # The SDK does not give up on this refusal: a send that never settles fails the test.
        thread = threading.Thread(target=send, daemon=True)
        thread.start()
        thread.join(20)
        assert sent, "the AMQP send was refused (before: 'no Kafka endpoint' on Basic)"
