"""The management API through the real ``azure-mgmt-eventhub`` SDK (over HTTPS with
the broker's CA, as the SDK's bearer-token policy demands): event hubs, consumer
groups and SAS rules created, changed and deleted live; Kafka, AMQP and HTTPS
clients see each change at once, and a restart keeps them."""
from __future__ import annotations

import time

import pytest
import requests
from azure.core.credentials import AccessToken
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.mgmt.eventhub import EventHubManagementClient
from azure.mgmt.eventhub.models import Eventhub
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from kafka_wire.eventhubs import connection_string, sas
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import LISTENER, MULTI_TOML, ROOT, receive
from tests.eventhubs.conftest import confluent_conf

SUB, RG, NS = "00000000-0000-0000-0000-000000000000", "local-rg", "contoso"


class SasCredential:
    """A TokenCredential whose bearer token is a SAS token of a namespace policy."""

    def __init__(self, policy=ROOT, namespace: str = NS) -> None:
        self.policy, self.namespace = policy, namespace

    def get_token(self, *scopes, **kwargs) -> AccessToken:
        expiry = int(time.time()) + 3600
        resource = sas.resource_uri(f"{self.namespace}.servicebus.windows.net")
        return AccessToken(sas.generate(resource, *self.policy, expiry), expiry)


class OwnerCredential:
    """The subscription's credential: the bearer token `kafka-wire token --management` prints."""

    def __init__(self, token: str) -> None:
        self.token = token

    def get_token(self, *scopes, **kwargs) -> AccessToken:
        return AccessToken(self.token, int(time.time()) + 3600)


def owner(broker) -> EventHubManagementClient:
    return EventHubManagementClient(OwnerCredential(broker.subscription_token), SUB,
                                    base_url=broker.https_url, connection_verify=str(broker.ca_file))


def start(data_dir) -> EmulatedBroker:
    return EmulatedBroker(data_dir, config_file=MULTI_TOML, tls=True, http=True, amqp=True).start()


def client(broker, policy=ROOT) -> EventHubManagementClient:
    return EventHubManagementClient(SasCredential(policy), SUB, base_url=broker.https_url,
                                    connection_verify=str(broker.ca_file))


def kafka_cs(broker, key_name: str, key: str) -> str:
    return connection_string.build(f"127.0.0.1:{broker.port}", key_name=key_name, key=key)


def kafka_send(broker, topic: str, password: str) -> None:
    """One record produced with SASL PLAIN; raises what the delivery reported, or the
    authentication failure librdkafka reports at once (the record itself would only
    time out, after message.timeout.ms)."""
    errors: list = []
    refused: list = []

    def on_error(err) -> None:
        if err.code() == KafkaError._AUTHENTICATION:
            refused.append(err)
    p = Producer(confluent_conf(broker.bootstrap_servers, password, error_cb=on_error,
                                **{"message.timeout.ms": 8000}))
    p.produce(topic, b"v", on_delivery=lambda err, msg: errors.append(err))
    deadline = time.monotonic() + 15
    while not errors and not refused and time.monotonic() < deadline:
        p.poll(0.05)
    if refused and not errors:
        raise KafkaException(refused[0])
    if not errors:
        raise AssertionError("no delivery report")
    if errors[0] is not None:
        raise KafkaException(errors[0])


@pytest.fixture
def data_dir(tmp_path):
    return tmp_path / "data"


def test_event_hubs_and_consumer_groups_live_and_after_restart(data_dir):
    broker = start(data_dir)
    try:
        mgmt = client(broker)
        assert sorted(n.name for n in owner(broker).namespaces.list()) == [NS, "fabrikam"]
        assert mgmt.namespaces.get(RG, NS).sku.tier == "Standard"
        # azure-mgmt-eventhub 11's default api-version (2021-11-01) keeps retention in days:
        # its serializer drops retentionDescription from a dict, as it would against Azure.
        in_hours = hasattr(Eventhub(), "retention_description")
        retention = {"retentionDescription": {"retentionTimeInHours": 12}} if in_hours \
            else {"messageRetentionInDays": 1}
        hub = mgmt.event_hubs.create_or_update(RG, NS, "telemetry", {"properties": {
            "partitionCount": 3, **retention}})
        assert (hub.partition_count, hub.partition_ids, hub.status) == (3, ["0", "1", "2"], "Active")
        if in_hours:
            assert hub.retention_description.retention_time_in_hours == 12
        else:
            assert hub.message_retention_in_days == 1
        # Kafka sees the new hub at once, with its partitions and retention.
        password = broker.connection_string(namespace=NS, policy=ROOT[0])
        admin = AdminClient(confluent_conf(broker.bootstrap_servers, password))
        assert len(admin.list_topics("telemetry", timeout=10).topics["telemetry"].partitions) == 3
        (configs,) = admin.describe_configs([ConfigResource("topic", "telemetry")]).values()
        assert configs.result(10)["retention.ms"].value == str((12 if in_hours else 24) * 3_600_000)
        kafka_send(broker, "telemetry", password)
        # Grown to 4 partitions; a consumer group the SDK can then read with.
        assert mgmt.event_hubs.create_or_update(RG, NS, "telemetry", {"properties": {"partitionCount": 4}}) \
            .partition_count == 4
        mgmt.consumer_groups.create_or_update(RG, NS, "telemetry", "analytics", {})
        assert [g.name for g in mgmt.consumer_groups.list_by_event_hub(RG, NS, "telemetry")] == \
            ["$Default", "analytics"]
        with EventHubProducerClient.from_connection_string(
                broker.amqp_connection_string(namespace=NS, policy=ROOT[0]),
                eventhub_name="telemetry") as p:
            p.send_batch([EventData("for analytics")], partition_id="3")
        c = EventHubConsumerClient.from_connection_string(
            broker.amqp_connection_string(namespace=NS, policy=ROOT[0]), consumer_group="analytics",
            eventhub_name="telemetry", load_balancing_interval=1)
        got = receive(c, 1, partition_id="3", starting_position="-1")
        assert [e.body_as_str() for _, e in got] == ["for analytics"]
        with pytest.raises(HttpResponseError) as removed:  # partitions cannot be removed
            mgmt.event_hubs.create_or_update(RG, NS, "telemetry", {"properties": {"partitionCount": 2}})
        assert removed.value.status_code == 400
        mgmt.event_hubs.delete(RG, NS, "payments")  # one from the config file
    finally:
        broker.stop()

    broker = start(data_dir)  # the config file is read again; the changes are laid over it
    try:
        mgmt = client(broker)
        names = [h.name for h in mgmt.event_hubs.list_by_namespace(RG, NS)]
        assert sorted(names) == ["orders", "telemetry"]
        assert mgmt.event_hubs.get(RG, NS, "telemetry").partition_count == 4
        assert [g.name for g in mgmt.consumer_groups.list_by_event_hub(RG, NS, "telemetry")] == \
            ["$Default", "analytics"]
        with pytest.raises(ResourceNotFoundError):
            mgmt.event_hubs.get(RG, NS, "payments")
        mgmt.consumer_groups.delete(RG, NS, "telemetry", "analytics")
        mgmt.event_hubs.delete(RG, NS, "telemetry")
        password = broker.connection_string(namespace=NS, policy=ROOT[0])
        admin = AdminClient(confluent_conf(broker.bootstrap_servers, password))
        assert "telemetry" not in admin.list_topics(timeout=10).topics
    finally:
        broker.stop()


def test_rules_keys_and_regeneration_take_effect_at_once(data_dir):
    broker = start(data_dir)
    try:
        mgmt = client(broker)
        rule = mgmt.namespaces.create_or_update_authorization_rule(RG, NS, "app", {"properties": {"rights": ["Send"]}})
        assert rule.rights == ["Send"]
        keys = mgmt.namespaces.list_keys(RG, NS, "app")
        assert keys.key_name == "app" and keys.primary_key and keys.secondary_key
        assert f"SharedAccessKey={keys.primary_key}" in keys.primary_connection_string
        old = kafka_cs(broker, "app", keys.primary_key)
        kafka_send(broker, "orders", old)
        new = mgmt.namespaces.regenerate_keys(RG, NS, "app", {"keyType": "PrimaryKey"})
        assert new.primary_key != keys.primary_key and new.secondary_key == keys.secondary_key
        with pytest.raises(KafkaException):  # the old key is refused now
            kafka_send(broker, "orders", old)
        kafka_send(broker, "orders", kafka_cs(broker, "app", new.primary_key))
        # A hub-level rule, then the namespace rule deleted.
        mgmt.event_hubs.create_or_update_authorization_rule(RG, NS, "orders", "reader",
                                                            {"properties": {"rights": ["Listen"]}})
        assert [r.name for r in mgmt.event_hubs.list_authorization_rules(RG, NS, "orders")] == \
            ["orders-writer", "reader"]
        mgmt.namespaces.delete_authorization_rule(RG, NS, "app")
        with pytest.raises(KafkaException):
            kafka_send(broker, "orders", kafka_cs(broker, "app", new.primary_key))
    finally:
        broker.stop()
    broker = start(data_dir)
    try:
        mgmt = client(broker)
        assert "app" not in [r.name for r in mgmt.namespaces.list_authorization_rules(RG, NS)]
        reader = mgmt.event_hubs.list_keys(RG, NS, "orders", "reader")
        assert reader.primary_connection_string.endswith("EntityPath=orders")
    finally:
        broker.stop()


def test_a_disabled_hub_refuses_sends_and_reads(data_dir):
    broker = start(data_dir)
    try:
        mgmt = client(broker)
        assert mgmt.event_hubs.create_or_update(RG, NS, "orders", {"properties": {"status": "SendDisabled"}}).status \
            == "SendDisabled"
        with pytest.raises(KafkaException, match="POLICY_VIOLATION|SendDisabled"):
            kafka_send(broker, "orders", broker.connection_string(namespace=NS, policy=ROOT[0]))
        headers = {"Host": f"{NS}.servicebus.windows.net", "Authorization": SasCredential().get_token().token}
        r = requests.post(f"{broker.https_url}/orders/messages", data=b"x", headers=headers,
                          verify=str(broker.ca_file), timeout=10)
        assert r.status_code == 403 and "SendDisabled" in r.text
        # Disabled: no reads either, over Kafka or AMQP.
        mgmt.event_hubs.create_or_update(RG, NS, "orders", {"properties": {"status": "Disabled"}})
        password = broker.connection_string(namespace=NS, policy=ROOT[0])
        c = Consumer(confluent_conf(broker.bootstrap_servers, password, **{"group.id": "disabled"}))
        try:
            c.assign([TopicPartition("orders", 0, 0)])
            m = c.poll(10)
            assert m is not None and m.error() is not None and \
                m.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
        finally:
            c.close()
        sdk = EventHubConsumerClient.from_connection_string(
            broker.amqp_connection_string(namespace=NS, policy=ROOT[0]), consumer_group="$Default",
            eventhub_name="orders", load_balancing_interval=1, retry_total=0)
        with pytest.raises(Exception, match="Disabled"):
            receive(sdk, 1, timeout=10, until_error=True, partition_id="0", starting_position="-1")
        mgmt.event_hubs.create_or_update(RG, NS, "orders", {"properties": {"status": "Active"}})
        kafka_send(broker, "orders", password)
    finally:
        broker.stop()


def test_refusals_and_bad_requests(data_dir):
    broker = start(data_dir)
    try:
        with pytest.raises(HttpResponseError) as denied:  # Listen cannot manage
            list(client(broker, LISTENER).event_hubs.list_by_namespace(RG, NS))
        assert denied.value.status_code == 403
        base = (f"{broker.https_url}/subscriptions/{SUB}/resourceGroups/{RG}/providers/"
                f"Microsoft.EventHub/namespaces/{NS}/eventhubs/x")
        auth = {"Authorization": "Bearer " + SasCredential().get_token().token}
        get = dict(headers=auth, verify=str(broker.ca_file), timeout=10)
        elsewhere = base.replace(f"/{NS}/", "/elsewhere/") + "?api-version=2024-01-01"
        cases = [
            (requests.get(base, **get), 400, "MissingApiVersionParameter"),
            (requests.get(base + "?api-version=1999-01-01", **get), 400, "InvalidApiVersionParameter"),
            (requests.put(base + "?api-version=2024-01-01", data=b"{not json", **get), 400, "BadRequest"),
            (requests.put(base + "?api-version=2024-01-01", json={"properties": {"partitionCount": 0}},
                          **get), 400, "BadRequest"),
            (requests.get(base + "?api-version=2024-01-01", **get), 404, "NotFound"),
            # Which namespaces are served is told only to the subscription's credential:
            # another namespace's token and no token learn nothing (it was 404 to both).
            (requests.get(elsewhere, **get), 401, "AuthenticationFailed"),
            (requests.get(elsewhere, headers={}, verify=str(broker.ca_file), timeout=10), 401,
             "AuthenticationFailed"),
            (requests.get(elsewhere, headers={"Authorization": "Bearer " + broker.subscription_token},
                          verify=str(broker.ca_file), timeout=10), 404, "ResourceNotFound"),
            (requests.get(base + "?api-version=2024-01-01", headers={}, verify=str(broker.ca_file),
                          timeout=10), 401, "AuthenticationFailed"),
        ]
        for answer, status, code in cases:
            assert (answer.status_code, answer.json()["error"]["code"]) == (status, code), answer.text
        mgmt = client(broker)
        assert "x" not in [h.name for h in mgmt.event_hubs.list_by_namespace(RG, NS)]  # nothing changed
    finally:
        broker.stop()


def test_the_report_says_what_differs_from_the_config_file(data_dir):
    import subprocess
    import sys

    broker = start(data_dir)
    try:
        mgmt = client(broker)
        mgmt.event_hubs.create_or_update(RG, NS, "added", {"properties": {"partitionCount": 1}})
        mgmt.namespaces.delete_authorization_rule(RG, NS, "listener")
    finally:
        broker.stop()
    out = subprocess.run([sys.executable, "-m", "kafka_wire.cli", "report", "--data-dir", str(data_dir)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "contoso: event hub 'added' created or changed through the management API" in out.stdout
    assert "contoso: SAS policy 'listener' deleted through the management API" in out.stdout


def test_a_namespace_made_at_runtime_serves_kafka_and_stays(data_dir):
    broker = start(data_dir)
    try:
        with pytest.raises(HttpResponseError) as refused:  # a namespace's Root key is not the owner's
            client(broker).namespaces.begin_create_or_update(RG, "fresh-ns", {"location": "local"}).result()
        assert refused.value.status_code == 401
        mgmt = owner(broker)
        made = mgmt.namespaces.begin_create_or_update(RG, "fresh-ns", {
            "location": "local", "sku": {"name": "Standard", "tier": "Standard", "capacity": 1}}).result()
        assert (made.name, made.sku.tier, made.provisioning_state) == ("fresh-ns", "Standard", "Succeeded")
        # On a broker whose namespaces require auth a new one gets its own Root key, as on Azure.
        mgmt.event_hubs.create_or_update(RG, "fresh-ns", "events", {"properties": {"partitionCount": 2}})
        password = mgmt.namespaces.list_keys(RG, "fresh-ns", ROOT[0]).primary_connection_string
        assert "fresh-ns.servicebus.windows.net" in password
        kafka_send(broker, "events", password)
        with pytest.raises(KafkaException):  # another key is refused
            kafka_send(broker, "events", connection_string.build("fresh-ns.servicebus.windows.net",
                                                                 key_name=ROOT[0], key="wrong"))
        assert sorted(n.name for n in mgmt.namespaces.list()) == [NS, "fabrikam", "fresh-ns"]
    finally:
        broker.stop()
    broker = start(data_dir)
    try:
        mgmt = owner(broker)
        assert mgmt.event_hubs.get(RG, "fresh-ns", "events").partition_count == 2
        kafka_send(broker, "events", password)
        mgmt.namespaces.begin_delete(RG, "fresh-ns").result()
        with pytest.raises(KafkaException):  # its endpoint names no namespace now
            kafka_send(broker, "events", password)
        assert sorted(n.name for n in mgmt.namespaces.list()) == [NS, "fabrikam"]
        with pytest.raises(HttpResponseError) as default:  # the default namespace stays
            mgmt.namespaces.begin_delete(RG, NS).result()
        assert default.value.status_code == 400
    finally:
        broker.stop()
    assert not (data_dir / "fresh-ns").exists()
    broker = start(data_dir)
    try:
        assert sorted(n.name for n in owner(broker).namespaces.list()) == [NS, "fabrikam"]
    finally:
        broker.stop()
