"""Anonymous Kafka connections enter the default namespace through its door too:
its IP filter, and a rule made at runtime (which makes it require auth), turn
away new connections that did not authenticate."""
from __future__ import annotations

import requests

from kafka_wire import codec
from kafka_wire.testing import EmulatedBroker
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
