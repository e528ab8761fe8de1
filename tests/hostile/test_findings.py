"""The five findings of the trust-boundary review, as regression tests: each
ran as a hostile client on this machine would, against a broker whose two
namespaces require auth."""
from __future__ import annotations

import os
import time
from urllib.parse import quote

import pytest
import requests
from confluent_kafka import Producer

from kafka_wire.eventhubs import connection_string
from kafka_wire.eventhubs.bounds import Bounds
from tests.hostile.conftest import start
from tests.hostile.surfaces import API, CREDENTIALS, HOST, MG, NS, _kafka_conf, log_end

ROOT = CREDENTIALS[0]


def call(broker, method: str, path: str, *, owner: bool = False, json=None, data=None, host: str = HOST,
         headers: dict | None = None) -> requests.Response:
    auth = {"Authorization": f"Bearer {broker.subscription_token}"} if owner else ROOT.header()
    answer = requests.request(method, broker.http_url + path, json=json, data=data, timeout=15,
                              headers={"Host": host, **auth, **(headers or {})})
    assert answer.status_code < 500, (method, path, answer.status_code, answer.text)
    return answer


def arm_error(answer: requests.Response) -> tuple[int, str]:
    """(status, ARM error code): every refusal is ARM's JSON, never XML or a traceback."""
    assert answer.headers["content-type"].startswith("application/json"), answer.text
    return answer.status_code, answer.json()["error"]["code"]


def capture(dest: dict) -> dict:
    return {"properties": {"partitionCount": 1, "captureDescription": {
        "enabled": True, "encoding": "Avro", "intervalInSeconds": 60, "sizeLimitInBytes": 10485760,
        "destination": dest}}}


def lake(account: str, folder: str, fmt: str | None = None) -> dict:
    props = {"dataLakeAccountName": account, "dataLakeFolderPath": folder}
    if fmt is not None:
        props["archiveNameFormat"] = fmt
    return {"name": "EventHubArchive.AzureDataLake", "properties": props}


def blob(container: str, account: str = "devstoreaccount1") -> dict:
    return {"name": "EventHubArchive.AzureBlockBlob", "properties": {
        "storageAccountResourceId": f"/subscriptions/s/resourceGroups/g/providers/Microsoft.Storage/"
                                    f"storageAccounts/{account}", "blobContainer": container}}


@pytest.fixture
def broker(tmp_path):
    b = start(tmp_path / "data")
    yield b
    b.stop()


def test_1_no_one_without_the_owners_token_makes_a_namespace_and_capture_stays_inside(broker, tmp_path):
    assert arm_error(call(broker, "PUT", f"{MG}/attacker1{API}", json={"sku": {"name": "Standard"}}))[0] == 401
    bare = requests.put(f"{broker.http_url}{MG}/attacker1{API}", json={}, timeout=15)
    assert arm_error(bare) == (401, "AuthenticationFailed")
    assert not (broker.data_dir / "attacker1").exists()

    outside = tmp_path / "outside"
    outside.mkdir()
    root = broker.data_dir / "capture"
    (root / "escape").mkdir(parents=True)
    os.symlink(outside, root / "escape" / "lnk")
    fmt = "{Namespace}/{EventHub}/{PartitionId}/{Year}/{Month}/{Day}/{Hour}/{Minute}/{Second}"
    refused = [
        lake(str(outside), "pwned"), lake("acct", str(outside)), lake("acct", "../../outside"),
        lake("acct", "a/./b"), lake("escape", "lnk"), lake("acct", "ok", "../" + fmt),
        lake("acct", "ok", "/" + fmt), lake("acct", "ok", "{Namespace}/{EventHub}"),
        lake("acct", "ok", fmt.replace("/", "\\")), blob("../up"), blob("UPPER"), blob("ok", account="/abs"),
        blob("a\x00b"), {"name": "EventHubArchive.AzureBlockBlob", "properties": 5},
    ]
    for i, dest in enumerate(refused):
        answer = call(broker, "PUT", f"{MG}/{NS}/eventhubs/cap{i}{API}", json=capture(dest))
        assert arm_error(answer) == (400, "BadRequest"), (dest, answer.text)
        assert call(broker, "GET", f"{MG}/{NS}/eventhubs/cap{i}{API}").status_code == 404  # nothing made
    made = call(broker, "PUT", f"{MG}/{NS}/eventhubs/cap{API}", json=capture(lake("acct", "lake/folder")))
    assert made.status_code == 200, made.text
    where = made.json()["properties"]["captureDescription"]["destination"]["properties"]
    assert (where["dataLakeAccountName"], where["dataLakeFolderPath"]) == ("acct", "lake/folder")
    assert list(outside.iterdir()) == []


def test_2_the_default_namespace_cannot_be_taken_over(broker):
    for name in ("localhost", "LOCALHOST", "host.docker.internal"):
        answer = call(broker, "PUT", f"{MG}/{name}{API}", owner=True, json={"sku": {"name": "Standard"}})
        assert arm_error(answer) == (400, "BadRequest"), answer.text
    made = call(broker, "PUT", f"{MG}/attacker1{API}", owner=True, json={"sku": {"name": "Standard"}})
    assert made.status_code == 201, made.text
    # The official emulator's kind of connection string still means the default namespace.
    for host in ("localhost", "127.0.0.1", "attacker1"):
        password = connection_string.build(host, key_name=ROOT.key_name, key=ROOT.key)
        before = log_end(broker)
        p = Producer({**_kafka_conf(broker, ROOT), "sasl.password": password})
        p.produce("payments", b"to-the-default", partition=0)
        assert p.flush(15) == 0
        assert log_end(broker) == before + 1, host
    # The new namespace's own name reaches it only through its full host name.
    keys = call(broker, "POST", f"{MG}/attacker1/authorizationRules/RootManageSharedAccessKey/listKeys{API}",
                owner=True).json()
    assert "attacker1.servicebus.windows.net" in keys["primaryConnectionString"]
    refused = requests.get(f"{broker.http_url}/api/namespaces/{NS}/hubs/payments", timeout=15,
                           headers={"Host": "localhost"})
    assert refused.status_code == 401  # the console still guards the default namespace


def test_3_resources_are_bounded_and_refused_before_anything_is_made(tmp_path):
    b = start(tmp_path / "data", bounds=Bounds(namespaces=3, partitions_per_hub=64))
    try:
        before = len(os.listdir("/proc/self/fd"))
        answer = call(b, "PUT", f"{MG}/{NS}/eventhubs/wide{API}", json={"properties": {"partitionCount": 3000}})
        assert arm_error(answer) == (400, "BadRequest") and "partitions_per_hub" in answer.text
        assert not any(p.name.startswith("wide-") for p in (b.data_dir / NS).iterdir())
        assert call(b, "PUT", f"{MG}/{NS}/eventhubs/wide{API}",
                    json={"properties": {"partitionCount": 64}}).status_code == 200
        made = call(b, "PUT", f"{MG}/third-ns{API}", owner=True, json={})
        assert made.status_code == 201, made.text
        answer = call(b, "PUT", f"{MG}/fourth-ns{API}", owner=True, json={})
        assert arm_error(answer) == (400, "QuotaExceeded")
        assert not (b.data_dir / "fourth-ns").exists()
        assert len(os.listdir("/proc/self/fd")) < before + 64  # no descriptor per partition kept
    finally:
        b.stop()


# As they stand in the path (a client library would fold a literal '..' away; '%2e%2e' reaches us).
BAD_HUB_SEGMENTS = ["a%00b", "%2e%2e", "%2E.", "a%5Cb", "x" * 300, "%20leading", "trailing-", "a%2Fb",
                    "%E2%80%AEevil", "%ff"]


def test_5_bad_management_input_gets_arm_json_400_never_a_500(broker):
    for name in BAD_HUB_SEGMENTS:
        answer = call(broker, "PUT", f"{MG}/{NS}/eventhubs/{name}{API}",
                      json={"properties": {"partitionCount": 1}})
        assert arm_error(answer)[0] in (400, 404), (name, answer.text)
    for name in ("a\x00b", "\u202egroup", "x" * 300, "-lead"):
        for kind in ("eventhubs/payments/consumergroups", "schemagroups", "applicationGroups"):
            answer = call(broker, "PUT", f"{MG}/{NS}/{kind}/{quote(name, safe='')}{API}",
                          json={"properties": {"clientAppGroupIdentifier": "SASKeyName=x"}})
            assert arm_error(answer) == (400, "BadRequest"), (kind, name, answer.text)
    bodies = [
        b"[" * 50_000 + b"]" * 50_000,
        b'{"properties": {"captureDescription": {"destination": {"properties": 5}}}}',
        b'{"properties": {"partitionCount": "3"}}', b'{"properties": 7}', b"\xff\xfe",
        b'{"properties": {"retentionDescription": {"retentionTimeInHours": 1e400}}}',
    ]
    for body in bodies:
        answer = call(broker, "PUT", f"{MG}/{NS}/eventhubs/payments{API}", data=body,
                      headers={"Content-Type": "application/json"})
        assert arm_error(answer) == (400, "BadRequest"), (body[:60], answer.text)
    for doc in ({"properties": {"maximumThroughputUnits": "x", "isAutoInflateEnabled": True}},
                {"sku": {"capacity": "two"}}, {"sku": "Premium"}):
        assert arm_error(call(broker, "PUT", f"{MG}/{NS}{API}", json=doc)) == (400, "BadRequest"), doc
    # The console's sign-in route is behind the namespace's IP filter, as every other route.
    rules = {"properties": {"defaultAction": "Deny", "ipRules": [{"ipMask": "127.0.0.2/32"}]}}
    assert call(broker, "PUT", f"{MG}/{NS}/networkRuleSets/default{API}", json=rules).status_code == 200
    sign_in = requests.post(f"{broker.http_url}/api/namespaces/{NS}/token", timeout=15, json={
        "connection_string": connection_string.build(HOST, key_name=ROOT.key_name, key=ROOT.key)})
    assert sign_in.status_code == 403 and "IP filter" in sign_in.json()["error"]


def test_unauthenticated_namespace_puts_do_not_grow_the_broker(broker):
    """Finding 3's second half: a burst of refused namespace PUTs leaves nothing behind."""
    names = sorted(p.name for p in broker.data_dir.iterdir())
    deadline = time.monotonic() + 30
    for i in range(300):
        if time.monotonic() > deadline:
            break
        answer = requests.put(f"{broker.http_url}{MG}/flood{i:04d}-ns{API}", json={}, timeout=15)
        assert answer.status_code == 401
    assert sorted(p.name for p in broker.data_dir.iterdir()) == names
    assert len(broker.broker.services.namespaces) == 2
