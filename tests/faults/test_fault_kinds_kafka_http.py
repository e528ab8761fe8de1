"""The storage, availability and slow-HTTP fault kinds as Kafka clients (librdkafka)
and HTTP clients meet them (kafka_wire.fault_plan; docs/faults.md):

- append-fail: a Produce answers KAFKA_STORAGE_ERROR (56) for the partition, as a full
  disk does (tests/faults/test_disk_full.py); librdkafka retries it (retriable) and
  delivers once, in order; with no retries the delivery report carries the error. REST
  send and the console's send get 503.
- append-slow: the Produce answer (and so the delivery report) comes ms late; another
  producer meanwhile is not held.
- partition-unavailable: NOT_LEADER_OR_FOLLOWER while it fires; librdkafka retries
  through the window and delivers once, in order.
- http-slow: a REST send and a management read answered ms late (the send is stored).
"""
from __future__ import annotations

import threading
import time

import pytest
import requests
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import confluent_conf
from tests.faults.harness import contoso_broker
from tests.rest.test_send import post

_hubs = iter(range(1_000_000))
MGMT = ("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/"
        "Microsoft.EventHub/namespaces/contoso/eventhubs/orders?api-version=2024-01-01")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with contoso_broker(tmp_path_factory.mktemp("faultkinds")) as b:
        yield b


pytestmark = pytest.mark.usefixtures("no_faults")


@pytest.fixture
def hub(broker) -> str:
    name = f"kinds-{next(_hubs)}"
    broker.create_hub(name, 1)
    return name


def conf(broker, **extra) -> dict:
    return confluent_conf(broker.bootstrap_servers, broker.connection_string(), **extra)


def produce(broker, hub: str, values, **extra) -> list:
    producer = Producer(conf(broker, **{"linger.ms": 0, **extra}))
    reports: list = []
    for v in values:
        producer.produce(hub, str(v).encode(), partition=0,
                         on_delivery=lambda err, msg: reports.append(err))
        producer.flush(30)  # one request each: the fault meets the one it is set for
    return reports


def read(broker, hub: str, count: int) -> list[str]:
    consumer = Consumer(conf(broker, **{"group.id": f"check-{hub}", "enable.auto.commit": False}))
    consumer.assign([TopicPartition(hub, 0, 0)])
    values: list[str] = []
    deadline = time.monotonic() + 20
    while len(values) < count and time.monotonic() < deadline:
        msg = consumer.poll(1)
        if msg is not None and not msg.error():
            values.append(msg.value().decode())
    lo, hi = consumer.get_watermark_offsets(TopicPartition(hub, 0), timeout=10)
    consumer.close()
    assert hi == count, (hi, values)
    return values


@pytest.mark.parametrize("error", ["disk-full", "io-error"])
def test_a_failed_append_is_kafka_storage_error_and_librdkafka_retries_it(broker, hub, error):
    broker.faults.add("append-fail", scope={"hub": hub, "partition": 0}, params={"error": error})
    assert produce(broker, hub, range(3), **{"retry.backoff.ms": 50}) == [None] * 3
    fired = broker.faults.fired
    assert [(f["kind"], f["target"]["protocol"]) for f in fired] == [("append-fail", "kafka")]
    assert read(broker, hub, 3) == ["0", "1", "2"]  # once each, in order


def test_without_retries_the_delivery_report_carries_kafka_storage_error(broker, hub):
    broker.faults.add("append-fail", scope={"hub": hub})
    reports = produce(broker, hub, range(2), **{"message.send.max.retries": 0,
                                                "enable.idempotence": False})
    assert reports[0] is not None and reports[0].code() == KafkaError.KAFKA_STORAGE_ERROR
    assert reports[1] is None
    assert read(broker, hub, 1) == ["1"]


def test_a_slow_append_delays_its_producer_only(broker, hub):
    other = f"{hub}-other"
    broker.create_hub(other, 1)
    assert produce(broker, hub, [0]) == [None] and produce(broker, other, [0]) == [None]
    broker.faults.add("append-slow", scope={"hub": hub}, params={"ms": 2500})
    took: list[float] = []

    def slow() -> None:
        started = time.monotonic()
        assert produce(broker, hub, [1]) == [None]
        took.append(time.monotonic() - started)
    thread = threading.Thread(target=slow)
    thread.start()
    deadline = time.monotonic() + 10
    while not broker.faults.fired and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    assert produce(broker, other, [1, 2]) == [None, None]
    quick = time.monotonic() - started
    thread.join(30)
    assert took and took[0] >= 2.4 and quick < 2.0, (took, quick)
    assert read(broker, hub, 2) == ["0", "1"]


def test_an_unavailable_partition_is_retried_through_its_window(broker, hub):
    broker.faults.add("partition-unavailable", scope={"hub": hub, "partition": 0}, count=1000,
                      for_ms=1500)
    started = time.monotonic()
    assert produce(broker, hub, range(3), **{"retry.backoff.ms": 100}) == [None] * 3
    assert time.monotonic() - started >= 1.4
    fired = broker.faults.fired
    assert fired and {(f["kind"], f["target"]["protocol"]) for f in fired} == {
        ("partition-unavailable", "kafka")}
    assert read(broker, hub, 3) == ["0", "1", "2"]


def test_rest_send_of_a_failed_append_gets_503(broker):
    broker.faults.add("append-fail", scope={"hub": "payments"}, params={"error": "io-error"})
    first = post(broker, "/payments/messages", b"x")
    assert first.status_code == 503 and "Input/output error" in first.text
    assert post(broker, "/payments/messages", b"x").status_code == 201
    assert broker.faults.fired[0]["target"]["protocol"] == "https"


def test_the_console_send_of_a_failed_append_gets_503(tmp_path):
    with EmulatedBroker(tmp_path / "data", http=True) as b:
        b.create_hub("orders", 1)
        ns = requests.get(f"{b.http_url}/api/namespaces", timeout=10).json()
        name = (ns["namespaces"] if isinstance(ns, dict) else ns)[0]
        name = name["name"] if isinstance(name, dict) else name
        url = f"{b.http_url}/api/namespaces/{name}/hubs/orders/events"
        b.faults.add("append-fail", scope={"hub": "orders"})
        refused = requests.post(url, json={"body": "x"}, timeout=10)
        assert refused.status_code == 503 and "No space left" in refused.json()["error"]
        assert requests.post(url, json={"body": "x"}, timeout=10).status_code == 201
        assert b.faults.fired[0]["target"]["protocol"] == "console"


def test_slow_http_answers_rest_send_and_management_late(broker):
    broker.faults.add("http-slow", scope={"hub": "orders"}, count=2, params={"ms": 1500})
    started = time.monotonic()
    assert post(broker, "/orders/messages", b"x").status_code == 201
    assert time.monotonic() - started >= 1.4
    started = time.monotonic()
    mgmt = requests.get(f"{broker.http_url}{MGMT}", timeout=30,
                        headers={"Authorization": f"Bearer {broker.subscription_token}"})
    assert mgmt.status_code == 200 and time.monotonic() - started >= 1.4
    started = time.monotonic()
    assert post(broker, "/orders/messages", b"x").status_code == 201
    assert time.monotonic() - started < 1.0  # the count ran out
    assert [f["target"]["protocol"] for f in broker.faults.fired] == ["http-send", "http-management"]


def test_a_slow_http_answer_does_not_hold_other_requests(broker):
    broker.faults.add("http-slow", scope={"hub": "orders"}, params={"ms": 3000})
    result: list = []
    thread = threading.Thread(target=lambda: result.append(post(broker, "/orders/messages", b"x")))
    thread.start()
    deadline = time.monotonic() + 10
    while not broker.faults.fired and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    assert post(broker, "/payments/messages", b"y").status_code == 201
    assert time.monotonic() - started < 2.0
    thread.join(30)
    assert result and result[0].status_code == 201
