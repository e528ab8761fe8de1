"""Event hub names are case-insensitive on Event Hubs (the service "has been confirmed to be
agnostic to case for concepts like the name of an Event Hub and consumer group",
azure-sdk-for-net#8289): an AMQP or HTTPS client may name hub 'Orders' as 'orders' or
'ORDERS', and reaches that one hub, whose own name is kept for everything after (its log,
rights, checkpoints). Kafka's topic names stay case-sensitive."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from azure.eventhub import EventData
from azure.eventhub.exceptions import AuthenticationError, ConnectError, EventHubError
from confluent_kafka import Consumer, KafkaError, TopicPartition

from kafka_wire.eventhubs import connection_string, sas
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import confluent_conf

from .conftest import ROOT, receive, sdk_cs
from .test_cross_protocol import kafka_password, kafka_read
from .test_sdk_python import consumer, producer

HOST = "contoso.servicebus.windows.net"
WRITER = ("orders-writer", "b3JkZXJzLWtleQ==")
CONFIG = """
default_namespace = "contoso"

[namespaces.contoso]
tier = "Standard"

[namespaces.contoso.policies.RootManageSharedAccessKey]
primary_key = "cm9vdC1rZXktMQ=="
rights = ["Manage", "Send", "Listen"]

[namespaces.contoso.eventhubs.Orders]
partitions = 2
consumer_groups = ["Billing"]

[namespaces.contoso.eventhubs.Orders.policies.orders-writer]
primary_key = "b3JkZXJzLWtleQ=="
rights = ["Send", "Listen"]

[namespaces.contoso.eventhubs.payments]
partitions = 1

[namespaces.contoso.eventhubs.k-hub]
partitions = 1
"""


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    root = tmp_path_factory.mktemp("hub-any-case")
    (root / "kafka-wire.toml").write_text(CONFIG)
    with EmulatedBroker(root / "data", config_file=root / "kafka-wire.toml", amqp=True, http=True) as b:
        yield b


def kafka_consumer(broker, **conf) -> Consumer:
    return Consumer(confluent_conf(broker.bootstrap_servers, kafka_password(broker), **{
        "group.id": f"read-{time.monotonic_ns()}", "enable.auto.commit": False, **conf}))


def log_ends(broker) -> dict[tuple[str, int], int]:
    """Every partition's end offset, as a Kafka client asks for it."""
    c = kafka_consumer(broker)
    try:
        return {(hub, p): c.get_watermark_offsets(TopicPartition(hub, p), timeout=15)[1]
                for hub, partitions in (("Orders", 2), ("payments", 1), ("k-hub", 1))
                for p in range(partitions)}
    finally:
        c.close()


def token(hub: str | None, policy=ROOT, ttl: int = 600) -> str:
    return sas.generate(sas.resource_uri(HOST, hub), policy[0], policy[1], int(time.time()) + ttl)


def side_by_side(work, items) -> list:
    """``work(item)`` for each item, in threads: each opens its own SDK client (most of a
    second of the SDK's polling), independent of the others; a raise is re-raised here."""
    with ThreadPoolExecutor(len(items)) as pool:
        return list(pool.map(work, items))


def test_the_sdk_names_the_hub_in_any_case_and_reaches_that_one_hub(broker):
    names = ("orders", "ORDERS", "oRdErS", "Orders")

    def through(name):
        with producer(broker, name, retry_total=0) as p:
            props = p.get_eventhub_properties()
            assert props["eventhub_name"] == "Orders" and props["partition_ids"] == ["0", "1"]
            assert p.get_partition_properties("1")["eventhub_name"] == "Orders"
            p.send_batch([EventData(f"via {name}")], partition_id="1")
    side_by_side(through, names)
    # one log, the hub's own: a Kafka reader of 'Orders' has every event, once (sent side
    # by side, in no set order)
    stored = [m.value().decode() for m in kafka_read(broker, "Orders", 1, 4)]
    assert sorted(stored) == sorted(f"via {n}" for n in names)
    # a receiver naming hub and consumer group in other cases reads the same partition
    got = receive(consumer(broker, "ORDERS", group="billing", retry_total=0), 4,
                  partition_id="1", starting_position="-1")
    assert [e.body_as_str() for _, e in got] == stored


def test_a_token_scoped_to_the_hub_in_another_case_is_good_for_it(broker):
    # the hub's own policy, its token's resource in lower case: the service compares
    # entity paths without case, so this is the hub's token
    signature = token("orders", WRITER)
    with producer_for(broker, "ORDERS", signature) as p:
        p.send_batch([EventData("scoped")], partition_id="0")
    ends = log_ends(broker)
    assert b"scoped" in [m.value() for m in kafka_read(broker, "Orders", 0, ends[("Orders", 0)])]
    # a token scoped to another hub is not
    other = token("payments")
    before = log_ends(broker)
    with producer_for(broker, "orders", other) as p:
        with pytest.raises(EventHubError, match="is not granted"):
            p.send_batch([EventData("no")], partition_id="0")
    assert log_ends(broker) == before


def producer_for(broker, hub: str, signature: str):
    from azure.eventhub import EventHubProducerClient
    return EventHubProducerClient.from_connection_string(
        sdk_cs(broker, signature=signature), eventhub_name=hub, retry_total=0,
        retry_backoff_factor=0.01)  # no retries: the SDK's one backoff sleep only delays the error


def test_wrong_keys_unknown_names_and_lookalikes_are_refused(broker):
    # a wrong key: refused whatever the case of the name
    with producer(broker, "ORDERS", policy=("RootManageSharedAccessKey", "d3Jvbmc="), retry_total=0) as p:
        with pytest.raises((AuthenticationError, ConnectError)):
            p.get_eventhub_properties()
    before = log_ends(broker)
    # names that are not the hub in another case: a longer name, a path, the Kelvin sign
    # (which str.lower() makes a 'k'), a dotless i
    def refused(name):
        with producer(broker, name, retry_total=0) as p:
            with pytest.raises(EventHubError):
                p.get_eventhub_properties()
            with pytest.raises(EventHubError):
                p.send_batch([EventData("lost")], partition_id="0")
    side_by_side(refused, ("Ordersx", "orders/../payments", "Orders/Partitions/0", "\u212a-hub",
                           "ORDERS\u0131"))
    assert log_ends(broker) == before


def test_https_sends_name_the_hub_in_any_case(broker):
    before = log_ends(broker)
    for path in ("/orders/messages", "/ORDERS/partitions/1/messages", "/oRdErS/publishers/dev-1/messages"):
        r = requests.post(broker.http_url + path, data=f"https {path}".encode(),
                          headers={"Host": HOST, "Authorization": token(None)}, timeout=20)
        assert r.status_code == 201, (path, r.text)
    r = requests.post(broker.http_url + "/ORDERS/partitions/1/messages", data=b"hub token",
                      headers={"Host": HOST, "Authorization": token("orders", WRITER)}, timeout=20)
    assert r.status_code == 201, r.text
    after = log_ends(broker)
    assert sum(after.values()) - sum(before.values()) == 4
    bodies = [m.value() for p in (0, 1) for m in kafka_read(broker, "Orders", p, after[("Orders", p)])]
    for want in (b"https /orders/messages", b"https /ORDERS/partitions/1/messages",
                 b"https /oRdErS/publishers/dev-1/messages", b"hub token"):
        assert want in bodies


@pytest.mark.parametrize("path, auth, status", [
    ("/ORDERS/messages", None, 401),                       # no credential
    ("/ORDERS/messages", "SharedAccessSignature sr=x&sig=y&se=1&skn=z", 401),  # a malformed one
    ("/ORDERS/messages", "wrong", 401),                    # a wrong signature
    ("/ORDERS/messages", "payments", 401),                 # another hub's token
    ("/Ordersx/messages", "root", 404),
    ("/%E2%84%AA-hub/messages", "root", 404),              # the Kelvin sign is no 'k'
    ("/orders%2F..%2Fpayments/messages", "root", 404),
])
def test_https_refusals_whatever_the_case(broker, path, auth, status):
    before = log_ends(broker)
    headers = {"Host": HOST}
    if auth == "root":
        headers["Authorization"] = token(None)
    elif auth == "wrong":
        headers["Authorization"] = sas.generate(sas.resource_uri(HOST, "orders"), ROOT[0], "d3Jvbmc=",
                                                int(time.time()) + 600)
    elif auth == "payments":
        headers["Authorization"] = token("payments", WRITER)
    elif auth is not None:
        headers["Authorization"] = auth
    r = requests.post(broker.http_url + path, data=b"refused", headers=headers, timeout=20)
    assert r.status_code == status, r.text
    assert r.text.startswith(f"<Error><Code>{status}</Code>")
    assert log_ends(broker) == before


def test_kafka_topic_names_stay_case_sensitive(broker):
    c = kafka_consumer(broker, **{"allow.auto.create.topics": False})
    try:
        md = c.list_topics("orders", timeout=15)
        assert md.topics["orders"].error is not None
        assert md.topics["orders"].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        assert "orders" not in c.list_topics(timeout=15).topics
        assert "Orders" in c.list_topics(timeout=15).topics
    finally:
        c.close()


def test_sdk_connection_string_entity_path_in_another_case(broker):
    cs = connection_string.build(f"127.0.0.1:{broker.amqp_port}", key_name=WRITER[0], key=WRITER[1],
                                 entity_path="ORDERS", emulator=True)
    from azure.eventhub import EventHubProducerClient
    with EventHubProducerClient.from_connection_string(cs, retry_total=0) as p:
        assert p.get_eventhub_properties()["eventhub_name"] == "Orders"
        p.send_batch([EventData("entity path")], partition_id="0")
    ends = log_ends(broker)
    assert b"entity path" in [m.value() for m in kafka_read(broker, "Orders", 0, ends[("Orders", 0)])]
