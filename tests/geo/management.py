"""Pieces of the management-session tests (test_geo_dr, test_geo_management,
test_geo_console; wait_for also test_geo_sdk_failover): a broker with TLS, HTTP and AMQP on an inline TOML config, an
azure-mgmt-eventhub client as the subscription's owner, a Kafka producer and
reader of hub ``orders``, and a wait on a condition."""
from __future__ import annotations

import time
from pathlib import Path

from azure.mgmt.eventhub import EventHubManagementClient
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import confluent_conf
from tests.rest.test_management import SUB, OwnerCredential


def start(tmp_path: Path, toml: str, name: str) -> EmulatedBroker:
    """A started broker of ``toml`` (written to tmp_path/name) over Kafka, AMQP, HTTP and HTTPS."""
    config = tmp_path / name
    config.write_text(toml)
    return EmulatedBroker(tmp_path / "data", config_file=config, tls=True, http=True, amqp=True).start()


def owner(broker, **kwargs) -> EventHubManagementClient:
    """azure-mgmt-eventhub over HTTPS with the subscription's token (kwargs: the client's)."""
    return EventHubManagementClient(OwnerCredential(broker.subscription_token), SUB, base_url=broker.https_url,
                                    connection_verify=str(broker.ca_file), **kwargs)


def kafka_send(broker, password: str, values: list[bytes], timeout_ms: int = 20000) -> None:
    """Each value to partition 0 of ``orders``, every one acknowledged."""
    acks: list = []
    p = Producer(confluent_conf(broker.bootstrap_servers, password, **{"message.timeout.ms": timeout_ms}))
    for v in values:
        p.produce("orders", v, partition=0, on_delivery=lambda err, msg: acks.append(err))
    p.flush(timeout_ms / 1000 + 10)
    assert acks == [None] * len(values), acks


def kafka_read(broker, password: str, partition: int = 0, group: str = "geo-reader") -> list[bytes]:
    """What a partition of ``orders`` holds, read by a Kafka consumer."""
    c = Consumer(confluent_conf(broker.bootstrap_servers, password, **{
        "group.id": group, "enable.auto.commit": False}))
    try:
        c.assign([TopicPartition("orders", partition, 0)])
        _, high = c.get_watermark_offsets(TopicPartition("orders", partition), timeout=10)
        got: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(got) < high and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.value())
        return got
    finally:
        c.close()


def wait_for(predicate, what: str = "", timeout: float = 30.0):
    """predicate's first true value, polled every 50 ms; AssertionError naming ``what``
    after timeout s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out ({timeout} s) waiting for {what or predicate}")
