"""An event hub made Disabled through the management API detaches every AMQP link
attached to it at once, receivers and senders, with com.microsoft:entity-disabled, as
Event Hubs does: an idle receiver (credit granted, nothing new to read) or one with no
credit is not left attached until a read that never comes, and a sender not until its
next transfer. New links to the hub are refused with the same condition until it is
Active again; links to other hubs stay. A status change the management API refuses (no
credential, a wrong key, a status it does not know) answers an ARM error and detaches
nothing. A hub deleted through the management API detaches its links at once too, with
amqp:not-found (a receiver with no credit and the senders stayed attached)."""
from __future__ import annotations

import pytest
import requests
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from proton import Delivery, Endpoint, Message

from kafka_wire.eventhubs import sas
from kafka_wire.testing.raw_amqp import RawAmqp
from tests.amqp.conftest import ROOT
from tests.eventhubs.conftest import confluent_conf
from tests.rest.test_management import (NS, RG, SUB, SasCredential, client, data_dir,  # noqa: F401
                                        kafka_send, start)

ENTITY_DISABLED = "com.microsoft:entity-disabled"
PARTITION = "orders/ConsumerGroups/$Default/Partitions/0"
DETACHED = Endpoint.REMOTE_CLOSED


def _receiver(c: RawAmqp, ssn, name: str, address: str = PARTITION, credit: int = 0):
    link = ssn.receiver(name)
    link.source.address = address
    link.open()
    if credit:
        link.flow(credit)
    c.wait(lambda: link.state & (Endpoint.REMOTE_ACTIVE | DETACHED))
    return link


def _send(c: RawAmqp, link, body: bytes, tag: bytes):
    """One message on ``link``; its delivery, once the broker settled it."""
    delivery = link.delivery(tag)
    link.send(Message(body=body).encode())
    link.advance()
    c.wait(lambda: delivery.remote_state or link.state & DETACHED)
    return delivery


def _take(c: RawAmqp, link, n: int) -> list[bytes]:
    """The bodies of ``n`` events ``link`` receives (the credit granted already)."""
    got: list[bytes] = []

    def enough() -> bool:
        while link.current is not None and not link.current.partial:
            message = Message()
            message.decode(link.recv(link.current.pending))
            got.append(bytes(message.body))
            link.advance()
        return len(got) >= n or bool(link.state & DETACHED)

    c.wait(enough)
    return got


def _management(broker, body: dict, authorization: str | None) -> requests.Response:
    url = (f"{broker.https_url}/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.EventHub/"
           f"namespaces/{NS}/eventhubs/orders?api-version=2024-01-01")
    headers = {} if authorization is None else {"Authorization": authorization}
    return requests.put(url, json=body, headers=headers, verify=str(broker.ca_file), timeout=10)


def _detached_disabled(link) -> bool:
    condition = link.remote_condition
    return bool(link.state & DETACHED) and condition is not None and condition.name == ENTITY_DISABLED \
        and "Disabled" in (condition.description or "")


def test_a_hub_made_disabled_detaches_its_links_at_once(data_dir):  # noqa: F811
    broker = start(data_dir)
    try:
        with RawAmqp(broker.amqp_port, hostname=f"{NS}.servicebus.windows.net",
                     user=ROOT[0], password=ROOT[1]) as c:
            c.open()
            ssn = c.session()
            sender = c.sender(ssn, "orders/Partitions/0", "sender")
            assert sender.state & Endpoint.REMOTE_ACTIVE and sender.remote_condition is None
            for i in range(3):
                assert _send(c, sender, b"before-%d" % i, b"b%d" % i).remote_state == Delivery.ACCEPTED
            idle = _receiver(c, ssn, "idle", credit=10)
            assert _take(c, idle, 3) == [b"before-0", b"before-1", b"before-2"]  # then nothing more
            starved = _receiver(c, ssn, "starved")  # given no credit: it never reads
            other = _receiver(c, ssn, "other", "payments/ConsumerGroups/$Default/Partitions/0", 10)
            links = (sender, idle, starved, other)
            assert all(link.state & Endpoint.REMOTE_ACTIVE for link in links)

            # Refused status changes: ARM errors, nothing changed, no link detached.
            token = SasCredential().get_token().token
            resource = sas.resource_uri(f"{NS}.servicebus.windows.net")
            wrong = sas.generate(resource, ROOT[0], "d3Jvbmcta2V5", 2_000_000_000)
            for authorization, body, status, code in (
                    (None, {"properties": {"status": "Disabled"}}, 401, "AuthenticationFailed"),
                    ("Bearer " + wrong, {"properties": {"status": "Disabled"}}, 401, "AuthenticationFailed"),
                    ("Bearer " + token, {"properties": {"status": "Paused"}}, 400, "BadRequest"),
                    ("Bearer " + token, {"properties": {"status": 7}}, 400, "BadRequest")):
                answer = _management(broker, body, authorization)
                assert (answer.status_code, answer.json()["error"]["code"]) == (status, code), answer.text
            assert client(broker).event_hubs.get(RG, NS, "orders").status == "Active"
            # (a round trip on the connection: a detach written before it would be in by now)
            probe = _receiver(c, ssn, "probe")
            assert probe.state & Endpoint.REMOTE_ACTIVE
            assert not any(link.state & DETACHED for link in links)

            client(broker).event_hubs.create_or_update(RG, NS, "orders", {"properties": {"status": "Disabled"}})
            # Before the fix: the idle, starved and probe receivers and the sender stayed
            # attached for good (a receiver was detached only at its next read of the log).
            c.wait(lambda: all(_detached_disabled(link) for link in (sender, idle, starved, probe)))
            again = _receiver(c, ssn, "after-disable")  # (the other hub's link: a round trip later)
            assert _detached_disabled(again)
            refused_sender = c.sender(ssn, "orders", "sender-after-disable")
            assert _detached_disabled(refused_sender)
            assert other.state & Endpoint.REMOTE_ACTIVE and not other.state & DETACHED

            # Kafka on the Disabled hub: produce POLICY_VIOLATION, fetch TOPIC_AUTHORIZATION_FAILED
            # (docs/rest.md), as before this change.
            password = broker.connection_string(namespace=NS, policy=ROOT[0])
            with pytest.raises(KafkaException, match="POLICY_VIOLATION"):
                kafka_send(broker, "orders", password)
            consumer = Consumer(confluent_conf(broker.bootstrap_servers, password, **{"group.id": "disabled"}))
            try:
                consumer.assign([TopicPartition("orders", 0, 0)])
                m = consumer.poll(10)
                assert m is not None and m.error() is not None and \
                    m.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
            finally:
                consumer.close()

            client(broker).event_hubs.create_or_update(RG, NS, "orders", {"properties": {"status": "Active"}})
            sender = c.sender(ssn, "orders/Partitions/0", "sender-again")
            assert sender.state & Endpoint.REMOTE_ACTIVE and sender.remote_condition is None
            assert _send(c, sender, b"after", b"a0").remote_state == Delivery.ACCEPTED
            reader = _receiver(c, ssn, "reader-again", credit=10)
            assert reader.remote_condition is None
            assert _take(c, reader, 4) == [b"before-0", b"before-1", b"before-2", b"after"]
            assert not reader.state & DETACHED and not other.state & DETACHED
    finally:
        broker.stop()


def test_a_hub_deleted_through_the_management_api_detaches_its_links_at_once(data_dir):  # noqa: F811
    broker = start(data_dir)
    try:
        with RawAmqp(broker.amqp_port, hostname=f"{NS}.servicebus.windows.net",
                     user=ROOT[0], password=ROOT[1]) as c:
            c.open()
            ssn = c.session()
            sender = c.sender(ssn, "payments", "sender")
            idle = _receiver(c, ssn, "idle", "payments/ConsumerGroups/$Default/Partitions/0", 10)
            starved = _receiver(c, ssn, "starved", "payments/ConsumerGroups/$Default/Partitions/0")
            other = _receiver(c, ssn, "other", PARTITION, 10)
            assert all(link.state & Endpoint.REMOTE_ACTIVE for link in (sender, idle, starved, other))
            client(broker).event_hubs.delete(RG, NS, "payments")

            def not_found(link) -> bool:
                condition = link.remote_condition
                return bool(link.state & DETACHED) and condition is not None and \
                    condition.name == "amqp:not-found" and "payments" in condition.description

            # Before the fix only the receiver with credit (woken by the deletion) was detached.
            c.wait(lambda: all(not_found(link) for link in (sender, idle, starved)))
            probe = _receiver(c, ssn, "probe", PARTITION)  # a round trip: the other hub's link stays
            assert probe.state & Endpoint.REMOTE_ACTIVE and not other.state & DETACHED
    finally:
        broker.stop()


def test_an_application_group_made_disabled_detaches_its_clients_links_at_once(data_dir):  # noqa: F811
    # Event Hubs refuses a disabled group's clients; their links were detached only at a
    # receiver's next read, and an idle one or a sender stayed attached.
    broker = start(data_dir)
    try:
        mgmt = client(broker)
        mgmt.namespaces.create_or_update_authorization_rule(RG, NS, "app", {"properties": {"rights": ["Send", "Listen"]}})
        app = ("app", mgmt.namespaces.list_keys(RG, NS, "app").primary_key)
        body = {"properties": {"isEnabled": True, "clientAppGroupIdentifier": "SASKeyName=app", "policies": []}}
        mgmt.application_group.create_or_update_application_group(RG, NS, "apps", body)
        hostname = f"{NS}.servicebus.windows.net"
        with RawAmqp(broker.amqp_port, hostname=hostname, user=app[0], password=app[1]) as c, \
                RawAmqp(broker.amqp_port, hostname=hostname, user=ROOT[0], password=ROOT[1]) as root:
            c.open()
            root.open()
            ssn, root_ssn = c.session(), root.session()
            sender = c.sender(ssn, "orders", "sender")
            idle = _receiver(c, ssn, "idle", credit=10)
            starved = _receiver(c, ssn, "starved")
            kept = _receiver(root, root_ssn, "kept", credit=10)  # another policy's client
            assert all(link.state & Endpoint.REMOTE_ACTIVE for link in (sender, idle, starved, kept))
            body["properties"]["isEnabled"] = False
            mgmt.application_group.create_or_update_application_group(RG, NS, "apps", body)

            def refused(link) -> bool:
                condition = link.remote_condition
                return bool(link.state & DETACHED) and condition is not None and \
                    condition.name == ENTITY_DISABLED and "apps" in (condition.description or "")

            c.wait(lambda: all(refused(link) for link in (sender, idle, starved)))
            probe = _receiver(root, root_ssn, "probe")  # a round trip: the other client's link stays
            assert probe.state & Endpoint.REMOTE_ACTIVE and not kept.state & DETACHED
    finally:
        broker.stop()
