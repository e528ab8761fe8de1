"""The Schema Registry through the Azure SDKs: a group made with azure-mgmt-eventhub,
schemas registered and looked up with azure-schemaregistry, events encoded with its
Avro encoder, sent and received with azure-eventhub, and a change refused under
Backward compatibility; all of it kept across a restart."""
from __future__ import annotations

import json

import pytest
import requests
from azure.core.exceptions import HttpResponseError
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.schemaregistry import SchemaRegistryClient
from azure.schemaregistry.encoder.avroencoder import AvroEncoder

from tests.amqp.conftest import ROOT, receive

from .test_management import NS, RG, SasCredential, client, start


def record(*fields) -> str:
    return json.dumps({"type": "record", "name": "Order", "namespace": "shop", "fields": list(fields)})


V1 = record({"name": "id", "type": "string"}, {"name": "amount", "type": "int"})
V2 = record({"name": "id", "type": "string"}, {"name": "amount", "type": "long"},  # int -> long
            {"name": "note", "type": ["null", "string"], "default": None})
V3 = record({"name": "id", "type": "string"}, {"name": "amount", "type": "long"},
            {"name": "currency", "type": "string"})  # new field, no default: old data unreadable


def registry(broker) -> SchemaRegistryClient:
    port = broker.https_url.rsplit(":", 1)[1]
    return SchemaRegistryClient(f"localhost:{port}", SasCredential(),
                                connection_verify=str(broker.ca_file))


def test_register_encode_send_decode_and_compatibility(tmp_path):
    data_dir = tmp_path / "data"
    broker = start(data_dir)
    try:
        group = client(broker).schema_registry.create_or_update(
            RG, NS, "orders-schemas", {"properties": {"schemaCompatibility": "Backward", "schemaType": "Avro"}})
        assert (group.schema_compatibility, group.schema_type) == ("Backward", "Avro")
        sr = registry(broker)
        v1 = sr.register_schema("orders-schemas", "shop.Order", V1, "Avro")
        assert v1.version == 1
        again = sr.register_schema("orders-schemas", "shop.Order", V1, "Avro")
        assert (again.id, again.version) == (v1.id, 1)  # the same content is the same version
        assert sr.get_schema(v1.id).definition == V1
        assert sr.get_schema_properties("orders-schemas", "shop.Order", V1, "Avro").id == v1.id
        assert sr.get_schema(group_name="orders-schemas", name="shop.Order", version=1).properties.id \
            == v1.id

        encoder = AvroEncoder(client=sr, group_name="orders-schemas")
        event = encoder.encode({"id": "o-1", "amount": 42}, schema=V1, message_type=EventData)
        assert event.content_type == f"avro/binary+{v1.id}"
        cs = broker.amqp_connection_string(namespace=NS, policy=ROOT[0])
        with EventHubProducerClient.from_connection_string(cs, eventhub_name="orders") as p:
            p.send_batch([event], partition_id="1")
        got = receive(EventHubConsumerClient.from_connection_string(
            cs, consumer_group="$Default", eventhub_name="orders", load_balancing_interval=1),
            1, partition_id="1", starting_position="-1")
        assert [encoder.decode(e) for _, e in got] == [{"id": "o-1", "amount": 42}]
        # The console's Data Explorer decodes it with the registered schema (over HTTPS,
        # with the namespace's token, as the console sends it).
        page = requests.get(f"{broker.https_url}/api/namespaces/{NS}/hubs/orders/partitions/1/events",
                            headers={"Authorization": SasCredential().get_token().token},
                            verify=str(broker.ca_file), timeout=10).json()
        avro = page["events"][-1]["body"]["avro"]
        assert avro == {"schema_id": v1.id, "schema_group": "orders-schemas", "schema_name": "shop.Order",
                        "schema_version": 1, "value": {"id": "o-1", "amount": 42}}
        assert page["events"][-1]["properties"]["content_type"] == f"avro/binary+{v1.id}"

        v2 = sr.register_schema("orders-schemas", "shop.Order", V2, "Avro")
        assert v2.version == 2 and v2.id != v1.id
        with pytest.raises(HttpResponseError, match="currency") as refused:
            sr.register_schema("orders-schemas", "shop.Order", V3, "Avro")
        assert refused.value.status_code == 400
        with pytest.raises(HttpResponseError) as missing:  # azure-schemaregistry 1.3: ResourceNotFoundError
            sr.register_schema("no-such-group", "shop.Order", V1, "Avro")
        assert missing.value.status_code == 404 and "no-such-group" in str(missing.value)
    finally:
        broker.stop()

    broker = start(data_dir)
    try:
        sr = registry(broker)
        assert sr.get_schema(v2.id).definition == V2
        assert json.loads(sr.get_schema(v1.id).definition) == json.loads(V1)
        assert [g.name for g in client(broker).schema_registry.list_by_namespace(RG, NS)] == \
            ["orders-schemas"]
        url = f"{broker.https_url}/$schemaGroups/$schemas/{v1.id}"
        token = SasCredential().get_token().token
        answer = requests.get(url, headers={"Authorization": f"Bearer {token}"},
                              verify=str(broker.ca_file), timeout=10)  # no api-version
        assert answer.status_code == 400 and answer.json()["error"]["code"] == "MissingApiVersion"
        answer = requests.get(url + "?api-version=2022-10", verify=str(broker.ca_file), timeout=10)
        assert answer.status_code == 401  # no token
    finally:
        broker.stop()
