"""Sending over HTTP with `requests`, as the Event Hubs REST API: single events,
batches, to a partition and as a publisher; read back by Kafka consumers and by
the Azure SDK; and every refusal with the service's status and error body."""
from __future__ import annotations

import json
import threading
import time

import pytest
import requests
from confluent_kafka import Consumer, TopicPartition

from kafka_wire.eventhubs import sas
from kafka_wire.eventhubs.partition_key import partition_for_key
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import LISTENER, MULTI_TOML, ROOT, SENDER, receive
from tests.amqp.test_cross_protocol import kafka_password, kafka_read
from tests.amqp.test_sdk_python import consumer
from tests.eventhubs.conftest import confluent_conf
from tests.eventhubs.test_quotas import _produce
from tests.rawclient import RawClient
from tests.unit.log.log_helpers import make_batch

HOST = "contoso.servicebus.windows.net"
BATCH = "application/vnd.microsoft.servicebus.json"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("rest") / "data", config_file=MULTI_TOML,
                        amqp=True, http=True) as b:
        yield b


def token(policy=ROOT, hub: str | None = None, publisher: str | None = None, ttl: int = 600) -> str:
    return sas.generate(sas.resource_uri(HOST, hub, publisher), policy[0], policy[1],
                        int(time.time()) + ttl)


def post(broker, path: str, body, *, auth: str | None = "root", batch: bool = False,
         headers: dict | None = None) -> requests.Response:
    h = {"Host": HOST, **(headers or {})}
    if auth == "root":
        h["Authorization"] = token()
    elif auth is not None:
        h["Authorization"] = auth
    if batch:
        h["Content-Type"] = BATCH
        body = json.dumps(body)
    return requests.post(f"{broker.http_url}{path}", data=body, headers=h, timeout=30)


def test_single_events_by_key_and_to_a_partition(broker):
    hub = "orders"
    r = post(broker, f"/{hub}/messages", b"keyed \xe2\x9c\x93",
             headers={"BrokerProperties": json.dumps({"PartitionKey": "customer-7"})})
    assert r.status_code == 201, r.text
    p = partition_for_key("customer-7", 2)
    got = [m for m in kafka_read(broker, hub, p, 1) if m.key() == b"customer-7"]
    assert [m.value() for m in got] == [b"keyed \xe2\x9c\x93"]
    r = post(broker, f"/{hub}/partitions/1/messages", b"to partition 1")
    assert r.status_code == 201, r.text
    assert b"to partition 1" in [m.value() for m in read_stored(broker, hub, 1)]


def test_a_batch_with_properties_reaches_kafka_and_the_sdk_typed(broker):
    hub = "payments"
    events = [{"Body": f"pay-{i}", "UserProperties": {"n": i, "kind": "card", "ok": True, "x": 1.5}}
              for i in range(3)]
    r = post(broker, f"/{hub}/messages", events, batch=True)
    assert r.status_code == 201, r.text
    got = kafka_read(broker, hub, 0, 3)
    assert [m.value() for m in got] == [b"pay-0", b"pay-1", b"pay-2"]
    assert [name for name, _ in got[0].headers()] == ["n", "kind", "ok", "x"]
    received = receive(consumer(broker, hub), 3, partition_id="0", starting_position="-1")
    assert [e.properties for _, e in received] == [
        {b"n": i, b"kind": b"card", b"ok": True, b"x": 1.5} for i in range(3)]


def test_a_publisher_sends_under_its_own_name_only(broker):
    hub = "orders"
    mine = token(SENDER, hub, "device-1")
    r = post(broker, f"/{hub}/publishers/device-1/messages", b"from device-1", auth=mine)
    assert r.status_code == 201, r.text
    p = partition_for_key("device-1", 2)
    assert [m.key() for m in read_stored(broker, hub, p)
            if m.value() == b"from device-1"] == [b"device-1"]
    r = post(broker, f"/{hub}/publishers/device-2/messages", b"spoofed", auth=mine)
    assert r.status_code == 403 and "<Code>403</Code>" in r.text


def test_a_publisher_send_is_stamped_x_opt_publisher_for_receivers(broker):
    # As over AMQP: receivers see the publisher the event came through (it was missing).
    hub = "orders"
    r = post(broker, f"/{hub}/publishers/device-5/messages",
             [{"Body": "stamped-0", "UserProperties": {"n": 1}}, {"Body": "stamped-1"}], batch=True,
             auth=token(SENDER, hub, "device-5"))
    assert r.status_code == 201, r.text
    p = partition_for_key("device-5", 2)
    stored = len(read_stored(broker, hub, p))  # (other tests' events too)
    received = receive(consumer(broker, hub), stored, partition_id=str(p), starting_position="-1")
    got = [e for _, e in received if e.body_as_str().startswith("stamped-")]
    assert [e.body_as_str() for e in got] == ["stamped-0", "stamped-1"]
    assert [(e.system_properties.get(b"x-opt-publisher"), e.partition_key) for e in got] == \
        [(b"device-5", b"device-5")] * 2
    assert got[0].properties == {b"n": 1}
    kafka = [m for m in read_stored(broker, hub, p) if m.value() == b"stamped-1"]
    assert [m.key() for m in kafka] == [b"device-5"]


@pytest.mark.parametrize("events", [
    [{"Body": "a", "BrokerProperties": {"PartitionKey": "device-2"}}],   # another publisher's key
    [{"Body": "a"}, {"Body": "b", "BrokerProperties": {"PartitionKey": "DEVICE-1"}}],  # keys are exact
], ids=["other-key", "case-of-the-key"])
def test_a_publisher_event_keyed_otherwise_fails_the_send(broker, events):
    # It was re-keyed to the publisher and stored, where AMQP and Kafka refuse it.
    hub = "orders"
    before = _end_offsets(broker, hub)
    r = post(broker, f"/{hub}/publishers/device-1/messages", events, batch=True,
             auth=token(SENDER, hub, "device-1"))
    assert r.status_code == 403 and "device-1" in r.text, r.text
    assert _end_offsets(broker, hub) == before
    # Through the path's other spelling, unkeyed events take the token's name.
    body = f"spelled-{len(events)}"
    r = post(broker, f"/{hub}/Publishers/DEVICE-1/messages", [{"Body": body}], batch=True,
             auth=token(SENDER, hub, "device-1"))
    assert r.status_code == 201, r.text
    p = partition_for_key("device-1", 2)
    assert [m.key() for m in read_stored(broker, hub, p)
            if m.value() == body.encode()] == [b"device-1"]


# Tokens are made when the test runs, not when the module is collected: a long suite
# reaches this test after a collection-time token's lifetime has run out.
REFUSED = {
    "no-token": lambda: None,
    "wrong-key": lambda: sas.generate(sas.resource_uri(HOST, "orders"), ROOT[0], "d3Jvbmc=",
                                      int(time.time()) + 600),
    "expired": lambda: sas.generate(sas.resource_uri(HOST, "orders"), ROOT[0], ROOT[1],
                                    int(time.time()) - 3600),  # past the skew allowed
    "listen-only": lambda: token(LISTENER),
}


@pytest.mark.parametrize("kind, why", [
    ("no-token", "requires authentication"),
    ("wrong-key", "signature"),
    ("expired", "expired"),
    ("listen-only", "does not grant Send"),
], ids=["no-token", "wrong-key", "expired", "listen-only"])
def test_refused_tokens_are_401(broker, kind, why):
    auth = REFUSED[kind]()
    r = post(broker, "/orders/messages", b"nope", auth=auth)
    assert r.status_code == 401 and why in r.text


@pytest.mark.parametrize("path, body, batch, status", [
    ("/orders/messages", "[not json", False, 400),
    ("/orders/messages", {"Body": "not an array"}, True, 400),
    ("/orders/messages", [{"NoBody": 1}], True, 400),
    ("/orders/messages", [{"Body": "x", "UserProperties": {"nested": {"a": 1}}}], True, 400),
    ("/orders/messages", [], True, 400),
    ("/orders/partitions/9/messages", b"x", False, 404),
    ("/missing/messages", b"x", False, 404),
    ("/orders/messages", b"x" * (1024 * 1024 + 1), False, 413),
], ids=["bad-json", "not-array", "no-body", "nested-property", "empty", "no-partition",
        "no-hub", "too-large"])
def test_bad_sends_get_the_service_status_and_store_nothing(broker, path, body, batch, status):
    before = _end_offsets(broker, "orders")
    if path.endswith("messages") and batch is False and isinstance(body, str):
        r = post(broker, path, body.encode(), headers={"Content-Type": BATCH})
    else:
        r = post(broker, path, body, batch=batch)
    assert r.status_code == status, r.text
    assert r.text.startswith(f"<Error><Code>{status}</Code>")
    assert _end_offsets(broker, "orders") == before
    assert post(broker, "/orders/partitions/0/messages", b"still serving").status_code == 201


def read_stored(broker, hub: str, partition: int) -> list:
    """Every record the partition holds now, read by a Kafka consumer up to its end offset
    (a send is answered once stored), instead of polling out a fixed timeout for more."""
    end = _end_offsets(broker, hub)[partition]
    got = kafka_read(broker, hub, partition, end)
    assert len(got) == end, f"read {len(got)} of the {end} records stored"
    return got


def _end_offsets(broker, hub: str) -> list[int]:
    c = Consumer(confluent_conf(broker.bootstrap_servers, kafka_password(broker), **{"group.id": "offsets"}))
    try:
        return [c.get_watermark_offsets(TopicPartition(hub, p), timeout=10)[1] for p in range(2)]
    finally:
        c.close()




def test_throttled_sends_wait_and_long_throttles_are_503(metered):
    broker, clock = metered
    url = f"{broker.http_url}/hub/messages"
    body = b"x" * (700 * 1024)
    assert requests.post(url, data=body, timeout=10).status_code == 201  # within the burst
    answers: list = []
    thread = threading.Thread(target=lambda: answers.append(requests.post(url, data=body, timeout=30)),
                              daemon=True)
    thread.start()
    thread.join(2)
    assert not answers, "the send over the quota was answered before its throttle time"
    clock.advance_threadsafe(broker._loop, 1000).result(5)
    thread.join(10)
    assert answers and answers[0].status_code == 201
    for _ in range(2):  # Kafka traffic: 70,000 events against 1,000 events/s
        with RawClient(broker.bootstrap_servers) as c:
            assert _produce(c, make_batch(35_000, value_size=1), timeout_ms=120_000) \
                .responses[0].partition_responses[0].error_code == 0
    r = requests.post(url + "?timeout=60", data=b"late", timeout=10)
    assert r.status_code == 503 and "throughput unit" in r.text


def test_https_send_with_the_brokers_ca(tmp_path):
    with EmulatedBroker(tmp_path / "data", tls=True, http=True) as broker:
        broker.create_hub("secure", 1)
        r = requests.post(f"{broker.https_url}/secure/partitions/0/messages", data=b"over tls",
                          verify=str(broker.ca_file), timeout=10)
        assert r.status_code == 201, r.text
        assert requests.get(f"{broker.https_url}/health", verify=str(broker.ca_file),
                            timeout=10).json()["status"] == "healthy"
        with pytest.raises(requests.exceptions.SSLError):  # not without the CA
            requests.post(f"{broker.https_url}/secure/messages", data=b"x", timeout=10)


def test_a_batch_over_two_partitions_is_refused_whole_or_appended_whole(metered):
    """Admission sees the whole publication: a batch whose second partition's events would
    overrun the throughput units leaves the first partition unchanged too."""
    broker, _clock = metered
    broker.create_hub("two", 2)
    keys = {}
    for i in range(20):
        keys.setdefault(partition_for_key(f"k{i}", 2), f"k{i}")
    events = [{"Body": "e", "BrokerProperties": {"PartitionKey": keys[i % 2]}} for i in range(1500)]
    local = {"Host": "localhost"}  # the metered namespace is the default one
    r = post(broker, "/two/messages?timeout=0", events, auth=None, batch=True, headers=local)
    assert r.status_code == 503 and "throughput unit" in r.text, r.text

    def ends():
        topics = broker.broker.services.default.topics
        return [topics.log("two", p).log_end_offset for p in (0, 1)]

    assert broker.call(ends) == [0, 0]
    r = post(broker, "/two/messages?timeout=0", events[:400], auth=None, batch=True, headers=local)
    assert r.status_code == 201, r.text
    assert broker.call(ends) == [200, 200]
