"""Anonymous Kafka connections enter the default namespace through its door too:
its IP filter, and a rule made at runtime (which makes it require auth), turn
away new connections that did not authenticate."""
from __future__ import annotations

import struct

import requests
from confluent_kafka import Producer

from kafka_wire import codec
from kafka_wire.server import PRE_AUTH_MAX_BYTES
from kafka_wire.testing import EmulatedBroker
from tests.hostile.conftest import start
from tests.hostile.surfaces import CREDENTIALS, HUB, _kafka_conf
from tests.rawclient import RawClient

MG = "/subscriptions/s/resourceGroups/g/providers/Microsoft.EventHub/namespaces/emulatorNs1"
API = "?api-version=2024-01-01"


def metadata_served(broker, source: str = "127.0.0.1") -> bool:
    """Is an anonymous Metadata request answered (else the connection is closed)?"""
    with RawClient(broker.bootstrap_servers, source=source) as c:
        try:
            c.request(codec.ApiKey.Metadata, 1, topics=None)
        except ConnectionError:
            return False
        return True


def test_the_default_namespaces_door_guards_anonymous_kafka_connections(tmp_path):
    with EmulatedBroker(tmp_path / "data", http=True) as broker:
        assert metadata_served(broker)
        rules = {"properties": {"defaultAction": "Deny", "ipRules": [{"ipMask": "127.0.0.2/32"}]}}
        assert requests.put(f"{broker.http_url}{MG}/networkRuleSets/default{API}", json=rules,
                            timeout=10).status_code == 200
        assert not metadata_served(broker)
        assert metadata_served(broker, source="127.0.0.2")
        rules["properties"]["defaultAction"] = "Allow"
        assert requests.put(f"{broker.http_url}{MG}/networkRuleSets/default{API}", json=rules,
                            timeout=10).status_code == 200
        assert metadata_served(broker)
        # A SAS rule made at runtime: the namespace requires auth from now on.
        made = requests.put(f"{broker.http_url}{MG}/authorizationRules/writer{API}",
                            json={"properties": {"rights": ["Send"]}}, timeout=10)
        assert made.status_code == 200, made.text
        assert not metadata_served(broker)



def test_before_sasl_a_frame_is_held_to_512_kib(tmp_path, caplog):
    """On a namespace that requires SASL, a connection that has not authenticated may send
    frames of at most 512 KiB (Apache Kafka's sasl.server.max.receive.size). Before, it
    could send 100 MiB (max_request_bytes), which the broker buffered whole before it
    refused the request. Once logged in, the namespace's own limit holds."""
    root = CREDENTIALS[0]
    broker = start(tmp_path / "data")
    try:
        for size in (PRE_AUTH_MAX_BYTES + 1, 100 << 20):  # a head only: the body never comes
            with RawClient(broker.bootstrap_servers) as c:
                c.send_raw(struct.pack(">i", size) + b"\x00\x03\x00\x01")
                assert c.is_closed(timeout=10), size
        assert "before SASL authentication: at most 524288" in caplog.text
        with RawClient(broker.bootstrap_servers) as c:  # logged in: a larger frame is read
            assert c.login(root.password()) == 0
            c.send_raw(c.frame(codec.ApiKey.Metadata, 1, b"\xff\xff\xff\xff" + bytes(600_000)))
            assert c.read_response(codec.ApiKey.Metadata, 1).brokers
        p = Producer(_kafka_conf(broker, root) | {"message.max.bytes": 1_000_000})
        p.produce(HUB, bytes(900_000), partition=0)
        assert p.flush(20) == 0
    finally:
        broker.stop()
