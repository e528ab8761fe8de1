"""An application group's rateLimitThreshold is an int64, as in the ARM API: a larger
one is refused with 400 (it once was kept, and every send of the group's clients then
failed turning it into the token bucket's float), the largest works, and one an older
broker kept loads as the largest."""
from __future__ import annotations

import json
import time

import pytest
import requests
from confluent_kafka import Producer

from kafka_wire.eventhubs import connection_string, sas
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import MULTI_TOML, ROOT

MG = "/subscriptions/s/resourceGroups/g/providers/Microsoft.EventHub/namespaces"
API = "?api-version=2024-01-01"
HOST = "contoso.servicebus.windows.net"
SENDER = ("sender", "c2VuZC1rZXk=")
INT64_MAX = 2 ** 63 - 1


def group_doc(rate_text: str) -> str:
    """The PUT body, the rate written out as JSON digits (no client would round it)."""
    return ('{"properties": {"isEnabled": true, "clientAppGroupIdentifier": "SASKeyName=sender", '
            '"policies": [{"type": "ThrottlingPolicy", "name": "p", "metricId": "IncomingMessages", '
            f'"rateLimitThreshold": {rate_text}}}]}}}}')


def call(b, method: str, path: str, policy=ROOT, **kw) -> requests.Response:
    token = sas.generate(sas.resource_uri(HOST), *policy, int(time.time()) + 3600)
    return requests.request(method, b.http_url + path, headers={"Host": HOST, "Authorization": token},
                            timeout=20, **kw)


def put_group(b, rate_text: str) -> requests.Response:
    token = sas.generate(sas.resource_uri(HOST), *ROOT, int(time.time()) + 3600)
    return requests.put(b.http_url + f"{MG}/contoso/applicationGroups/ag1{API}", data=group_doc(rate_text),
                        timeout=20, headers={"Host": HOST, "Content-Type": "application/json",
                                             "Authorization": token})


def sends_work(b) -> None:
    """The group's client sends over HTTPS and Kafka."""
    sent = call(b, "POST", "/payments/messages", policy=SENDER, data=b"event")
    assert sent.status_code == 201, sent.text
    p = Producer({"bootstrap.servers": b.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "PLAIN", "sasl.username": "$ConnectionString",
                  "sasl.password": connection_string.build(HOST, key_name=SENDER[0], key=SENDER[1]),
                  "message.timeout.ms": 8000})
    reports: list = []
    p.produce("payments", b"v", partition=0, on_delivery=lambda err, msg: reports.append(err))
    p.flush(15)
    assert reports == [None], reports


@pytest.mark.parametrize("rate", ["1" + "0" * 400, str(2 ** 63), "0", "-5"])
def test_a_rate_outside_int64_is_refused(tmp_path, rate):
    with EmulatedBroker(tmp_path / "data", config_file=MULTI_TOML, http=True) as b:
        put = put_group(b, rate)
        assert put.status_code == 400, put.text
        assert put.json()["error"]["code"] == "BadRequest" and "rateLimitThreshold" in put.text
        assert call(b, "GET", f"{MG}/contoso/applicationGroups/ag1{API}").status_code == 404
        sends_work(b)


def test_the_largest_int64_rate_is_taken_and_sends_go_through(tmp_path):
    with EmulatedBroker(tmp_path / "data", config_file=MULTI_TOML, http=True) as b:
        put = put_group(b, str(INT64_MAX))
        assert put.status_code == 200, put.text
        assert put.json()["properties"]["policies"][0]["rateLimitThreshold"] == INT64_MAX
        sends_work(b)


def test_a_rate_an_older_broker_kept_past_int64_loads_as_the_largest(tmp_path):
    data_dir = tmp_path / "data"
    with EmulatedBroker(data_dir, config_file=MULTI_TOML, http=True) as b:
        sends_work(b)  # the data directory exists, as an older broker left it
    kept = data_dir / "_management" / "contoso.json"
    kept.parent.mkdir(exist_ok=True)
    state = json.loads(kept.read_text()) if kept.exists() else {}
    state.setdefault("application_groups", {})["ag1"] = {
        "identifier": "SASKeyName=sender", "enabled": True,
        "policies": [{"name": "p", "metric": "IncomingMessages", "rate": 10 ** 400}]}
    kept.write_text(json.dumps(state))
    with EmulatedBroker(data_dir, config_file=MULTI_TOML, http=True) as b:
        got = call(b, "GET", f"{MG}/contoso/applicationGroups/ag1{API}")
        assert got.status_code == 200, got.text
        assert got.json()["properties"]["policies"][0]["rateLimitThreshold"] == INT64_MAX
        sends_work(b)
