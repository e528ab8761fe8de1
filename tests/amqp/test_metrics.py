"""/metrics counts AMQP traffic beside Kafka's: per partition, and per protocol."""
from __future__ import annotations

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from confluent_kafka import Producer

from kafka_wire.testing import EmulatedBroker
from tests.console.test_http_api import scrape, value

from .conftest import receive, wait_for


def test_metrics_count_both_protocols(tmp_path):
    with EmulatedBroker(tmp_path / "data", amqp=True, http=True) as b:
        b.create_hub("counted", 1)
        cs = b.amqp_connection_string()
        with EventHubProducerClient.from_connection_string(cs, eventhub_name="counted") as p:
            p.send_batch([EventData(f"a{i}") for i in range(3)], partition_id="0")
        k = Producer({"bootstrap.servers": b.bootstrap_servers})
        for i in range(2):
            k.produce("counted", b"k%d" % i, partition=0)
        assert k.flush(10) == 0
        c = EventHubConsumerClient.from_connection_string(
            cs, consumer_group="$Default", eventhub_name="counted", load_balancing_interval=1)
        assert len(receive(c, 5, partition_id="0", starting_position="-1")) == 5

        def counted():
            m = scrape(b)
            return m if value(m, "kafkawire_protocol_events_total", protocol="amqp",
                              direction="out") == 5 else None
        m = wait_for(counted, 10)
        assert m, "AMQP deliveries were not counted"
        assert value(m, "kafkawire_protocol_events_total", protocol="amqp", direction="in") == 3
        assert value(m, "kafkawire_protocol_events_total", protocol="kafka", direction="in") == 2
        assert value(m, "kafkawire_protocol_events_total", protocol="kafka", direction="out") == 0
        assert value(m, "kafkawire_partition_incoming_messages_total", namespace="emulatorNs1",
                     hub="counted", partition=0) == 5
        assert value(m, "kafkawire_partition_outgoing_messages_total", namespace="emulatorNs1",
                     hub="counted", partition=0) == 5
        assert value(m, "kafkawire_protocol_bytes_total", protocol="amqp", direction="in") > 0
