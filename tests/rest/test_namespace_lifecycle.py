"""Namespaces made and deleted through the management API, against what the broker
keeps beside them in the data directory: a namespace cannot take a name the broker
uses there, and deleting one removes all of it (and nothing else), whatever state
it was in."""
from __future__ import annotations

import time

import pytest
import requests
from confluent_kafka import Producer

from kafka_wire.eventhubs import connection_string, sas
from kafka_wire.eventhubs.names import DATA_DIR_ENTRIES
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import MULTI_TOML, ROOT

MG = "/subscriptions/s/resourceGroups/g/providers/Microsoft.EventHub/namespaces"
API = "?api-version=2024-01-01"
HOST = "contoso.servicebus.windows.net"


@pytest.fixture
def broker(tmp_path):
    b = EmulatedBroker(tmp_path / "data", config_file=MULTI_TOML, http=True).start()
    try:
        yield b
    finally:
        b.stop()


def owner(b: EmulatedBroker, method: str, path: str, **kw) -> requests.Response:
    headers = {"Host": HOST, "Authorization": f"Bearer {b.subscription_token}"}
    return requests.request(method, b.http_url + path, headers=headers, timeout=20, **kw)


def idempotent_send(b: EmulatedBroker, topic: str = "payments") -> list:
    """One record from an idempotent Kafka producer (InitProducerId first): the
    delivery errors (an empty list when it was stored)."""
    p = Producer({"bootstrap.servers": b.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "PLAIN", "sasl.username": "$ConnectionString",
                  "sasl.password": connection_string.build(HOST, key_name=ROOT[0], key=ROOT[1]),
                  "enable.idempotence": True, "message.timeout.ms": 8000})
    reports: list = []
    p.produce(topic, b"v", partition=0, on_delivery=lambda err, msg: reports.append(err))
    p.flush(15)
    assert len(reports) == 1, "the delivery was not reported within 15 s"
    return [e for e in reports if e is not None]


@pytest.mark.parametrize("name", ["capture", "producer-ids", "Capture", "PRODUCER-IDS"])
def test_a_namespace_cannot_take_a_name_the_broker_keeps_in_the_data_directory(broker, name):
    # contoso's Capture files, under the default Capture root DATA_DIR/capture
    captured = broker.data_dir / "capture" / "acct" / "archive" / "contoso" / "payments" / "0" / "a.avro"
    captured.parent.mkdir(parents=True)
    captured.write_bytes(b"Obj\x01 contoso's events")
    made = owner(broker, "PUT", f"{MG}/{name}{API}", json={"sku": {"name": "Standard"}})
    assert made.status_code == 400, made.text
    error = made.json()["error"]
    assert error["code"] == "BadRequest" and "reserved" in error["message"], made.text
    assert owner(broker, "GET", f"{MG}/{name}{API}").status_code == 404
    assert owner(broker, "DELETE", f"{MG}/{name}{API}").status_code == 404  # nothing removed
    assert captured.read_bytes() == b"Obj\x01 contoso's events"
    # the producer-id block is still the broker's: every namespace's idempotent producers work
    assert idempotent_send(broker) == []
    assert (broker.data_dir / "producer-ids").is_file()


def test_a_config_naming_a_namespace_like_a_data_directory_entry_is_refused():
    from kafka_wire.eventhubs.config_file import load_toml

    for name in ("capture", "producer-ids"):
        with pytest.raises(ValueError, match="reserved"):
            load_toml({"default_namespace": name, "namespaces": {name: {"tier": "Standard"}}})


def test_every_entry_the_broker_makes_in_the_data_directory_is_reserved(tmp_path):
    """The reserved list is the data directory's whole layout: run what writes there."""
    from kafka_wire.coordinator.checkpoints.embedded import CHECKPOINTS_DIR
    from kafka_wire.eventhubs import geo_dr, managed, report, schema_registry, subscription
    from kafka_wire.replication.store import GEO_DIR

    for entry in (CHECKPOINTS_DIR, GEO_DIR, geo_dr.STATE_DIR, schema_registry.STATE_DIR,
                  managed.STATE_DIR, report.REPORT_FILE, subscription.KEY_FILE):
        assert entry in DATA_DIR_ENTRIES
    b = EmulatedBroker(tmp_path / "data", config_file=MULTI_TOML, http=True, tls=True, amqp=True).start()
    try:
        assert owner(b, "PUT", f"{MG}/contoso/schemagroups/g{API}", json={}).status_code in (200, 201)
        assert owner(b, "PUT", f"{MG}/contoso/eventhubs/payments{API}",
                     json={"properties": {"partitionCount": 2}}).status_code == 200
        assert owner(b, "PUT", f"{MG}/tenant-two{API}", json={"sku": {"name": "Standard"}}).status_code == 201
        assert idempotent_send(b) == []
        namespaces = set(b.broker.services.namespaces)
        entries = {p.name for p in b.data_dir.iterdir()}
    finally:
        b.stop()
    assert entries - namespaces <= DATA_DIR_ENTRIES, entries - namespaces - DATA_DIR_ENTRIES

