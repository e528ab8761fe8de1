"""The fault control API (``/$faults`` on the HTTP listener) and what it sets:
only the subscription's credential reaches it, every malformed input gets a
clean ARM-style 4xx, a fault fires as often as asked (seeded when by chance),
REST send and management get 429/503 with Retry-After, and a Kafka client
meets the Kafka faults set from outside (see docs/faults.md; its faults-curl-session
block is run by the last test here)."""
from __future__ import annotations

import json

import pytest
import requests
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_wire.fault_plan import FaultPlan
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import confluent_conf
from tests.faults.harness import arm_error, contoso_broker, control_api
from tests.rest.test_send import post


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with contoso_broker(tmp_path_factory.mktemp("faultctl")) as b:
        yield b


pytestmark = pytest.mark.usefixtures("no_faults")
control = control_api("/$faults")


# -- who may use it ---------------------------------------------------------------------
@pytest.mark.parametrize("auth", [None, "", "Bearer wrong", "Bearer ", "Basic Zm9vOmJhcg==",
                                  "SharedAccessSignature sr=x&sig=y&se=1&skn=z"])
@pytest.mark.parametrize("method", ["GET", "POST", "DELETE"])
def test_the_control_api_refuses_anything_but_the_subscription_credential(broker, auth, method):
    resp = control(broker, method, body={"kind": "server-busy"}, auth=auth)
    assert "subscription" in arm_error(resp, 401)
    assert control(broker, "GET").json()["faults"] == []


def test_a_namespace_sas_token_is_not_the_subscription_credential(broker):
    from tests.rest.test_send import token
    resp = control(broker, "POST", body={"kind": "server-busy"}, auth=token())
    arm_error(resp, 401)
    resp = control(broker, "POST", body={"kind": "server-busy"}, auth=f"Bearer {token()}")
    arm_error(resp, 401)


def test_an_open_broker_serves_it_without_a_credential(tmp_path):
    with EmulatedBroker(tmp_path / "data", http=True) as b:
        resp = control(b, "POST", body={"kind": "server-busy", "scope": {"hub": "orders"}}, auth=None)
        assert resp.status_code == 201, resp.text
        assert control(b, "GET", auth=None).json()["faults"][0]["kind"] == "server-busy"


# -- hostile input ----------------------------------------------------------------------
@pytest.mark.parametrize("raw", [
    b"", b"{", b"not json", b"\xff\xfe", b"[]", b"null", b"42", b'"server-busy"',
    b'{"kind": "nope"}', b'{"kind": ["server-busy"]}', b'{"kind": "server-busy", "count": 0}',
    b'{"kind": "server-busy", "count": -1}', b'{"kind": "server-busy", "count": 1e99}',
    b'{"kind": "server-busy", "count": true}', b'{"kind": "server-busy", "probability": 0}',
    b'{"kind": "server-busy", "probability": 2}', b'{"kind": "server-busy", "probability": "x"}',
    b'{"kind": "server-busy", "seed": -5}', b'{"kind": "server-busy", "after_ms": -1}',
    b'{"kind": "server-busy", "for_ms": 0}', b'{"kind": "server-busy", "scope": []}',
    b'{"kind": "server-busy", "scope": {"hub": "../../etc/passwd"}}',
    b'{"kind": "server-busy", "scope": {"hub": "a\\\\b"}}',
    b'{"kind": "server-busy", "scope": {"hub": "x\\u0000"}}',
    b'{"kind": "server-busy", "scope": {"hub": {"$ne": 1}}}',
    b'{"kind": "server-busy", "scope": {"tenant": "a"}}',
    b'{"kind": "server-busy", "params": {"status": 500}}',
    b'{"kind": "detach-receiver", "params": {"condition": "DROP TABLE"}}',
    b'{"kind": "http-throttle", "params": {"status": 200}}',
    b'{"kind": "http-throttle", "params": {"retry_after_s": -1}}',
    b'{"kind": "kafka-error", "params": {"api": "NoSuchApi"}}',
    b'{"kind": "kafka-error", "params": {"error": "NO_SUCH_ERROR"}}',
    b'{"kind": "kafka-error", "scope": {"partition": "zero"}}',
    b'{"kind": "server-busy", "extra": 1}',
    b'{"kind": "append-fail", "params": {"error": "disk-on-fire"}}',
    b'{"kind": "append-fail", "params": {"error": ""}}',
    b'{"kind": "append-fail", "params": {"error": 28}}',
    b'{"kind": "append-fail", "params": {"error": "../../dev/sda"}}',
    b'{"kind": "append-fail", "params": {"ms": 5}}',
    b'{"kind": "append-slow", "params": {"ms": -1}}',
    b'{"kind": "append-slow", "params": {"ms": 600001}}',
    b'{"kind": "append-slow", "params": {"ms": 1e308}}',
    b'{"kind": "append-slow", "params": {"ms": "2000"}}',
    b'{"kind": "append-slow", "params": {"ms": true}}',
    b'{"kind": "append-slow", "params": {"ms": 99999999999999999999999}}',
    b'{"kind": "delay-disposition", "params": {"ms": 1.5}}',
    b'{"kind": "withhold-flow", "params": {"ms": null}}',
    b'{"kind": "http-slow", "params": {"ms": -1000}}',
    b'{"kind": "http-slow", "params": {"status": 503}}',
    b'{"kind": "partition-unavailable", "params": {"condition": "not a symbol"}}',
    b'{"kind": "partition-unavailable", "scope": {"partition": "0/../1"}}',
    b'{"kind": "token-refused", "params": {"status": 200}}',
    b'{"kind": "token-refused", "params": {"description": ""}}',
    b"[" * 20_000 + b"]" * 20_000, b'{"kind": ' * 5000 + b"}" * 5000,
    json.dumps({"kind": "server-busy", "scope": {"hub": "x" * 300}}).encode(),
], ids=lambda r: repr(r[:40]))
def test_malformed_faults_get_a_clean_400(broker, raw):
    arm_error(control(broker, "POST", raw=raw), 400)
    assert control(broker, "GET").json()["faults"] == []


def test_a_huge_body_gets_413_and_odd_paths_404_or_405(broker):
    huge = json.dumps({"kind": "server-busy", "params": {"description": "x" * 100_000}}).encode()
    arm_error(control(broker, "POST", raw=huge), 413)
    for path in ("/$faults/1/2", "/$faults/..%2f..", "/$faults/abc", "/$faults/999999"):
        assert control(broker, "GET", path).status_code == 404
        assert control(broker, "DELETE", path).status_code == 404
    arm_error(control(broker, "POST", "/$faults/1", body={"kind": "server-busy"}), 405)
    arm_error(control(broker, "PUT", body={"kind": "server-busy"}), 405)
    arm_error(control(broker, "PATCH"), 405)


def test_set_list_and_clear_faults(broker):
    made = control(broker, "POST", body={"kind": "detach-receiver", "scope": {"hub": "orders",
                   "partition": 1, "consumer_group": "billing"}, "count": 3,
                   "params": {"condition": "amqp:link:detach-forced"}})
    assert made.status_code == 201, made.text
    fault = made.json()
    assert fault["scope"] == {"hub": "orders", "partition": "1", "consumer_group": "billing"}
    other = control(broker, "POST", body={"kind": "server-busy"}).json()
    listing = control(broker, "GET").json()
    assert [f["id"] for f in listing["faults"]] == [fault["id"], other["id"]]
    assert "server-busy" in listing["kinds"] and "consumer_group" in listing["scopes"]
    assert control(broker, "GET", f"/$faults/{fault['id']}").json()["count"] == 3
    assert control(broker, "DELETE", f"/$faults/{fault['id']}").status_code == 204
    assert [f["id"] for f in control(broker, "GET").json()["faults"]] == [other["id"]]
    assert control(broker, "DELETE").status_code == 204
    assert control(broker, "GET").json()["faults"] == []


# -- firing -----------------------------------------------------------------------------
def test_a_seeded_probability_fires_at_the_same_requests_every_time():
    def run(seed: int) -> list[int]:
        plan = FaultPlan(lambda: 0)
        plan.add({"kind": "server-busy", "probability": 0.3, "seed": seed, "count": 1000})
        return [i for i in range(200) if plan.fire(("server-busy",), {"hub": "h"}) is not None]
    first = run(7)
    assert first == run(7) and first != run(8)
    assert 30 < len(first) < 90


def test_a_fault_waits_for_after_ms_and_ends_after_for_ms():
    now = [1000]
    plan = FaultPlan(lambda: now[0])
    plan.add({"kind": "server-busy", "count": 100, "after_ms": 500, "for_ms": 1000})
    fires = []
    for t in (1000, 1499, 1500, 2499, 2500):
        now[0] = t
        fires.append(plan.fire(("server-busy",), {}) is not None)
    assert fires == [False, False, True, True, False]
    assert [f["at_ms"] for f in plan.fired] == [1500, 2499]


def test_scope_fields_must_all_match_and_the_firings_are_bounded():
    plan = FaultPlan(lambda: 0)
    plan.add({"kind": "server-busy", "scope": {"hub": "Orders", "partition": 1}, "count": 5000})
    assert plan.fire(("server-busy",), {"hub": "orders", "partition": 0}) is None
    assert plan.fire(("server-busy",), {"hub": "payments", "partition": 1}) is None
    assert plan.fire(("server-busy",), {"partition": 1}) is None
    for _ in range(1500):
        assert plan.fire(("server-busy",), {"hub": "ORDERS", "partition": "1"}) is not None
    assert len(plan.fired) == 1000 and plan.faults[0].fired == 1500


def test_rest_send_and_management_get_retry_after(broker):
    made = control(broker, "POST", body={"kind": "http-throttle", "scope": {"hub": "orders"},
                                         "count": 2, "params": {"status": 503, "retry_after_s": 7}})
    assert made.status_code == 201
    first = post(broker, "/orders/messages", b"x")
    assert first.status_code == 503 and first.headers["Retry-After"] == "7"
    path = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/" \
           "Microsoft.EventHub/namespaces/contoso/eventhubs/orders?api-version=2024-01-01"
    mgmt = requests.get(f"{broker.http_url}{path}", timeout=30,
                        headers={"Authorization": f"Bearer {broker.subscription_token}"})
    assert mgmt.status_code == 503 and mgmt.headers["Retry-After"] == "7"
    assert mgmt.json()["error"]["code"] == "ServerBusy"
    assert post(broker, "/orders/messages", b"x").status_code == 201  # count ran out
    assert post(broker, "/payments/messages", b"x").status_code == 201
    fired = control(broker, "GET").json()["fired"]
    assert [(f["kind"], f["target"]["protocol"]) for f in fired[-2:]] == [
        ("http-throttle", "http-send"), ("http-throttle", "http-management")]


def test_a_kafka_producer_retries_errors_set_through_the_control_api(broker):
    broker.create_hub("kafka-faults", 1)
    made = control(broker, "POST", body={"kind": "kafka-error", "scope": {"hub": "kafka-faults"},
                                         "count": 2, "params": {"api": "Produce",
                                                                "error": "NOT_LEADER_OR_FOLLOWER"}})
    assert made.status_code == 201, made.text
    conf = confluent_conf(broker.bootstrap_servers, broker.connection_string())
    producer = Producer({**conf, "retry.backoff.ms": 50, "enable.idempotence": True})
    reports = []
    for i in range(5):
        producer.produce("kafka-faults", str(i).encode(), partition=0,
                         on_delivery=lambda err, msg: reports.append((err, msg.offset())))
    assert producer.flush(30) == 0
    assert [err for err, _ in reports] == [None] * 5
    fired = [f for f in control(broker, "GET").json()["fired"] if f["fault"] == made.json()["id"]]
    assert len(fired) == 2 and fired[0]["target"]["hub"] == "kafka-faults"
    consumer = Consumer({**conf, "group.id": "fault-check", "enable.auto.commit": False})
    consumer.assign([TopicPartition("kafka-faults", 0, 0)])
    values = []
    while len(values) < 5:
        msg = consumer.poll(10)
        assert msg is not None, values
        values.append(msg.value().decode())
    consumer.close()
    assert values == [str(i) for i in range(5)]  # none lost, none doubled, in order


def test_kafka_connections_dropped_through_the_control_api(broker):
    conf = confluent_conf(broker.bootstrap_servers, broker.connection_string())
    producer = Producer(conf)
    producer.produce("payments", b"before")
    assert producer.flush(30) == 0
    made = control(broker, "POST", body={"kind": "kafka-drop-connections"})
    assert made.status_code == 201
    assert any(f["fault"] == made.json()["id"] for f in control(broker, "GET").json()["fired"])
    producer.produce("payments", b"after")
    assert producer.flush(30) == 0  # librdkafka reconnects


def test_the_curl_session_of_the_docs(tmp_path):
    """docs/faults.md's block marked faults-curl-session, run against an open broker as `make run`'s."""
    import os
    import re
    import subprocess
    import sys
    from pathlib import Path

    from azure.eventhub import EventData, EventHubProducerClient
    from azure.eventhub.exceptions import EventDataSendError

    from tests.docs.doc_blocks import ROOT, blocks_of

    text = (ROOT / "docs/faults.md").read_text()
    at = text.count("\n", 0, text.index("faults-curl-session"))
    block = next(b for b in blocks_of("docs/faults.md") if b.line > at)
    commands = [line[2:] for line in block.text.splitlines() if line.startswith("$ ")]
    bin_dir = str(Path(sys.executable).parent)
    outputs = []
    with EmulatedBroker(tmp_path / "data", http=True, amqp=True) as b:
        b.create_hub("orders", 1)
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
        for command in commands:
            if command.startswith("#"):  # the SDK's send
                producer = EventHubProducerClient.from_connection_string(
                    b.amqp_connection_string(), eventhub_name="orders")
                with producer, pytest.raises(EventDataSendError, match="server is busy"):
                    producer.send_event(EventData(b"x"), partition_id="0")
                continue
            command = command.replace("./data", str(b.data_dir)).replace(
                "http://127.0.0.1:5300", b.http_url)
            m = re.match(r"TOKEN=\$\((.*)\)$", command)
            if m:
                env["TOKEN"] = subprocess.run(m.group(1), shell=True, env=env, capture_output=True,
                                              text=True, check=True).stdout.strip()
                assert env["TOKEN"] == b.subscription_token
                continue
            res = subprocess.run(command, shell=True, env=env, capture_output=True, text=True,
                                 timeout=30)
            assert res.returncode == 0, res.stderr
            outputs.append(res.stdout)
    added, listed, after, deleted = outputs
    assert json.loads(added)["kind"] == "server-busy" and json.loads(added)["count"] == 1
    assert len(json.loads(listed)["faults"]) == 1 and json.loads(listed)["fired"] == []
    fired = json.loads(after)
    assert fired["faults"] == [] and fired["fired"][0]["kind"] == "server-busy"
    assert fired["fired"][0]["target"]["hub"] == "orders"
    assert deleted.strip() == "204"


def test_a_huge_declared_body_is_refused_before_it_is_read(broker):
    import socket

    with socket.create_connection(("127.0.0.1", broker.http_port), timeout=10) as sock:
        sock.sendall(b"POST /$faults HTTP/1.1\r\nHost: x\r\nContent-Length: 60000000\r\n\r\n{")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413 ") and b'"RequestTooLarge"' in answer


def test_clearing_one_kafka_fault_takes_it_out_of_the_kafka_hooks(broker):
    broker.create_hub("kafka-cleared", 1)
    made = control(broker, "POST", body={"kind": "kafka-error", "scope": {"hub": "kafka-cleared"},
                                         "count": 1000, "params": {"api": "Produce"}}).json()
    assert control(broker, "DELETE", f"/$faults/{made['id']}").status_code == 204
    producer = Producer(confluent_conf(broker.bootstrap_servers, broker.connection_string()))
    reports = []
    producer.produce("kafka-cleared", b"x", partition=0, on_delivery=lambda err, msg: reports.append(err))
    assert producer.flush(30) == 0 and reports == [None]
    assert control(broker, "GET").json()["fired"] == []


@pytest.mark.parametrize("body,words", [
    ({"kind": "append-fail", "params": {"error": "disk-on-fire"}}, "disk-full, io-error"),
    ({"kind": "append-slow", "params": {"ms": 10**9}}, "params.ms must be from 0 to 600000"),
    ({"kind": "http-slow", "params": {"ms": "soon"}}, "params.ms must be a whole number"),
    ({"kind": "delay-disposition", "params": {"seconds": 5}}, "it takes ms"),
])
def test_bad_params_of_the_new_kinds_say_what_to_change(broker, body, words):
    assert words in arm_error(control(broker, "POST", body=body), 400)
