"""Capture enabled and disabled through the management API (``azure-mgmt-eventhub``)
on a running broker: its Spark job starts at once and captures the events
enqueued from then on (not the earlier ones, as on Azure), into the storage
account's container standing as a local directory; disabling stops the job,
and the setting survives a restart."""
from __future__ import annotations

import json
import time

import pytest
from azure.core.exceptions import HttpResponseError

from kafka_wire.testing import EmulatedBroker
from tests.capture.conftest import produce
from tests.capture.helpers import check_capture
from tests.rest.test_management import RG, SUB, SasCredential

HUB = "telemetry"
ACCOUNT = "/subscriptions/x/resourceGroups/y/providers/Microsoft.Storage/storageAccounts/devstoreaccount1"


def _client(broker):
    from azure.mgmt.eventhub import EventHubManagementClient

    # The broker's default namespace has no SAS policies: any bearer token manages it.
    ns = broker.config.default_namespace
    return EventHubManagementClient(SasCredential(namespace=ns), SUB, base_url=broker.https_url,
                                    connection_verify=str(broker.ca_file))


def _capture(enabled: bool = True, **changes) -> dict:
    desc = {"enabled": enabled, "encoding": "Avro", "intervalInSeconds": 60, "sizeLimitInBytes": 10485760,
            "skipEmptyArchives": True,
            "destination": {"name": "EventHubArchive.AzureBlockBlob", "properties": {
                "storageAccountResourceId": ACCOUNT, "blobContainer": "capture"}}}
    desc.update(changes)
    return {"properties": {"partitionCount": 2, "captureDescription": desc}}


def _captured(out) -> int:
    """Events in the files announced so far (a file is announced just after it lands)."""
    events = out / "_capture_events.jsonl"
    lines = events.read_text().splitlines() if events.exists() else []
    return sum(json.loads(line)["data"]["eventCount"] for line in lines)


@pytest.mark.slow
def test_capture_enabled_live_starts_then_and_stops_when_disabled(spark, tmp_path):
    data = tmp_path / "data"
    broker = EmulatedBroker(data, tls=True, http=True, capture_jobs=True).start()
    try:
        mgmt = _client(broker)
        ns = broker.config.default_namespace
        mgmt.event_hubs.create_or_update(RG, ns, HUB, {"properties": {"partitionCount": 2}})
        produce(broker.bootstrap_servers, HUB, 40, compression="none", partitions=2)  # before: not captured
        time.sleep(0.05)  # enqueued strictly before the capture is enabled
        hub = mgmt.event_hubs.create_or_update(RG, ns, HUB, _capture())
        c = hub.capture_description
        assert (c.enabled, c.encoding, c.interval_in_seconds, c.destination.blob_container) == \
            (True, "Avro", 60, "capture")
        assert c.destination.storage_account_resource_id.endswith("/devstoreaccount1")
        broker.broker.capture.settled()
        assert list(broker.broker.capture.running()) == [(ns, HUB)]
        after = produce(broker.bootstrap_servers, HUB, 60, compression="lz4", start=40, partitions=2)
        out = data / "capture" / "devstoreaccount1" / "capture"
        # A 60 s window closes on the minute, plus the job's grace and trigger.
        deadline = time.monotonic() + 150
        while _captured(out) < len(after) and time.monotonic() < deadline:
            time.sleep(2)
        check_capture(out, after, namespace=ns, hub=HUB, encoding="avro")

        hub = mgmt.event_hubs.create_or_update(RG, ns, HUB, _capture(enabled=False))
        assert hub.capture_description.enabled is False
        broker.broker.capture.settled()
        assert broker.broker.capture.running() == {}
        mgmt.event_hubs.create_or_update(RG, ns, HUB, _capture())  # enabled again: kept across a restart
    finally:
        broker.stop()
    with EmulatedBroker(data, tls=True, http=True) as again:
        c = _client(again).event_hubs.get(RG, again.config.default_namespace, HUB).capture_description
        assert c.enabled and c.destination.blob_container == "capture"


def test_bad_capture_descriptions_are_refused_and_change_nothing(tmp_path):
    with EmulatedBroker(tmp_path / "data", tls=True, http=True) as broker:
        mgmt = _client(broker)
        ns = broker.config.default_namespace
        mgmt.event_hubs.create_or_update(RG, ns, HUB, {"properties": {"partitionCount": 2}})
        bad = [
            (_capture(intervalInSeconds=30), "interval_seconds=30 is out of range"),
            (_capture(sizeLimitInBytes=1024), "size_limit_bytes=1024 is out of range"),
            (_capture(encoding="AvroDeflate"), "AvroDeflate is not emulated"),
            (_capture(destination={"name": "EventHubArchive.AzureBlockBlob", "properties": {"blobContainer": "c"}}),
             "needs storageAccountResourceId and blobContainer"),
            (_capture(destination={"name": "EventHubArchive.AzureBlockBlob", "properties": {
                "blobContainer": "../up", "storageAccountResourceId": ACCOUNT}}), "must not contain '..'"),
        ]
        for body, message in bad:
            with pytest.raises(HttpResponseError) as info:
                mgmt.event_hubs.create_or_update(RG, ns, HUB, body)
            assert info.value.status_code == 400 and message in str(info.value), str(info.value)
        assert mgmt.event_hubs.get(RG, ns, HUB).capture_description is None
