"""A Geo-DR alias made through the management API over namespaces made at runtime
does not take over a plain host name (a Docker alias) that selects the default
namespace: that namespace's clients keep reaching it by that host, over HTTPS and
Kafka, while the alias's own host name selects the pair's primary."""
from __future__ import annotations

import time

import requests
from confluent_kafka import Producer

from kafka_wire.eventhubs import connection_string, sas
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import MULTI_TOML, ROOT

MG = "/subscriptions/s/resourceGroups/g/providers/Microsoft.EventHub/namespaces"
API = "?api-version=2024-01-01"
PLAIN = "eventhubs-emu"  # selects the default namespace (contoso) before any alias


def owner(b, method: str, path: str, **kw) -> requests.Response:
    headers = {"Host": "contoso.servicebus.windows.net", "Authorization": f"Bearer {b.subscription_token}"}
    return requests.request(method, b.http_url + path, headers=headers, timeout=20, **kw)


def rest_send(b, host: str) -> requests.Response:
    token = sas.generate(sas.resource_uri(host), *ROOT, int(time.time()) + 3600)
    return requests.post(b.http_url + "/payments/messages", data=b"x", timeout=20,
                         headers={"Host": host, "Authorization": token})


def kafka_send(b, host: str) -> list:
    p = Producer({"bootstrap.servers": b.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "PLAIN", "sasl.username": "$ConnectionString",
                  "sasl.password": connection_string.build(host, key_name=ROOT[0], key=ROOT[1]),
                  "message.timeout.ms": 8000})
    reports: list = []
    p.produce("payments", b"v", partition=0, on_delivery=lambda err, msg: reports.append(err))
    p.flush(15)
    return reports


def test_a_runtime_alias_does_not_take_over_a_plain_host_of_the_default_namespace(tmp_path):
    with EmulatedBroker(tmp_path / "data", config_file=MULTI_TOML, http=True) as b:
        model = b.broker.services.eventhubs
        payments = b.broker.services.namespaces["contoso"].topics
        assert model.namespace_for_host(PLAIN) == "contoso"
        for ns in ("tenant-primary", "tenant-secondary"):
            assert owner(b, "PUT", f"{MG}/{ns}{API}", json={"sku": {"name": "Standard"}}).status_code == 201
        paired = owner(b, "PUT", f"{MG}/tenant-primary/disasterRecoveryConfigs/{PLAIN}{API}",
                       json={"properties": {"partnerNamespace": "tenant-secondary"}})
        assert paired.status_code == 200, paired.text
        # the alias's own host selects the pair's primary ...
        assert model.namespace_for_host(f"{PLAIN}.servicebus.windows.net") == "tenant-primary"
        # ... the plain host still the default namespace, for every front end
        assert model.namespace_for_host(PLAIN) == "contoso"
        before = payments.log("payments", 0).log_end_offset
        sent = rest_send(b, PLAIN)
        assert sent.status_code == 201, sent.text
        assert kafka_send(b, PLAIN) == [None]
        assert payments.log("payments", 0).log_end_offset == before + 2
