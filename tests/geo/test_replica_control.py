"""The replica control API (``/$replicas``) and ``kafka-wire replica``: only the
subscription's credential reaches them; malformed, huge and path-like input gets a
clean ARM-style 4xx (CLI: exit 1 with the broker's message); pause, resume, list
and promote work from outside the broker's process."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.faults.harness import arm_error, control_api
from tests.geo.conftest import NAMESPACE, geo, geo_broker


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with geo_broker(tmp_path_factory.mktemp("replicactl"), max_lag=300, http=True) as b:
        yield b


control = control_api("/$replicas")


def state(broker) -> dict:
    return broker.call(lambda: geo(broker).to_json())


# -- who may use it -----------------------------------------------------------------------
@pytest.mark.parametrize("auth", [None, "", "Bearer wrong", "Bearer ", "Basic Zm9vOmJhcg==",
                                  "SharedAccessSignature sr=x&sig=y&se=1&skn=z"])
@pytest.mark.parametrize("method, path", [
    ("GET", "/$replicas"), ("GET", f"/$replicas/{NAMESPACE}"),
    ("POST", f"/$replicas/{NAMESPACE}/eastus/pause"), ("POST", f"/$replicas/{NAMESPACE}/eastus/promote")])
def test_only_the_subscription_credential_reaches_it(broker, auth, method, path):
    before = state(broker)
    assert "subscription" in arm_error(control(broker, method, path, auth=auth), 401)
    assert state(broker) == before


def test_a_namespace_connection_string_is_not_the_subscription_credential(broker):
    resp = control(broker, "POST", f"/$replicas/{NAMESPACE}/eastus/pause",
                   auth=f"Bearer {broker.connection_string()}")
    arm_error(resp, 401)
    assert not state(broker)["replicas"][1]["paused"]


# -- hostile input ----------------------------------------------------------------------
@pytest.mark.parametrize("path, status", [
    ("/$replicas/nosuchnamespace", 404), ("/$replicas/..%2f..%2fetc", 404),
    ("/$replicas/" + "n" * 5000, 404), ("/$replicas/%00%01", 404),
    (f"/$replicas/{NAMESPACE}/..%2f..", 404), (f"/$replicas/{NAMESPACE}/x%00y", 400),
    (f"/$replicas/{NAMESPACE}/" + "a" * 3000, 400), (f"/$replicas/{NAMESPACE}/West%20Moon", 404),
    (f"/$replicas/{NAMESPACE}/centralindia", 404), (f"/$replicas/{NAMESPACE}/eastus/explode", 404),
    (f"/$replicas/{NAMESPACE}/eastus/pause/now", 404),
])
def test_odd_paths_get_a_clean_4xx(broker, path, status):
    before = state(broker)
    for method in ("GET", "POST"):
        resp = control(broker, method, path)
        assert resp.status_code in (status, 405), (method, path, resp.status_code, resp.text)
        arm_error(resp, resp.status_code)
    assert state(broker) == before


@pytest.mark.parametrize("raw", [
    b"{", b"not json", b"\xff\xfe", b"[]", b"null", b"42", b'"yes"', b'{"forced": "true"}',
    b'{"forced": 1}', b'{"forced": true, "extra": 1}', b'{"force": true}',
    b"[" * 2000 + b"]" * 2000, b'{"forced": ' * 300 + b"}" * 300,
], ids=lambda r: repr(r[:30]))
def test_malformed_promote_bodies_get_400_and_promote_nothing(broker, raw):
    before = state(broker)
    arm_error(control(broker, "POST", f"/$replicas/{NAMESPACE}/eastus/promote", raw=raw), 400)
    assert state(broker) == before


def test_huge_bodies_bad_queries_and_wrong_methods(broker):
    before = state(broker)
    arm_error(control(broker, "POST", f"/$replicas/{NAMESPACE}/eastus/promote",
                      raw=b'{"forced": false, "x": "' + b"x" * 100_000 + b'"}'), 413)
    arm_error(control(broker, "POST", f"/$replicas/{NAMESPACE}/eastus/promote?forced=maybe"), 400)
    arm_error(control(broker, "GET", f"/$replicas/{NAMESPACE}/eastus/promote"), 405)
    arm_error(control(broker, "PUT", f"/$replicas/{NAMESPACE}/eastus/pause"), 405)
    arm_error(control(broker, "DELETE", "/$replicas"), 405)
    arm_error(control(broker, "POST", f"/$replicas/{NAMESPACE}"), 405)
    assert "primary" in arm_error(control(broker, "POST", f"/$replicas/{NAMESPACE}/westus/pause"), 400)
    assert "already the primary" in arm_error(
        control(broker, "POST", f"/$replicas/{NAMESPACE}/westus/promote"), 400)
    assert state(broker) == before


# -- what it does -------------------------------------------------------------------------
def test_list_pause_resume_and_promote_over_http(broker):
    listed = control(broker, "GET").json()["value"]
    assert [n["namespace"] for n in listed] == [NAMESPACE]
    assert control(broker, "POST", f"/$replicas/{NAMESPACE}/eastus/pause").json()["paused"] is True
    assert control(broker, "GET", f"/$replicas/{NAMESPACE}/eastus").json()["state"] == "Paused"
    refused = arm_error(control(broker, "POST", f"/$replicas/{NAMESPACE}/eastus/promote"), 400)
    assert "paused" in refused and "force" in refused
    assert control(broker, "POST", f"/$replicas/{NAMESPACE}/eastus/resume").json()["paused"] is False
    done = control(broker, "POST", f"/$replicas/{NAMESPACE}/eastus/promote", {"forced": False})
    assert done.status_code == 200, done.text
    assert (done.json()["location"], done.json()["forced"], done.json()["lost_events"]) == ("eastus", False, 0)
    back = control(broker, "POST", f"/$replicas/{NAMESPACE}/westus/promote?forced=true").json()
    assert (back["location"], back["previous"], back["forced"]) == ("westus", "eastus", True)
    assert state(broker)["primary"] == "westus" and state(broker)["segment"] == 2


# -- the CLI ------------------------------------------------------------------------------
def cli(broker, *args: str, token: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kafka_wire.cli", "replica", *args, "--url", broker.http_url,
         "--token", token or broker.subscription_token], capture_output=True, text=True, timeout=60)


def test_the_cli_lists_pauses_resumes_and_promotes(broker):
    out = cli(broker, "list")
    assert out.returncode == 0, out.stderr
    assert f"{NAMESPACE}: primary" in out.stdout and "eastus" in out.stdout
    assert cli(broker, "pause", NAMESPACE, "eastus").returncode == 0
    assert json.loads(cli(broker, "list", NAMESPACE, "--json").stdout)["replicas"][1]["paused"] is True
    assert cli(broker, "resume", NAMESPACE, "eastus").returncode == 0
    primary = state(broker)["primary"]
    other = "eastus" if primary == "westus" else "westus"
    promoted = cli(broker, "promote", NAMESPACE, other, "--forced")
    assert promoted.returncode == 0, promoted.stderr
    assert json.loads(promoted.stdout)["location"] == other and state(broker)["primary"] == other


@pytest.mark.parametrize("args", [
    ("pause", "../../etc", "eastus"), ("pause", NAMESPACE, "../../etc/passwd"),
    ("pause", NAMESPACE, "x" * 5000), ("resume", NAMESPACE, "east\nus"), ("promote", NAMESPACE, "moon"),
    ("list", "nosuchnamespace"), ("pause", "n\x01", "eastus"),
])
def test_hostile_cli_arguments_are_refused_by_the_broker_with_exit_1(broker, args):
    before = state(broker)
    out = cli(broker, *args)
    assert out.returncode == 1, (out.returncode, out.stdout, out.stderr)
    assert "refused (4" in out.stderr and "Traceback" not in out.stderr
    assert state(broker) == before


def test_the_cli_with_a_wrong_token_exits_1_and_without_a_broker_exits_2(broker):
    out = cli(broker, "pause", NAMESPACE, "eastus", token="wrong")
    assert out.returncode == 1 and "refused (401)" in out.stderr
    gone = subprocess.run([sys.executable, "-m", "kafka_wire.cli", "replica", "list", "--url",
                           "http://127.0.0.1:9", "--token", "x"], capture_output=True, text=True, timeout=60)
    assert gone.returncode == 2 and "cannot reach the broker" in gone.stderr


# -- the docs -------------------------------------------------------------------------------
def _block_after(key: str):
    from tests.docs.doc_blocks import ROOT, blocks_of

    text = (ROOT / "docs/georeplication.md").read_text()
    at = text.count("\n", 0, text.index(key))
    return next(b for b in blocks_of("docs/georeplication.md") if b.line > at)


def test_the_docs_synopsis_is_the_cli_parser():
    """docs/georeplication.md's block marked replica-cli-synopsis is the CLI's synopsis."""
    import re

    from kafka_wire.cli import build_parser

    listed: dict[str, set[str]] = {}
    for line in _block_after("replica-cli-synopsis").text.splitlines():
        verb = re.match(r"kafka-wire replica (\w+)", line).group(1)
        listed.setdefault(verb, set()).update(re.findall(r"(--[a-z][a-z0-9-]*)", line))
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    verbs = next(a for a in sub.choices["replica"]._actions if a.__class__.__name__ == "_SubParsersAction")
    real = {name: {o for a in p._actions for o in a.option_strings if o.startswith("--") and o != "--help"}
            for name, p in verbs.choices.items()}
    assert listed == real


def test_the_docs_data_layout_is_what_the_broker_writes(broker):
    """docs/georeplication.md's block marked data-layout names the files a replica has."""
    block = _block_after("data-layout").text
    data = broker.data_dir
    assert (data / NAMESPACE / "__topics").is_dir() and "DATA_DIR/<namespace>/ " in block
    geo_dir = data / "_geo" / NAMESPACE
    assert (geo_dir / "eastus" / "__topics").is_dir() and "DATA_DIR/_geo/<namespace>/<location>/ " in block
    assert (geo_dir / "_state.json").is_file() and "_geo/<namespace>/_state.json" in block
    assert json.loads((geo_dir / "_state.json").read_text())["locations"]
    assert "_geo/<namespace>/<location>.json" in block


def test_the_docs_routes_are_served(broker):
    """docs/georeplication.md's block marked replica-control-routes: each route answers."""
    for line in _block_after("replica-control-routes").text.splitlines():
        method, path = line.split()[:2]
        location = "eastus" if state(broker)["primary"] == "westus" else "westus"
        path = path.replace("NAMESPACE", NAMESPACE).replace("LOCATION", location)
        resp = control(broker, method, path)
        assert resp.status_code == 200, (line, resp.text)
        if path.endswith("/pause"):
            assert resp.json()["paused"] is True
        if path.endswith("/resume"):
            assert resp.json()["paused"] is False
        if path.endswith("/promote"):
            assert resp.json()["location"] == location and resp.json()["forced"] is False
