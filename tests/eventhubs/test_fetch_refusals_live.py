"""A consumer in the middle of reading, on the repeated one-partition Fetch path
(server.RepeatedFetch and fetch._one), is refused as soon as its hub is made
Disabled through the management API, and reads on when it is Active again: no
verdict is kept between one Fetch and the next. And that path, taken by any
one-partition Fetch that finds records, asks for the Listen right on the hub."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.eventhubs import connection_string
from tests.amqp.conftest import LISTENER, ROOT, SENDER
from tests.eventhubs.conftest import confluent_conf
from tests.rawclient import RawClient
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



def _fetch(broker, password: str, hub: str, times: int = 3) -> list[tuple[int, int]]:
    """(error code, record bytes) of the one partition in each of ``times`` identical
    one-partition Fetch requests (the first decoded in full, the rest as repeats)."""
    F = codec.request_class(codec.ApiKey.Fetch)
    with RawClient(broker.bootstrap_servers) as client:
        assert client.login(password) == 0
        out = []
        for _ in range(times):
            answer = client.request(codec.ApiKey.Fetch, 11, replica_id=-1, max_wait_ms=0, min_bytes=1,
                                    max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
                                    rack_id="", forgotten_topics_data=[], topics=[F.FetchTopic(
                                        topic=hub, partitions=[F.FetchTopic.FetchPartition(
                                            partition=0, current_leader_epoch=-1, fetch_offset=0,
                                            log_start_offset=-1, partition_max_bytes=1 << 20)])])
            p = answer.responses[0].partitions[0]
            out.append((p.error_code, len(p.records or b"")))
        return out


def test_one_partition_fetches_that_find_records_need_listen_on_the_hub(data_dir):  # noqa: F811
    broker = start(data_dir)
    try:
        root = broker.connection_string(namespace=NS, policy=ROOT[0])
        producer = Producer(confluent_conf(broker.bootstrap_servers, root))
        for hub in ("payments", "orders"):
            producer.produce(hub, b"first " + hub.encode(), partition=0)
        assert producer.flush(30) == 0
        host = f"127.0.0.1:{broker.port}"
        sender = connection_string.build(host, key_name=SENDER[0], key=SENDER[1])
        listener = connection_string.build(host, key_name=LISTENER[0], key=LISTENER[1])
        orders_only = connection_string.build(host, key_name="orders-writer", key="b3JkZXJzLWtleQ==",
                                              entity_path="orders")
        denied = Errors.TopicAuthorizationFailedError.errno
        assert _fetch(broker, sender, "payments") == [(denied, 0)] * 3
        assert _fetch(broker, orders_only, "payments") == [(denied, 0)] * 3
        for password, hub in ((orders_only, "orders"), (listener, "payments"), (root, "payments")):
            got = _fetch(broker, password, hub)
            assert [e for e, _n in got] == [0] * 3 and all(n > 0 for _e, n in got), (hub, got)
    finally:
        broker.stop()
