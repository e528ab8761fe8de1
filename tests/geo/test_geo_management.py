"""Geo-replication managed through ``azure-mgmt-eventhub`` 12 (api-version
2026-01-01): a Premium namespace made with a secondary replica, read back, used
over Kafka and AMQP, failed over (planned, then forced) with the SDK's
long-running-operation poller, and its roles read back; the session's
transcript goes to test-artifacts/geo-management.txt. The refusals answer ARM
JSON: tiers without geo-replication, bad and unknown locations, lags out of
range, a failover to the current primary, no or the wrong credential,
malformed, huge and path-like bodies."""
from __future__ import annotations

import ast
import json
import time
from pathlib import Path

import pytest
import requests
from azure.core.exceptions import HttpResponseError
from azure.eventhub import EventData, EventHubProducerClient
from azure.mgmt.eventhub import EventHubManagementClient

from kafka_wire.eventhubs import connection_string
from kafka_wire.testing import EmulatedBroker
from tests.geo import management
from tests.geo.management import kafka_read, kafka_send
from tests.rest.test_management import RG, SUB, OwnerCredential, SasCredential

NS, STANDARD, PLAIN = "geo-orders", "contoso-std", "contoso-prem"
KEY = ("RootManageSharedAccessKey", "c3RkLWtleQ==")
TOML = f"""
default_namespace = "{STANDARD}"
[namespaces.{STANDARD}]
tier = "Standard"
[namespaces.{STANDARD}.policies.{KEY[0]}]
primary_key = "{KEY[1]}"
rights = ["Manage", "Send", "Listen"]
[namespaces.{PLAIN}]
tier = "Premium"
processing_units = 1
[namespaces.{PLAIN}.policies.{KEY[0]}]
primary_key = "{KEY[1]}"
rights = ["Manage", "Send", "Listen"]
"""
VERSION = "2026-01-01"
ARTIFACT = Path(__file__).resolve().parents[2] / "test-artifacts" / "geo-management.txt"
REPLICAS = {"maxReplicationLagDurationInSeconds": 0, "locations": [
    {"locationName": "westus", "roleType": "Primary"}, {"locationName": "eastus", "roleType": "Secondary"}]}


def start(tmp_path) -> EmulatedBroker:
    return management.start(tmp_path, TOML, "geo.toml")


def owner(broker) -> EventHubManagementClient:
    return management.owner(broker, polling_interval=0.2)


def make_geo_namespace(mgmt):
    """Namespace NS made through management: Premium (1 PU), westus primary, eastus
    secondary, max lag 0 (REPLICAS)."""
    return mgmt.namespaces.begin_create_or_update(RG, NS, {
        "location": "westus", "sku": {"name": "Premium", "tier": "Premium", "capacity": 1},
        "properties": {"geoDataReplication": REPLICAS}}).result()


def roles(ns) -> dict[str, str]:
    return {loc.location_name: loc.role_type for loc in ns.geo_data_replication.locations}


class Transcript:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def call(self, what: str, fn, *args, **kwargs):
        self.lines.append(f">>> {what}")
        result = fn(*args, **kwargs)
        shown = result.as_dict() if hasattr(result, "as_dict") else result
        if shown is not None:
            self.lines.append(json.dumps(shown, indent=1, sort_keys=True, default=str))
        return result

    def note(self, text: str) -> None:
        self.lines.append(f"# {text}")


def test_sdk_session_creates_replicas_sends_and_fails_over(tmp_path):
    broker = start(tmp_path)
    t = Transcript()
    try:
        mgmt = owner(broker)
        t.note(f"azure-mgmt-eventhub 12, api-version {VERSION}, against kafka-wire at {broker.https_url}")
        made = t.call(f"namespaces.begin_create_or_update(RG, {NS!r}, Premium, geoDataReplication "
                      "westus Primary + eastus Secondary, max lag 0).result()",
                      make_geo_namespace, mgmt)
        assert roles(made) == {"westus": "Primary", "eastus": "Secondary"}
        got = t.call(f"namespaces.get(RG, {NS!r})", mgmt.namespaces.get, RG, NS)
        assert roles(got) == {"westus": "Primary", "eastus": "Secondary"}
        assert got.geo_data_replication.max_replication_lag_duration_in_seconds == 0
        assert {loc.replica_state for loc in got.geo_data_replication.locations} == {"Ready"}
        t.call("event_hubs.create_or_update(RG, NS, 'orders', partitionCount 2)",
               mgmt.event_hubs.create_or_update, RG, NS, "orders", {"properties": {"partitionCount": 2}})
        keys = t.call("namespaces.list_keys(RG, NS, 'RootManageSharedAccessKey')",
                      mgmt.namespaces.list_keys, RG, NS, KEY[0])
        cs = keys.primary_connection_string
        assert connection_string.parse(cs).host == f"{NS}.servicebus.windows.net"
        kafka_send(broker, cs, [b"k%d" % i for i in range(20)])
        with EventHubProducerClient.from_connection_string(
                cs, eventhub_name="orders", custom_endpoint_address=f"sb://localhost:{broker.amqps_port}",
                connection_verify=str(broker.ca_file)) as p:
            p.send_batch([EventData(f"a{i}") for i in range(5)], partition_id="0")
        t.note("data plane: 20 events over Kafka, 5 over AMQP (azure-eventhub) to partition 0 of 'orders'")
        planned = t.call("namespaces.begin_failover(RG, NS, primaryLocation eastus, force False).result()",
                         lambda: mgmt.namespaces.begin_failover(RG, NS, {"properties": {
                             "primaryLocation": "eastus", "force": False}}).result())
        assert planned.primary_location == "eastus"
        after = t.call("namespaces.get(RG, NS)", mgmt.namespaces.get, RG, NS)
        assert roles(after) == {"eastus": "Primary", "westus": "Secondary"}
        read = kafka_read(broker, cs)
        assert len(read) == 25 and read[:20] == [b"k%d" % i for i in range(20)]
        t.note(f"after the planned failover the new primary (eastus) serves all {len(read)} events")
        kafka_send(broker, cs, [b"after-planned"])
        # asynchronous, and the secondary (westus) stalled as an unreachable region: a forced
        # failover to it loses what it had not received, exactly that
        t.call("namespaces.update(RG, NS, geoDataReplication max lag 300)", mgmt.namespaces.update, RG, NS,
               {"properties": {"geoDataReplication": {"maxReplicationLagDurationInSeconds": 300, "locations": [
                   {"locationName": "eastus", "roleType": "Primary"},
                   {"locationName": "westus", "roleType": "Secondary"}]}}})
        geo = broker.broker.services.namespaces[NS].geo
        broker.call(geo.pause, "westus")
        kafka_send(broker, cs, [b"unreplicated-%d" % i for i in range(3)])
        t.note("westus paused (geo.pause), then 3 events acknowledged by eastus that westus lacks")
        paused = t.call("namespaces.get(RG, NS)", mgmt.namespaces.get, RG, NS)
        assert {loc.location_name: loc.replica_state for loc in paused.geo_data_replication.locations} == \
            {"eastus": "Ready", "westus": "Paused"}
        forced = t.call("namespaces.begin_failover(RG, NS, primaryLocation westus, force True).result()",
                        lambda: mgmt.namespaces.begin_failover(RG, NS, {"properties": {
                            "primaryLocation": "westus", "force": True}}).result())
        assert forced.primary_location == "westus" and forced.force is True
        assert forced.properties["lostEvents"] == 3
        final = t.call("namespaces.get(RG, NS)", mgmt.namespaces.get, RG, NS)
        assert roles(final) == {"westus": "Primary", "eastus": "Secondary"}
        assert final.location == "westus"
        read = kafka_read(broker, cs)
        assert len(read) == 26 and read[-1] == b"after-planned"  # the 3 unreplicated events are gone
        t.note(f"after the forced failover to westus: {len(read)} events; the 3 unreplicated ones are lost")
        # the secondary removed through PATCH: one replica left, the lag limit kept
        single = t.call("namespaces.update(RG, NS, geoDataReplication westus only)", mgmt.namespaces.update,
                        RG, NS, {"properties": {"geoDataReplication": {"locations": [
                            {"locationName": "westus", "roleType": "Primary"}]}}})
        assert roles(single) == {"westus": "Primary"}
        assert single.geo_data_replication.max_replication_lag_duration_in_seconds == 300
    finally:
        broker.stop()
        ARTIFACT.parent.mkdir(exist_ok=True)
        ARTIFACT.write_text("\n".join(t.lines) + "\n")


def test_replicas_are_kept_across_a_restart(tmp_path):
    broker = start(tmp_path)
    try:
        make_geo_namespace(owner(broker))
        owner(broker).namespaces.begin_failover(RG, NS, {"properties": {"primaryLocation": "eastus"}}).result()
    finally:
        broker.stop()
    broker = EmulatedBroker(tmp_path / "data", config_file=tmp_path / "geo.toml", tls=True, http=True).start()
    try:
        assert roles(owner(broker).namespaces.get(RG, NS)) == {"eastus": "Primary", "westus": "Secondary"}
    finally:
        broker.stop()


def test_refusals_answer_arm_json(tmp_path):
    broker = start(tmp_path)
    try:
        mgmt = owner(broker)
        make_geo_namespace(mgmt)
        base = f"{broker.https_url}/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.EventHub/namespaces"
        auth = {"Authorization": f"Bearer {broker.subscription_token}"}
        other = {"Authorization": "Bearer " + SasCredential(KEY, STANDARD).get_token().token}
        kw = dict(verify=str(broker.ca_file), timeout=10)

        def geo(ns, g, method="PATCH"):
            return requests.request(method, f"{base}/{ns}?api-version={VERSION}",
                                    json={"properties": {"geoDataReplication": g}}, headers=auth, **kw)

        def failover(body, headers=auth, ns=NS, raw=None):
            url = f"{base}/{ns}/failover?api-version={VERSION}"
            if raw is not None:
                return requests.post(url, data=raw, headers=headers, **kw)
            return requests.post(url, json=body, headers=headers, **kw)

        def loc(*entries):
            return {"locations": [{"locationName": n, "roleType": r} for n, r in entries]}

        cases = [
            (geo(STANDARD, REPLICAS), 400, "Premium and Dedicated"),
            (requests.put(f"{base}/contoso-newstd?api-version={VERSION}", json={
                "sku": {"name": "Standard"}, "properties": {"geoDataReplication": REPLICAS}},
                headers=auth, **kw), 400, "Premium and Dedicated"),
            (geo(NS, loc(("westus", "Primary"), ("west/../us", "Secondary"))), 400, "invalid"),
            (geo(NS, loc(("westus", "Primary"), ("x" * 5000, "Secondary"))), 400, "printable"),
            (geo(NS, {"locations": [{"locationName": 7, "roleType": "Secondary"}]}), 400, "string"),
            (geo(NS, loc(("westus", "Primary"), ("eastus", "Tertiary"))), 400, "Primary or Secondary"),
            (geo(NS, loc(("westus", "Primary"), ("eastus", "Primary"))), 400, "two Primary"),
            (geo(NS, loc(("eastus", "Secondary"))), 400, "one location with roleType Primary"),
            (geo(NS, loc(("westus", "Primary"), ("westus", "Secondary"))), 400, "listed twice"),
            (geo(NS, loc(("eastus", "Primary"), ("westus", "Secondary"))), 400, "failover action"),
            (geo(NS, loc(*[("westus", "Primary")] + [(f"region{i}", "Secondary") for i in range(100)])), 400,
             "at most"),
            (geo(NS, {**REPLICAS, "maxReplicationLagDurationInSeconds": 60}), 400, "out of range"),
            (geo(NS, {**REPLICAS, "maxReplicationLagDurationInSeconds": 86401}), 400, "out of range"),
            (geo(NS, {**REPLICAS, "maxReplicationLagDurationInSeconds": "300"}), 400, "whole number"),
            (geo(NS, {**REPLICAS, "maxReplicationLagDurationInSeconds": True}), 400, "whole number"),
            (geo(NS, [1, 2]), 400, "JSON object"),
            (failover({"properties": {"primaryLocation": "eastus"}}, headers={}), 401, None),
            (failover({"properties": {"primaryLocation": "eastus"}}, headers=other), 401, None),
            (failover({"properties": {"primaryLocation": "westus"}}), 400, "already the primary"),
            (failover({"properties": {"primaryLocation": "northeurope"}}), 400, "not a replica location"),
            (failover({"properties": {"primaryLocation": "../../etc"}}), 400, "invalid"),
            (failover({"properties": {"primaryLocation": "e" * 100_000}}), 400, "printable"),
            (failover({"properties": {"primaryLocation": "eastus", "force": "yes"}}), 400, "true or false"),
            (failover({"properties": {}}), 400, "required"),
            (failover(None, raw=b"{" * 5000), 400, "deeper"),
            (failover({"properties": {"primaryLocation": "eastus"}}, ns=PLAIN), 400, "no geo-replication"),
            (failover({"properties": {"primaryLocation": "eastus"}}, ns=STANDARD), 400, "Premium and Dedicated"),
            (requests.get(f"{base}/{NS}/failover?api-version={VERSION}", headers=auth, **kw), 405, None),
            (requests.get(f"{base}/{NS}/operationStatuses/nope?api-version={VERSION}", headers=auth, **kw),
             404, None),
            (requests.get(f"{base}/{NS}/operationStatuses/..%2F..?api-version={VERSION}", headers=auth, **kw),
             404, None),
            (requests.get(f"{base}/{NS}/operationStatuses/x?api-version={VERSION}", **kw), 401, None),
            # api-versions before 2024-05-01-preview have no failover action
            (requests.post(f"{base}/{NS}/failover?api-version=2024-01-01", json={"properties": {
                "primaryLocation": "eastus"}}, headers=auth, **kw), 400, "has no namespace failover"),
        ]
        for answer, status, words in cases:
            assert answer.status_code == status, answer.text
            error = answer.json()["error"]
            assert error["code"] and (words is None or words in error["message"]), answer.text
        old = requests.get(f"{base}/{NS}?api-version=2024-01-01", headers=auth, **kw).json()
        assert "geoDataReplication" not in old["properties"]  # nor do they show it
        # nothing changed; then a failover the poller follows to its end
        assert roles(mgmt.namespaces.get(RG, NS)) == {"westus": "Primary", "eastus": "Secondary"}
        started = failover({"properties": {"primaryLocation": "eastus"}})
        assert started.status_code == 202 and started.headers["Azure-AsyncOperation"].startswith("https://")
        status_url = started.headers["Azure-AsyncOperation"]
        deadline = time.monotonic() + 20
        while (s := requests.get(status_url, headers=auth, **kw).json())["status"] == "InProgress":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert s["status"] == "Succeeded", s
        assert requests.get(status_url, headers=other, **kw).status_code == 401  # polled through the door too
        result = requests.get(started.headers["Location"], headers=auth, **kw)
        assert result.status_code == 200 and result.json()["properties"]["primaryLocation"] == "eastus"
        with pytest.raises(HttpResponseError) as refused:  # the SDK reads the refusal as ARM's
            mgmt.namespaces.begin_failover(RG, NS, {"properties": {"primaryLocation": "eastus"}}).result()
        assert refused.value.status_code == 400 and "already the primary" in str(refused.value)
    finally:
        broker.stop()


def test_failover_urls_name_the_listener_the_request_came_through(tmp_path):
    """Over plain HTTP (no TLS: raw clients, not the SDK) the operation URLs are http:// ones."""
    config = tmp_path / "geo.toml"
    config.write_text(TOML + f"""
[namespaces.{PLAIN}.geo_replication]
replicas = ["westus", "eastus"]
""")
    broker = EmulatedBroker(tmp_path / "data", config_file=config, http=True).start()
    try:
        base = f"{broker.http_url}/subscriptions/{SUB}/resourceGroups/{RG}/providers/Microsoft.EventHub/namespaces"
        auth = {"Authorization": f"Bearer {broker.subscription_token}"}
        started = requests.post(f"{base}/{PLAIN}/failover?api-version={VERSION}", headers=auth, timeout=10,
                                json={"properties": {"primaryLocation": "eastus", "force": True}})
        assert started.status_code == 202, started.text
        status_url = started.headers["Azure-AsyncOperation"]
        assert status_url.startswith(broker.http_url + "/"), status_url
        deadline = time.monotonic() + 20
        while (s := requests.get(status_url, headers=auth, timeout=10).json())["status"] == "InProgress":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert s["status"] == "Succeeded" and s["properties"]["previousPrimaryLocation"] == "westus"
        got = requests.get(f"{base}/{PLAIN}?api-version={VERSION}", headers=auth, timeout=10).json()
        assert got["properties"]["geoDataReplication"]["locations"][0] == {
            "locationName": "eastus", "roleType": "Primary", "replicaState": "Ready", "clusterArmId": ""}
    finally:
        broker.stop()


def test_the_documented_session_runs_as_written(tmp_path):
    """docs/georeplication.md's SDK session (marked geo-management-session) runs as it
    stands, with the broker's address for localhost:5300, and its last expression's
    value equals what the comment under it says."""
    from tests.docs.doc_blocks import ROOT, blocks_of

    text = (ROOT / "docs/georeplication.md").read_text()
    at = text.count("\n", 0, text.index("geo-management-session"))
    block = next(b for b in blocks_of("docs/georeplication.md") if b.line > at).text
    statements, rest = block.split("\n[(", 1)
    expression, comment = rest.split("\n# ", 1)
    broker = start(tmp_path)
    try:
        def client(credential, subscription_id, base_url):
            return EventHubManagementClient(credential, subscription_id, base_url=base_url,
                                            connection_verify=str(broker.ca_file), polling_interval=0.2)
        scope = {"EventHubManagementClient": client, "subscription_id": SUB,
                 "credential": OwnerCredential(broker.subscription_token)}
        exec(compile(statements.replace("https://localhost:5300", broker.https_url),
                     "docs/georeplication.md", "exec"), scope)
        value = eval(compile("[(" + expression, "docs/georeplication.md", "eval"), scope)
        assert value == ast.literal_eval(comment.strip())  # RoleType is a str enum: equal to its name
    finally:
        broker.stop()
