"""http-throttle and http-slow fire only at a request the namespace's door (or the
subscription) lets in: one without a valid credential gets its 401 as without the
fault, is not recorded and adds no /metrics series, with a fault set or under
--chaos. A firing counts under a namespace only if it is served (a URL may name any
other), and the counters' keys are bounded (docs/faults.md)."""
from __future__ import annotations

import random

import pytest
import requests

from kafka_wire.fault_plan import MAX_TOTALS, FaultPlan
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import MULTI_TOML
from tests.faults.harness import arm_error, contoso_broker, control_api
from tests.rest.test_send import post, token

control = control_api("/$faults")
MGMT = "/subscriptions/s/resourceGroups/r/providers/Microsoft.EventHub/namespaces/{ns}/eventhubs/orders" \
       "?api-version=2024-01-01"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with contoso_broker(tmp_path_factory.mktemp("throttle")) as b:
        yield b


pytestmark = pytest.mark.usefixtures("no_faults")


def series(broker) -> dict[str, float]:
    text = requests.get(f"{broker.http_url}/metrics", timeout=30).text
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
            if line.startswith("kafkawire_faults_fired_total{")}


def made_up(rng: random.Random) -> str:
    return "n%x" % rng.getrandbits(64) + "x" * 2000


def get(broker, ns: str, auth: str | None) -> requests.Response:
    headers = {"Authorization": auth} if auth is not None else {}
    return requests.get(broker.http_url + MGMT.format(ns=ns), headers=headers, timeout=30)


@pytest.mark.parametrize("auth", [None, "", "Bearer wrong", "Bearer ", "Basic Zm9vOmJhcg==",
                                  "SharedAccessSignature sr=x&sig=y&se=1&skn=z"])
def test_a_request_without_a_valid_credential_gets_401_not_the_fault(broker, auth):
    made = control(broker, "POST", body={"kind": "http-throttle", "count": 1_000_000})
    assert made.status_code == 201, made.text
    before = series(broker)
    rng = random.Random(5)
    for _ in range(50):
        resp = get(broker, made_up(rng), auth)
        assert resp.status_code == 401, resp.text[:300]
        assert "Retry-After" not in resp.headers
    assert get(broker, "contoso", auth).status_code == 401
    send = post(broker, "/orders/messages", b"x", auth=auth)
    assert send.status_code == 401 and "Retry-After" not in send.headers
    assert series(broker) == before
    assert control(broker, "GET").json()["fired"] == []


def test_an_identified_request_is_throttled_and_counted_only_under_a_served_namespace(broker):
    made = control(broker, "POST", body={"kind": "http-throttle", "count": 1_000_000,
                                         "params": {"status": 503, "retry_after_s": 2}})
    assert made.status_code == 201, made.text
    before = series(broker)
    rng = random.Random(6)
    sub = f"Bearer {broker.subscription_token}"
    for _ in range(100):
        resp = get(broker, made_up(rng), sub)
        assert resp.status_code == 503 and resp.headers["Retry-After"] == "2"
    assert get(broker, "Contoso", sub).status_code == 503
    send = post(broker, "/orders/messages", b"x")  # a valid SAS token
    assert send.status_code == 503 and send.headers["Retry-After"] == "2"
    after = series(broker)
    grew = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
    assert grew == {'kafkawire_faults_fired_total{kind="http-throttle",namespace=""}': 100,
                    'kafkawire_faults_fired_total{kind="http-throttle",namespace="contoso"}': 2}
    fired = control(broker, "GET").json()["fired"]
    assert all(len(str(v)) <= 256 for f in fired for v in f["target"].values())


def test_a_slow_answer_is_not_given_to_who_cannot_sign_in(broker):
    made = control(broker, "POST", body={"kind": "http-slow", "params": {"ms": 5000}})
    assert made.status_code == 201
    resp = post(broker, "/orders/messages", b"x", auth="SharedAccessSignature sr=x&sig=y&se=1&skn=z")
    assert resp.status_code == 401 and resp.elapsed.total_seconds() < 4
    assert control(broker, "GET").json()["faults"][0]["fired"] == 0


def test_under_chaos_no_unauthenticated_request_is_throttled_or_counted(tmp_path):
    with EmulatedBroker(tmp_path / "data", config_file=MULTI_TOML, http=True, chaos=1) as b:
        before = series(b)
        rng = random.Random(7)
        codes = {get(b, made_up(rng), None).status_code for _ in range(300)}
        assert codes == {401}
        assert series(b) == before


def test_the_counters_keys_are_bounded():
    plan = FaultPlan(lambda: 0)
    fault = plan.add({"kind": "server-busy", "count": 1_000_000})
    for i in range(MAX_TOTALS + 500):
        plan.record(fault, {"namespace": f"ns{i}", "hub": "h" * 5000})
    assert len(plan.totals) == MAX_TOTALS + 1  # the last 500 under namespace ""
    assert plan.totals[("server-busy", "")] == 500
    assert all(len(f["target"]["hub"]) == 256 for f in plan.fired)


@pytest.mark.parametrize("path", ["/$faults/..%2F..%2Fetc", "/$faults/1/2", "/$faults/" + "9" * 5000,
                                  "/$faults/%00"])
@pytest.mark.parametrize("auth", [None, "Bearer wrong", "sub"])
def test_odd_fault_paths_need_the_credential_first(broker, path, auth):
    resp = control(broker, "GET", path, auth=auth)
    arm_error(resp, 401 if auth != "sub" else 404)


@pytest.mark.parametrize("scope", [{"namespace": "../../etc/passwd"}, {"namespace": "x" * 300},
                                   {"hub": "orders/../payments"}, {"namespace": "a\\b"},
                                   {"client": "\u0001"}, {"namespace": {"$ne": ""}}])
def test_malformed_scopes_of_http_faults_get_400(broker, scope):
    arm_error(control(broker, "POST", body={"kind": "http-throttle", "scope": scope}), 400)
    arm_error(control(broker, "POST", body={"kind": "http-throttle", "scope": scope}, auth=None), 401)
    assert control(broker, "GET").json()["faults"] == []


def test_a_namespace_sas_token_identifies_a_management_request_too(broker):
    made = control(broker, "POST", body={"kind": "http-throttle", "scope": {"namespace": "contoso"},
                                         "count": 10})
    assert made.status_code == 201
    assert get(broker, "contoso", token()).status_code == 429  # the namespace's door let it in
    assert get(broker, "contoso", "SharedAccessSignature sr=x&sig=y&se=1&skn=z").status_code == 401
    assert post(broker, "/orders/messages", b"x").status_code == 429
    assert [f["target"]["namespace"] for f in control(broker, "GET").json()["fired"]] == ["contoso"] * 2
