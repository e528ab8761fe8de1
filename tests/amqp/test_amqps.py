"""AMQPS: the SDKs over TLS, on the Kafka TLS listener's certificate."""
from __future__ import annotations

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

from kafka_wire.eventhubs import connection_string
from kafka_wire.testing import EmulatedBroker

from .conftest import receive


def test_sdk_over_amqps_with_the_brokers_ca(tmp_path):
    with EmulatedBroker(tmp_path / "data", amqp=True, tls=True) as broker:
        broker.create_hub("secure", 1)
        parsed = connection_string.parse(broker.connection_string())
        # No UseDevelopmentEmulator: the SDK speaks TLS to the endpoint, which
        # custom_endpoint_address points at the AMQPS port; the CA is the broker's.
        cs = connection_string.build("localhost", key_name=parsed.key_name, key=parsed.key)
        tls = dict(custom_endpoint_address=f"sb://localhost:{broker.amqps_port}",
                   connection_verify=str(broker.ca_file))
        with EventHubProducerClient.from_connection_string(cs, eventhub_name="secure", **tls) as p:
            p.send_batch([EventData("over tls")], partition_id="0")
            assert p.get_partition_ids() == ["0"]
        c = EventHubConsumerClient.from_connection_string(
            cs, consumer_group="$Default", eventhub_name="secure", load_balancing_interval=1, **tls)
        got = receive(c, 1, partition_id="0", starting_position="-1")
        assert [e.body_as_str() for _, e in got] == ["over tls"]
