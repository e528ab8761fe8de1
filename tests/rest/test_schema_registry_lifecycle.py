"""A namespace's Schema Registry lives and dies with it: deleting the namespace
through the management API deletes its schema groups and schemas, so a namespace
made later under the same name (with new keys) cannot read them."""
from __future__ import annotations

import json
import time

import requests

from kafka_wire.eventhubs import sas
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import MULTI_TOML, ROOT
from tests.rest.test_namespace_lifecycle import API, MG, owner


def test_a_deleted_namespaces_schema_registry_goes_with_it(tmp_path):
    """A namespace made later under the same name (with new keys) starts with no schema
    groups or schemas of the deleted one, live and after a restart."""
    sr = "?api-version=2023-07-01"
    name, host = "tenant-a", "tenant-a.servicebus.windows.net"

    def root_key(b) -> str:
        keys = owner(b, "POST", f"{MG}/{name}/authorizationRules/{ROOT[0]}/listKeys{API}")
        assert keys.status_code == 200, keys.text
        return keys.json()["primaryKey"]

    def data_plane(b, key, method, path, **kw) -> requests.Response:
        token = sas.generate(sas.resource_uri(host), ROOT[0], key, int(time.time()) + 3600)
        return requests.request(method, b.http_url + path, headers={"Host": host, "Authorization": token},
                                timeout=20, **kw)

    b = EmulatedBroker(tmp_path / "data", config_file=MULTI_TOML, http=True).start()
    try:
        assert owner(b, "PUT", f"{MG}/{name}{API}", json={"sku": {"name": "Standard"}}).status_code == 201
        assert owner(b, "PUT", f"{MG}/{name}/schemagroups/secrets{API}",
                     json={"properties": {"schemaType": "Avro"}}).status_code in (200, 201)
        schema = json.dumps({"type": "record", "name": "Payroll", "fields": [{"name": "salary", "type": "long"}]})
        key = root_key(b)
        token = sas.generate(sas.resource_uri(host), ROOT[0], key, int(time.time()) + 3600)
        put = requests.put(b.http_url + "/$schemaGroups/secrets/schemas/payroll" + sr, data=schema, timeout=20,
                           headers={"Host": host, "Authorization": token,
                                    "Content-Type": "application/json;serialization=Avro"})
        assert put.status_code in (200, 204), put.text
        schema_id = put.headers["Schema-Id"]
        assert owner(b, "DELETE", f"{MG}/{name}{API}").status_code in (200, 204)
        assert not (b.data_dir / "_schemas" / f"{name}.json").exists()
        assert owner(b, "PUT", f"{MG}/{name}{API}", json={"sku": {"name": "Standard"}}).status_code == 201
        key = root_key(b)
        groups = data_plane(b, key, "GET", "/$schemaGroups" + sr)
        assert groups.status_code == 200 and groups.json()["Value"] == [], groups.text
        assert data_plane(b, key, "GET", f"/$schemaGroups/$schemas/{schema_id}" + sr).status_code == 404
        listed = owner(b, "GET", f"{MG}/{name}/schemagroups{API}")
        assert listed.status_code == 200 and listed.json()["value"] == [], listed.text
    finally:
        b.stop()
    b = EmulatedBroker(tmp_path / "data", config_file=MULTI_TOML, http=True).start()
    try:
        listed = owner(b, "GET", f"{MG}/{name}/schemagroups{API}")
        assert listed.status_code == 200 and listed.json()["value"] == [], listed.text
    finally:
        b.stop()
