"""Geo-DR through ``azure-mgmt-eventhub``'s ``disaster_recovery_configs``: an alias
pairs two Standard namespaces, the primary's hubs, groups and SAS rules reach the
secondary (made through management or over Kafka), a Kafka producer and the
Python SDK reach the primary through the alias's connection string, and after a
failover (on the secondary) the same connection string reaches the secondary.
Every refusal answers ARM JSON: no or the wrong credential, malformed, huge and
path-like names and bodies, the tiers and states the service refuses."""
from __future__ import annotations

import time

import pytest
import requests
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.eventhub import EventData, EventHubProducerClient
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_wire.eventhubs import connection_string, sas
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import confluent_conf
from tests.geo import management
from tests.geo.management import kafka_read, kafka_send, owner, wait_for
from tests.rest.test_management import RG, SUB, SasCredential

EAST, WEST, BASIC, BUSY, ALIAS = "contoso-east", "contoso-west", "contoso-basic", "contoso-busy", "contoso-orders"
EAST_KEY = ("RootManageSharedAccessKey", "ZWFzdC1rZXk=")
WEST_KEY = ("RootManageSharedAccessKey", "d2VzdC1rZXk=")
TOML = f"""
default_namespace = "{EAST}"
[namespaces.{EAST}]
tier = "Standard"
[namespaces.{EAST}.policies.{EAST_KEY[0]}]
primary_key = "{EAST_KEY[1]}"
rights = ["Manage", "Send", "Listen"]
[namespaces.{EAST}.eventhubs.orders]
partitions = 2
consumer_groups = ["billing"]
[namespaces.{WEST}]
tier = "Standard"
[namespaces.{WEST}.policies.{WEST_KEY[0]}]
primary_key = "{WEST_KEY[1]}"
rights = ["Manage", "Send", "Listen"]
[namespaces.{BASIC}]
tier = "Basic"
[namespaces.{BASIC}.policies.{WEST_KEY[0]}]
primary_key = "{WEST_KEY[1]}"
rights = ["Manage", "Send", "Listen"]
[namespaces.{BUSY}]
tier = "Standard"
[namespaces.{BUSY}.policies.{WEST_KEY[0]}]
primary_key = "{WEST_KEY[1]}"
rights = ["Manage", "Send", "Listen"]
[namespaces.{BUSY}.eventhubs.own]
partitions = 1
"""
VERSION = "2026-01-01"


def ns_id(name: str) -> str:
    return f"/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.EventHub/namespaces/{name}"


def start(tmp_path) -> EmulatedBroker:
    return management.start(tmp_path, TOML, "dr.toml")


def rest_send(broker, body: bytes) -> None:
    """One event over HTTPS to partition 0, the Host header and the token's audience the alias's."""
    host = f"{ALIAS}.servicebus.windows.net"
    token = sas.generate(sas.resource_uri(host), EAST_KEY[0], EAST_KEY[1], int(time.time()) + 600)
    r = requests.post(f"{broker.https_url}/orders/partitions/0/messages", data=body, timeout=10,
                      headers={"Host": host, "Authorization": token}, verify=str(broker.ca_file))
    assert r.status_code == 201, r.text


def test_alias_pairs_copies_metadata_and_follows_the_failover(tmp_path):
    broker = start(tmp_path)
    try:
        mgmt = owner(broker)
        dr = mgmt.disaster_recovery_configs
        assert dr.check_name_availability(RG, EAST, {"name": ALIAS}).name_available is True
        made = dr.create_or_update(RG, EAST, ALIAS, {"properties": {"partnerNamespace": ns_id(WEST)}})
        assert (made.role, made.partner_namespace, made.provisioning_state) == ("Primary", ns_id(WEST), "Succeeded")
        seen = dr.get(RG, WEST, ALIAS)
        assert (seen.role, seen.partner_namespace, seen.pending_replication_operations_count) == \
            ("Secondary", ns_id(EAST), 0)
        assert [c.name for c in dr.list(RG, WEST)] == [ALIAS]
        taken = dr.check_name_availability(RG, EAST, {"name": ALIAS})
        assert (taken.name_available, taken.reason) == (False, "NameInUse")
        # the primary's hubs, groups and keys are on the secondary at once
        assert [h.name for h in mgmt.event_hubs.list_by_namespace(RG, WEST)] == ["orders"]
        assert [g.name for g in mgmt.consumer_groups.list_by_event_hub(RG, WEST, "orders")] == ["$Default", "billing"]
        mgmt.event_hubs.create_or_update(RG, EAST, "payments", {"properties": {"partitionCount": 3}})
        assert mgmt.event_hubs.get(RG, WEST, "payments").partition_count == 3
        # a hub made over Kafka on the primary follows within the copy interval
        east_cs = broker.connection_string(namespace=EAST)
        admin = AdminClient(confluent_conf(broker.bootstrap_servers, east_cs))
        admin.create_topics([NewTopic("audit", 2)])["audit"].result(15)
        wait_for(lambda: "audit" in [h.name for h in mgmt.event_hubs.list_by_namespace(RG, WEST)])
        with pytest.raises(HttpResponseError) as refused:  # the secondary's metadata is the primary's
            mgmt.event_hubs.create_or_update(RG, WEST, "own", {"properties": {"partitionCount": 1}})
        assert refused.value.status_code == 400 and "secondary" in str(refused.value)
        # the alias's keys are the primary's; its connection strings name the alias's host
        keys = dr.list_keys(RG, EAST, ALIAS, EAST_KEY[0])
        alias_cs = keys.alias_primary_connection_string
        assert connection_string.parse(alias_cs).host == f"{ALIAS}.servicebus.windows.net"
        assert keys.primary_key == EAST_KEY[1]
        assert [r.name for r in dr.list_authorization_rules(RG, EAST, ALIAS)] == [EAST_KEY[0]]
        # Kafka and the Python SDK through the alias reach the primary
        kafka_send(broker, alias_cs, [b"before-kafka"], timeout_ms=10000)
        amqp = dict(custom_endpoint_address=f"sb://localhost:{broker.amqps_port}",
                    connection_verify=str(broker.ca_file))
        with EventHubProducerClient.from_connection_string(alias_cs, eventhub_name="orders", **amqp) as p:
            p.send_batch([EventData("before-sdk")], partition_id="0")
        west_cs = connection_string.build("contoso-west.servicebus.windows.net", key_name=EAST_KEY[0],
                                          key=EAST_KEY[1])  # the secondary has the primary's keys now
        rest_send(broker, b"before-rest")
        assert kafka_read(broker, east_cs) == [b"before-kafka", b"before-sdk", b"before-rest"]
        assert kafka_read(broker, west_cs) == []  # Geo-DR copies metadata, never events
        mgmt.event_hubs.delete(RG, EAST, "payments")  # a deletion is copied too
        assert "payments" not in [h.name for h in mgmt.event_hubs.list_by_namespace(RG, WEST)]
        with pytest.raises(HttpResponseError) as wrong_side:
            dr.fail_over(RG, EAST, ALIAS)
        assert wrong_side.value.status_code == 400
        with pytest.raises(HttpResponseError) as wrong_side:
            dr.break_pairing(RG, WEST, ALIAS)
        assert wrong_side.value.status_code == 400
        # a producer connected through the alias before the failover
        early = Producer(confluent_conf(broker.bootstrap_servers, alias_cs, **{"message.timeout.ms": 10000}))
        early.produce("orders", b"early-connection", partition=1)
        assert early.flush(20) == 0
        # failover on the secondary: the alias points at it, the pairing is gone
        dr.fail_over(RG, WEST, ALIAS)
        early.produce("orders", b"early-after", partition=1)  # its connection stays with the old primary
        assert early.flush(20) == 0
        after = dr.get(RG, WEST, ALIAS)
        assert (after.role, after.partner_namespace) == ("PrimaryNotReplicating", "")
        with pytest.raises(ResourceNotFoundError):
            dr.get(RG, EAST, ALIAS)
        kafka_send(broker, alias_cs, [b"after-kafka"], timeout_ms=10000)
        with EventHubProducerClient.from_connection_string(alias_cs, eventhub_name="orders", **amqp) as p:
            p.send_batch([EventData("after-sdk")], partition_id="0")
        rest_send(broker, b"after-rest")
        assert kafka_read(broker, west_cs) == [b"after-kafka", b"after-sdk", b"after-rest"]
        assert kafka_read(broker, east_cs) == [b"before-kafka", b"before-sdk", b"before-rest"]  # left as it was
        assert kafka_read(broker, east_cs, 1) == [b"early-connection", b"early-after"]
        assert kafka_read(broker, west_cs, 1) == []
        # no longer a secondary: its metadata is its own again
        mgmt.event_hubs.create_or_update(RG, WEST, "own", {"properties": {"partitionCount": 1}})
        with pytest.raises(HttpResponseError):  # an unpaired alias's primary still breaks nothing
            dr.break_pairing(RG, WEST, ALIAS)
    finally:
        broker.stop()
    # the alias is kept under the data directory
    broker = EmulatedBroker(tmp_path / "data", config_file=tmp_path / "dr.toml", tls=True, http=True).start()
    try:
        dr = owner(broker).disaster_recovery_configs
        assert dr.get(RG, WEST, ALIAS).role == "PrimaryNotReplicating"
        dr.delete(RG, WEST, ALIAS)
        assert list(dr.list(RG, WEST)) == []
        assert broker.broker.services.eventhubs.namespace_for_host(f"{ALIAS}.servicebus.windows.net") is None
    finally:
        broker.stop()


def test_break_pairing_leaves_both_and_refusals_answer_arm_json(tmp_path):
    broker = start(tmp_path)
    try:
        base = f"{broker.https_url}/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.EventHub/namespaces"
        owner_auth = {"Authorization": f"Bearer {broker.subscription_token}"}
        east_auth = {"Authorization": "Bearer " + SasCredential(EAST_KEY, EAST).get_token().token}
        kw = dict(verify=str(broker.ca_file), timeout=10)

        def put(alias, body, headers=owner_auth, ns=EAST, raw=None):
            url = f"{base}/{ns}/disasterRecoveryConfigs/{alias}?api-version={VERSION}"
            if raw is not None:
                return requests.put(url, data=raw, headers=headers, **kw)
            return requests.put(url, json=body, headers=headers, **kw)

        partner = {"properties": {"partnerNamespace": ns_id(WEST)}}
        cases = [
            (put(ALIAS, partner, headers={}), 401, "AuthenticationFailed"),
            (put(ALIAS, partner, headers={"Authorization": "Bearer not-a-token"}), 401, None),
            # a Manage key of the primary does not manage the partner whose keys pairing replaces
            (put(ALIAS, partner, headers=east_auth), 401, None),
            (put(ALIAS, {"properties": {"partnerNamespace": "../../../etc/passwd"}}), 400, "BadRequest"),
            (put(ALIAS, {"properties": {"partnerNamespace": "x" * 5000}}), 400, "BadRequest"),
            (put(ALIAS, {"properties": {"partnerNamespace": 42}}), 400, "BadRequest"),
            (put(ALIAS, {"properties": {}}), 400, "BadRequest"),
            (put(ALIAS, None, raw=b"{not json"), 400, "BadRequest"),
            (put(ALIAS, None, raw=b"[" * 100 + b"]" * 100), 400, "BadRequest"),
            (put(ALIAS, None, raw=b"\xff\xfe"), 400, "BadRequest"),
            (put(ALIAS, {"properties": {"partnerNamespace": ns_id(EAST)}}), 400, "BadRequest"),
            (put(ALIAS, {"properties": {"partnerNamespace": ns_id(BASIC)}}), 400, "BadRequest"),
            (put(ALIAS, {"properties": {"partnerNamespace": ns_id(BUSY)}}), 400, "BadRequest"),
            (put(ALIAS, {"properties": {"partnerNamespace": ns_id("nowhere-ns")}}), 400, "BadRequest"),
            (put("a" * 300, partner), 400, "BadRequest"),
            (put("..%2F..%2Fetc", partner), 404, "NotFound"),  # decoded into path segments
            (put(WEST, partner), 400, "BadRequest"),  # the partner's own name
            (put(EAST, partner), 400, "BadRequest"),  # the primary's: alternateName is not emulated
            (put(ALIAS, partner, ns=BASIC), 400, "BadRequest"),
        ]
        for answer, status, code in cases:
            assert answer.status_code == status, answer.text
            assert "error" in answer.json(), answer.text
            if code:
                assert answer.json()["error"]["code"] == code, answer.text
        assert broker.broker.services.eventhubs.geo_dr == {}  # nothing was paired
        check = requests.post(f"{base}/{EAST}/disasterRecoveryConfigs/checkNameAvailability?api-version={VERSION}",
                              json={"name": "../x"}, headers=owner_auth, **kw).json()
        assert (check["nameAvailable"], check["reason"]) == (False, "InvalidName")
        assert requests.get(f"{base}/{EAST}/disasterRecoveryConfigs/{ALIAS}?api-version={VERSION}",
                            **kw).status_code == 401
        mgmt = owner(broker)
        dr = mgmt.disaster_recovery_configs
        dr.create_or_update(RG, EAST, ALIAS, partner)
        again = put(ALIAS, partner)  # the same pairing again is no change
        assert again.status_code == 200 and again.json()["properties"]["role"] == "Primary"
        other = put(ALIAS, {"properties": {"partnerNamespace": ns_id(BUSY)}})
        assert (other.status_code, other.json()["error"]["code"]) == (409, "Conflict")
        second = put("contoso-second", {"properties": {"partnerNamespace": ns_id(WEST)}})
        assert second.status_code == 400 and "already takes part" in second.json()["error"]["message"]
        with pytest.raises(HttpResponseError) as paired:
            dr.delete(RG, EAST, ALIAS)
        assert paired.value.status_code == 400
        wait_for(lambda: "orders" in [h.name for h in mgmt.event_hubs.list_by_namespace(RG, WEST)])
        dr.break_pairing(RG, EAST, ALIAS)
        broken = dr.get(RG, EAST, ALIAS)
        assert (broken.role, broken.partner_namespace) == ("PrimaryNotReplicating", "")
        with pytest.raises(ResourceNotFoundError):
            dr.get(RG, WEST, ALIAS)
        # both are left as they are; the alias still names the primary
        assert [h.name for h in mgmt.event_hubs.list_by_namespace(RG, WEST)] == ["orders"]
        model = broker.broker.services.eventhubs
        assert model.namespace_for_host(f"{ALIAS}.servicebus.windows.net") == EAST
        assert model.namespace_for_host(ALIAS) == EAST  # a plain (Docker) alias name too
        mgmt.event_hubs.create_or_update(RG, EAST, "later", {"properties": {"partitionCount": 1}})
        assert "later" not in [h.name for h in mgmt.event_hubs.list_by_namespace(RG, WEST)]
        dr.delete(RG, EAST, ALIAS)
        assert model.geo_dr == {}
        # a partner deleted while paired leaves the primary not replicating
        mgmt.namespaces.begin_create_or_update(RG, "contoso-spare", {"sku": {"name": "Standard"}}).result()
        dr.create_or_update(RG, EAST, ALIAS, {"properties": {"partnerNamespace": ns_id("contoso-spare")}})
        wait_for(lambda: "orders" in [h.name for h in mgmt.event_hubs.list_by_namespace(RG, "contoso-spare")])
        mgmt.namespaces.begin_delete(RG, "contoso-spare").result()
        left = dr.get(RG, EAST, ALIAS)
        assert (left.role, left.partner_namespace) == ("PrimaryNotReplicating", "")
    finally:
        broker.stop()
