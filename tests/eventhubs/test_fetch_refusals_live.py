"""A consumer in the middle of reading, on the repeated one-partition Fetch path
(server.RepeatedFetch and fetch._one), is refused as soon as its hub is made
Disabled through the management API, and reads on when it is Active again: no
verdict is kept between one Fetch and the next."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.amqp.conftest import ROOT
from tests.eventhubs.conftest import confluent_conf
from tests.rest.test_management import NS, RG, client, data_dir, start  # noqa: F401 (data_dir: fixture)


def test_a_hub_disabled_mid_read_refuses_the_next_fetch(data_dir):  # noqa: F811
    broker = start(data_dir)
    try:
        password = broker.connection_string(namespace=NS, policy=ROOT[0])
        producer = Producer(confluent_conf(broker.bootstrap_servers, password,
                                           **{"linger.ms": 0, "batch.num.messages": 1}))
        for i in range(300):
            producer.produce("orders", b"%d" % i, partition=0)
            producer.poll(0)
        assert producer.flush(30) == 0
        # One record per Fetch and (almost) nothing fetched ahead: each poll asks the broker again.
        consumer = Consumer(confluent_conf(broker.bootstrap_servers, password, **{
            "group.id": "live", "enable.auto.commit": False, "max.partition.fetch.bytes": 1,
            "queued.min.messages": 1, "fetch.queue.backoff.ms": 5, "fetch.wait.max.ms": 50}))
        mgmt = client(broker)
        try:
            consumer.assign([TopicPartition("orders", 0, 0)])
            read = []
            deadline = time.monotonic() + 30
            while len(read) < 100 and time.monotonic() < deadline:
                m = consumer.poll(0.5)
                if m is not None and m.error() is None:
                    read.append(int(m.value()))
            assert read == list(range(100))
            mgmt.event_hubs.create_or_update(RG, NS, "orders", {"properties": {"status": "Disabled"}})
            refused, after = None, 0
            deadline = time.monotonic() + 20
            while refused is None and time.monotonic() < deadline:
                m = consumer.poll(0.5)
                if m is None:
                    continue
                if m.error() is not None:
                    refused = m.error().code()
                else:
                    after += 1
            assert refused == KafkaError.TOPIC_AUTHORIZATION_FAILED
            assert after <= 5  # only what was fetched before the change
            mgmt.event_hubs.create_or_update(RG, NS, "orders", {"properties": {"status": "Active"}})
            more = []
            deadline = time.monotonic() + 30
            while len(more) < 10 and time.monotonic() < deadline:
                m = consumer.poll(0.5)
                if m is not None and m.error() is None:
                    more.append(int(m.value()))
            assert len(more) == 10 and more[0] > 99
        finally:
            consumer.close()
    finally:
        broker.stop()
