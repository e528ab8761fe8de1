"""Deleting a geo-replicated namespace through the management API, before and after a
promotion moved it onto a secondary region: it is gone at once and whole (no longer
served, its name free, its logs, replicas and state removed), and a namespace made
under the same name starts empty."""
from __future__ import annotations

import pytest
import requests

from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import MULTI_TOML

MG = "/subscriptions/s/resourceGroups/g/providers/Microsoft.EventHub/namespaces"
GEO = "?api-version=2026-01-01"
NAME = "geo-tenant"
REPLICATED = {"sku": {"name": "Premium", "tier": "Premium", "capacity": 1},
              "properties": {"geoDataReplication": {"locations": [
                  {"locationName": "local", "roleType": "Primary"},
                  {"locationName": "west", "roleType": "Secondary"}]}}}


def owner(b: EmulatedBroker, method: str, path: str, **kw) -> requests.Response:
    headers = {"Host": "contoso.servicebus.windows.net", "Authorization": f"Bearer {b.subscription_token}"}
    return requests.request(method, b.http_url + path, headers=headers, timeout=30, **kw)


@pytest.mark.parametrize("promoted", [False, True], ids=["serving-primary", "after-promotion"])
def test_a_deleted_geo_replicated_namespace_is_gone_whole(tmp_path, promoted):
    b = EmulatedBroker(tmp_path / "data", config_file=MULTI_TOML, http=True).start()
    try:
        made = owner(b, "PUT", f"{MG}/{NAME}{GEO}", json=REPLICATED)
        assert made.status_code == 201, made.text
        hub = owner(b, "PUT", f"{MG}/{NAME}/eventhubs/h1{GEO}", json={"properties": {"partitionCount": 1}})
        assert hub.status_code in (200, 201), hub.text
        if promoted:
            moved = owner(b, "POST", f"/$replicas/{NAME}/west/promote?forced=true")
            assert moved.status_code == 200, moved.text
        gone = owner(b, "DELETE", f"{MG}/{NAME}{GEO}")
        assert gone.status_code in (200, 204), gone.text
        assert owner(b, "GET", f"{MG}/{NAME}{GEO}").status_code == 404
        assert NAME not in b.broker.services.namespaces
        assert NAME not in b.broker.services.eventhubs.namespaces
        left = [p for p in b.data_dir.rglob("*") if NAME in p.parts]
        assert left == [], left
        again = owner(b, "PUT", f"{MG}/{NAME}{GEO}", json=REPLICATED)
        assert again.status_code == 201, again.text
        hubs = owner(b, "GET", f"{MG}/{NAME}/eventhubs{GEO}")
        assert hubs.status_code == 200 and hubs.json()["value"] == [], hubs.text
    finally:
        b.stop()
