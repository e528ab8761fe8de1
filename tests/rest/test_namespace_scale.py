"""A namespace's tier, throughput units and auto-inflate changed live through
``azure-mgmt-eventhub``: the quota and the tier's rules follow at once, a change
the service refuses is refused with its reason, and a restart keeps the scale."""
from __future__ import annotations

import subprocess
import sys

import pytest
from azure.core.exceptions import HttpResponseError
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import confluent_conf
from tests.rest.test_management import RG, SUB, SasCredential

NS = "scaled"
ROOT = ("RootManageSharedAccessKey", "c2NhbGVkLWtleQ==")
TOML = f"""
default_namespace = "{NS}"
[namespaces.{NS}]
tier = "Standard"
mode = "strict"
throughput_units = 1
[namespaces.{NS}.policies.{ROOT[0]}]
primary_key = "{ROOT[1]}"
rights = ["Manage", "Send", "Listen"]
[namespaces.{NS}.eventhubs.orders]
partitions = 2
retention_hours = 48
consumer_groups = ["billing"]
"""


def _client(broker):
    from azure.mgmt.eventhub import EventHubManagementClient

    return EventHubManagementClient(SasCredential(ROOT, NS), SUB, base_url=broker.https_url,
                                    connection_verify=str(broker.ca_file))


def _refused(call, *args, message: str) -> None:
    with pytest.raises(HttpResponseError) as info:
        call(*args)
    assert info.value.status_code == 400 and message in str(info.value), str(info.value)


def test_units_auto_inflate_and_tier_change_live_and_after_restart(tmp_path):
    config, data = tmp_path / "scaled.toml", tmp_path / "data"
    config.write_text(TOML)
    broker = EmulatedBroker(data, config_file=config, tls=True, http=True).start()
    try:
        mgmt = _client(broker)
        quota = lambda: broker.broker.services.namespaces[NS].quota  # noqa: E731
        assert quota().units == 1
        ns = mgmt.namespaces.update(RG, NS, {"sku": {"name": "Standard", "tier": "Standard", "capacity": 3}})
        assert ns.sku.capacity == 3 and quota().units == 3
        assert quota().ingress_bytes.rate == 3 * 1024 * 1024  # the throughput-unit bucket is 3 TUs wide now
        ns = mgmt.namespaces.update(RG, NS, {"properties": {"isAutoInflateEnabled": True, "maximumThroughputUnits": 6}})
        assert (ns.is_auto_inflate_enabled, ns.maximum_throughput_units) == (True, 6)
        assert quota().auto_inflate_max == 6

        _refused(mgmt.namespaces.update, RG, NS, {"sku": {"name": "Premium", "tier": "Premium"}},
                 message="cannot change from Standard to Premium in place")
        _refused(mgmt.namespaces.update, RG, NS, {"sku": {"name": "Standard", "capacity": 41}},
                 message="41 TUs is out of range for Standard")
        # Basic has one consumer group per hub and one day of retention: refused while orders has more.
        _refused(mgmt.namespaces.update, RG, NS, {"sku": {"name": "Basic", "tier": "Basic"},
                                                  "properties": {"isAutoInflateEnabled": False}},
                 message="2 consumer groups (with $Default) exceed the Basic limit of 1")
        mgmt.consumer_groups.delete(RG, NS, "orders", "billing")
        _refused(mgmt.namespaces.update, RG, NS, {"sku": {"name": "Basic", "tier": "Basic"},
                                                  "properties": {"isAutoInflateEnabled": False}},
                 message="retention_hours=48 is outside 1-24 for Basic")
        mgmt.event_hubs.create_or_update(RG, NS, "orders", {"properties": {"retentionDescription": {
            "cleanupPolicy": "Delete", "retentionTimeInHours": 24}}})
        # A hub made over Kafka (no model entry) with two days' retention is checked too.
        admin = AdminClient(confluent_conf(broker.bootstrap_servers,
                                           broker.connection_string(namespace=NS, policy=ROOT[0])))
        admin.create_topics([NewTopic("kafka-made", 1, config={"retention.ms": str(48 * 3_600_000)})])[
            "kafka-made"].result(15)
        _refused(mgmt.namespaces.update, RG, NS, {"sku": {"name": "Basic", "tier": "Basic"},
                                                  "properties": {"isAutoInflateEnabled": False}},
                 message="event hub 'kafka-made' keeps events longer than the tier's 24 hours")
        admin.delete_topics(["kafka-made"])["kafka-made"].result(15)
        ns = mgmt.namespaces.update(RG, NS, {"sku": {"name": "Basic", "tier": "Basic"},
                                             "properties": {"isAutoInflateEnabled": False}})
        assert (ns.sku.tier, ns.sku.capacity, ns.is_auto_inflate_enabled) == ("Basic", 3, False)
        # The Basic tier's rules apply at once: no consumer group besides $Default.
        with pytest.raises(HttpResponseError):
            mgmt.consumer_groups.create_or_update(RG, NS, "orders", "analytics", {})
    finally:
        broker.stop()
    with EmulatedBroker(data, config_file=config, tls=True, http=True) as again:
        ns = _client(again).namespaces.get(RG, NS)
        assert (ns.sku.tier, ns.sku.capacity) == ("Basic", 3)
        assert again.broker.services.namespaces[NS].quota.units == 3
    out = subprocess.run([sys.executable, "-m", "kafka_wire.cli", "report", "--data-dir", str(data)],
                         capture_output=True, text=True, timeout=60)
    assert f"{NS}: scaled through the management API to Basic, 3 unit(s), auto-inflate off" in out.stdout
