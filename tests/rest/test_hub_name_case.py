"""Event hub names are case-insensitive: a hub named like an existing one in another
case is that hub's name, so no front end makes it as a second hub (a SAS token scoped
to 'orders' would reach 'ORDERS' too)."""
from __future__ import annotations

import time

import pytest
import requests
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_wire.eventhubs import connection_string, sas
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import MULTI_TOML, ROOT

MG = "/subscriptions/s/resourceGroups/g/providers/Microsoft.EventHub/namespaces"
API = "?api-version=2024-01-01"
HOST = "contoso.servicebus.windows.net"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = EmulatedBroker(tmp_path_factory.mktemp("hubcase") / "data", config_file=MULTI_TOML, http=True).start()
    try:
        yield b
    finally:
        b.stop()


def manage(b: EmulatedBroker, method: str, path: str, **kw) -> requests.Response:
    token = sas.generate(sas.resource_uri(HOST), *ROOT, int(time.time()) + 3600)
    return requests.request(method, b.http_url + path, headers={"Host": HOST, "Authorization": token},
                            timeout=20, **kw)


def kafka_conf(b: EmulatedBroker, **extra) -> dict:
    return {"bootstrap.servers": b.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": "$ConnectionString",
            "sasl.password": connection_string.build(HOST, key_name=ROOT[0], key=ROOT[1]), **extra}


def hubs(b: EmulatedBroker) -> list[str]:
    return sorted(b.broker.services.namespaces["contoso"].topics.names())


def test_management_takes_a_hub_named_in_another_case_as_that_hub(broker):
    """ARM's names are case-insensitive: a PUT of ORDERS changes hub orders (it was
    refused as a twin), and makes no second hub."""
    before = hubs(broker)
    partitions = broker.broker.services.namespaces["contoso"].topics.get("orders").partitions
    made = manage(broker, "PUT", f"{MG}/contoso/eventhubs/ORDERS{API}",
                  json={"properties": {"partitionCount": partitions}})
    assert made.status_code == 200 and made.json()["name"] == "orders", made.text
    assert hubs(broker) == before
    listed = manage(broker, "GET", f"{MG}/contoso/eventhubs{API}").json()["value"]
    assert sorted(h["name"] for h in listed) == before
    # a token scoped to 'orders' reaches no second hub: 'ORDERS' does not exist
    scoped = sas.generate(sas.resource_uri(HOST, "orders"), "orders-writer", "b3JkZXJzLWtleQ==",
                          int(time.time()) + 3600)
    sent = requests.post(broker.http_url + "/ORDERS/partitions/0/messages", data=b"x",
                         headers={"Host": HOST, "Authorization": scoped}, timeout=20)
    assert hubs(broker) == before, sent.text
    # another name is still made
    other = manage(broker, "PUT", f"{MG}/contoso/eventhubs/orders-eu{API}", json={"properties": {"partitionCount": 1}})
    assert other.status_code in (200, 201), other.text
    assert "orders-eu" in hubs(broker)


def test_kafka_create_topics_refuses_a_case_twin(broker):
    admin = AdminClient(kafka_conf(broker))
    futures = admin.create_topics([NewTopic("Payments", 1)], operation_timeout=10, request_timeout=15)
    with pytest.raises(Exception) as refused:
        futures["Payments"].result(timeout=20)
    assert refused.value.args[0].code() == KafkaError.TOPIC_EXCEPTION, refused.value
    assert "Payments" not in hubs(broker)


def test_kafka_auto_creation_refuses_a_case_twin(broker):
    producer = Producer(kafka_conf(broker, **{"message.timeout.ms": 4000}))
    reports: list = []
    producer.produce("PAYMENTS", b"v", on_delivery=lambda err, msg: reports.append(err))
    producer.flush(15)
    assert len(reports) == 1 and reports[0] is not None, reports
    assert "PAYMENTS" not in hubs(broker)


def test_management_reads_and_deletes_a_hub_named_in_another_case(broker):
    """GET, consumer groups, authorization rules and DELETE of TEMP reach hub Temp: the
    DELETE answered 204 and deleted nothing."""
    made = manage(broker, "PUT", f"{MG}/contoso/eventhubs/Temp{API}", json={"properties": {"partitionCount": 1}})
    assert made.status_code in (200, 201), made.text
    read = manage(broker, "GET", f"{MG}/contoso/eventhubs/TEMP{API}")
    assert read.status_code == 200 and read.json()["name"] == "Temp", read.text
    group = manage(broker, "PUT", f"{MG}/contoso/eventhubs/temp/consumergroups/audit{API}", json={})
    assert group.status_code == 200, group.text
    listed = manage(broker, "GET", f"{MG}/contoso/eventhubs/TEMP/consumergroups{API}").json()["value"]
    assert sorted(g["name"] for g in listed) == ["$Default", "audit"]
    assert manage(broker, "GET", f"{MG}/contoso/eventhubs/tEmP/authorizationRules{API}").status_code == 200
    gone = manage(broker, "DELETE", f"{MG}/contoso/eventhubs/TEMP{API}")
    assert gone.status_code in (200, 204) and "Temp" not in hubs(broker), gone.text
    assert manage(broker, "GET", f"{MG}/contoso/eventhubs/Temp{API}").status_code == 404
