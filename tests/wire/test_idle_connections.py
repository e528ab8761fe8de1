"""connections_max_idle_ms: a connection without traffic for that long is
closed (Kafka's connections.max.idle.ms, Event Hubs' 240 s); one that keeps
talking, or waits on a long-poll Fetch, stays; clients reconnect and go on."""
from __future__ import annotations

import time

import pytest

from kafka_wire import codec
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

IDLE_MS = 1000  # ten times the busy client's pause: a stalled test thread does not trip it


@pytest.fixture(scope="module")
def broker():
    with EmulatedBroker(in_memory=True, connections_max_idle_ms=IDLE_MS) as b:
        b.create_hub("idle", 1)
        yield b


def _api_versions(c: RawClient) -> None:
    assert c.request(codec.ApiKey.ApiVersions, 0).error_code == 0


def test_an_idle_connection_is_closed_and_a_busy_one_is_not(broker):
    with RawClient(broker.bootstrap_servers) as idle, RawClient(broker.bootstrap_servers) as busy:
        _api_versions(idle)
        deadline = time.monotonic() + 2.5 * IDLE_MS / 1000
        while time.monotonic() < deadline:
            _api_versions(busy)
            time.sleep(IDLE_MS / 10_000)
        assert idle.is_closed(timeout=0.1), "idle past connections_max_idle_ms: closed"
        _api_versions(busy)


def test_a_long_poll_fetch_is_not_idle(broker):
    Req = codec.request_class(codec.ApiKey.Fetch)
    T = Req.FetchTopic
    wait_ms = 2 * IDLE_MS
    with RawClient(broker.bootstrap_servers) as c:
        started = time.monotonic()
        answer = c.request(codec.ApiKey.Fetch, 11, replica_id=-1, max_wait_ms=wait_ms, min_bytes=1,
                           max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
                           topics=[T(topic="idle", partitions=[T.FetchPartition(
                               partition=0, current_leader_epoch=-1, fetch_offset=0,
                               log_start_offset=-1, partition_max_bytes=1 << 20)])],
                           forgotten_topics_data=[], rack_id="")
        assert time.monotonic() - started >= wait_ms / 1000 * 0.9
        assert answer.responses[0].partitions[0].error_code == 0
        _api_versions(c)


def test_clients_reconnect_after_an_idle_close(broker):
    from confluent_kafka import Consumer, Producer, TopicPartition

    # A short reconnect backoff: with a 1 s idle limit librdkafka reconnects often.
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0,
                         "reconnect.backoff.max.ms": 500, "log_level": 2})
    for i in range(2):
        producer.produce("idle", f"v{i}".encode())
        assert producer.flush(10) == 0
        time.sleep(2 * IDLE_MS / 1000)  # the broker drops the connection meanwhile
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "idle-g",
                         "enable.auto.commit": False, "log_level": 2})
    try:
        consumer.assign([TopicPartition("idle", 0, 0)])
        got = []
        deadline = time.monotonic() + 20
        while len(got) < 2 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got.append(msg.value())
        assert got == [b"v0", b"v1"]
    finally:
        consumer.close()


def test_zero_disables_the_idle_close():
    with EmulatedBroker(in_memory=True, connections_max_idle_ms=0) as b:
        assert b.broker.server._sweeper is None
        with RawClient(b.bootstrap_servers) as c:
            _api_versions(c)
            time.sleep(0.3)
            _api_versions(c)
