"""The rules of every mode that both the management API and a config file meet answer the
same bound through either: a hub's retention (1 to 1,000,000 hours, or -1), a Capture
name format (a relative path without empty, '.' or '..' parts or backslashes, printable
UTF-8, every placeholder) and how many namespaces the broker serves ([limits] namespaces).
Each lives once (kafka_wire.eventhubs.bounds); the management API answers ARM's JSON 400
and a config file one start-up line naming the file, the entry and the rule.

The management API is asked over HTTP on a real broker (127.0.0.1, ephemeral ports); a
config file is read as start-up reads it (config_file.load, which `kafka-wire serve` and
the in-process broker call), and a few hostile files go through `kafka-wire serve` itself."""
from __future__ import annotations

import json
import math

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire.eventhubs.bounds import MAX_RETENTION_HOURS, NAME_FORMAT_TOKENS
from kafka_wire.eventhubs.config_file import load
from kafka_wire.testing import EmulatedBroker
from tests.cli.helpers import kafka_wire

MG = "/subscriptions/s/resourceGroups/g/providers/Microsoft.EventHub/namespaces"
API = "?api-version=2024-01-01"
NS = "contoso-ns"
LIMIT = 3  # [limits] namespaces of the broker below
FMT = "{Namespace}/{EventHub}/{PartitionId}/{Year}/{Month}/{Day}/{Hour}/{Minute}/{Second}"
BROKER_TOML = f'[limits]\nnamespaces = {LIMIT}\n\n[namespaces.{NS}]\n\n[namespaces.{NS}.eventhubs.held]\n'

# derandomized: the same examples every run (and in CI), as tests/cli/test_config_fuzz.py
EXAMPLES = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    base = tmp_path_factory.mktemp("both-front-ends")
    config = base / "kafka-wire.toml"
    config.write_text(BROKER_TOML)
    b = EmulatedBroker(base / "data", config_file=config, http=True).start()
    try:
        yield b
    finally:
        b.stop()


def put(b: EmulatedBroker, path: str, body: str) -> requests.Response:
    """A PUT whose body is sent as written (JSON numbers a client library would not send)."""
    return requests.put(f"{b.http_url}{MG}/{path}{API}", data=body.encode("utf-8", "surrogatepass"),
                        headers={"Content-Type": "application/json"}, timeout=20)


def answered(r: requests.Response) -> bool:
    """True for 2xx; False for ARM's JSON 400 (never a 500, never another shape)."""
    if r.status_code < 300:
        return True
    assert r.status_code == 400 and r.headers["content-type"].startswith("application/json"), r.text
    assert r.json()["error"]["code"] in ("BadRequest", "QuotaExceeded"), r.text
    return False


def loaded(path, text: str | bytes) -> str | None:
    """None when the config file loads; else its one error line, which names the file."""
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    try:
        load(path)
    except ValueError as exc:
        line = str(exc)
        assert line.startswith(f"{path}: ") and "\n" not in line, line
        return line
    return None


# -- retention -----------------------------------------------------------------------------
def json_number(v) -> str:
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    return json.dumps(v)


def toml_value(v) -> str:
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return json.dumps(v, ensure_ascii=False)  # ints; strings as TOML basic strings


EDGES = [-(2**63), -2, -1, 0, 1, 2, 168, MAX_RETENTION_HOURS - 1, MAX_RETENTION_HOURS,
         MAX_RETENTION_HOURS + 1, 2**31, 2**63 - 1]
HOURS = (st.sampled_from(EDGES) | st.integers(-(2**63), 2**63 - 1)
         | st.integers(-3 * MAX_RETENTION_HOURS, 3 * MAX_RETENTION_HOURS)
         | st.floats(allow_nan=True, allow_infinity=True)
         | st.sampled_from([1.0, 1.5, 24.0, 1e6, 1e300, -1.0, True, False, "24", "1e3"]))


def expected_retention(v) -> bool:
    return type(v) is int and (v == -1 or 1 <= v <= MAX_RETENTION_HOURS)


@EXAMPLES
@given(hours=HOURS)
def test_retention_is_the_same_bound_through_the_management_api_and_a_config_file(broker, tmp_path, hours):
    body = '{"properties": {"retentionDescription": {"retentionTimeInHours": %s}}}' % json_number(hours)
    by_api = answered(put(broker, f"{NS}/eventhubs/held", body))
    line = loaded(tmp_path / "retention.toml",
                  f"[namespaces.{NS}.eventhubs.orders]\nretention_hours = {toml_value(hours)}\n")
    assert by_api == (line is None) == expected_retention(hours), (hours, line)
    if line is not None:
        assert "event hub 'orders'" in line and "retention_hours" in line, line


def test_huge_retention_beyond_64_bits_is_refused_by_both(broker, tmp_path):
    huge = 10**30
    body = '{"properties": {"retentionDescription": {"retentionTimeInHours": %d}}}' % huge
    r = put(broker, f"{NS}/eventhubs/held", body)
    assert not answered(r) and "1,000,000" in r.json()["error"]["message"], r.text
    line = loaded(tmp_path / "huge.toml", f"[namespaces.{NS}.eventhubs.orders]\nretention_hours = {huge}\n")
    assert line is not None and "event hub 'orders'" in line, line


# -- Capture name format ----------------------------------------------------------------------
PIECES = st.sampled_from([*NAME_FORMAT_TOKENS, "/", "..", ".", "\\", "x", "é", "\x00", "\x1f", "\x7f",
                          "\ud800", "\U0001f600", " ", "%2e%2e", "//"])
FORMATS = (st.lists(PIECES, max_size=24).map("".join)
           | st.permutations(NAME_FORMAT_TOKENS).map("/".join)
           | st.sampled_from(["../" + FMT, "/" + FMT, FMT + "/..", FMT.replace("/", "\\"), FMT + "/",
                              FMT.replace("{Year}", "{Year}/."), "a" * 1016 + FMT, "a" * 1017 + FMT,
                              FMT, "x/" + FMT, FMT.replace("/", "/../", 1)]))


def capture_body(fmt: str) -> str:
    # enabled: false, so that no capture job starts; the destination and its format are read all the same
    desc = {"enabled": False, "destination": {"name": "EventHubArchive.AzureDataLake", "properties": {
        "dataLakeAccountName": "acct", "dataLakeFolderPath": "folder", "archiveNameFormat": fmt}}}
    return json.dumps({"properties": {"captureDescription": desc}})  # a lone surrogate as JSON's \ud800


def expected_format(fmt: str) -> bool:
    parts = fmt.split("/")
    return (0 < len(fmt) <= 1024 and all(32 <= ord(c) != 127 and not 0xD800 <= ord(c) <= 0xDFFF for c in fmt)
            and not fmt.startswith("/") and "\\" not in fmt and all(p not in ("", ".", "..") for p in parts)
            and all(t in fmt for t in NAME_FORMAT_TOKENS))


@EXAMPLES
@given(fmt=FORMATS)
def test_a_capture_name_format_is_the_same_rule_through_the_management_api_and_a_config_file(
        broker, tmp_path, fmt):
    if fmt == "":  # the management API reads an empty format as none given: the default
        return
    by_api = answered(put(broker, f"{NS}/eventhubs/held", capture_body(fmt)))
    line = loaded(tmp_path / "capture.toml",
                  f'[namespaces.{NS}.eventhubs.orders.capture]\ndestination = "out"\n'
                  f"name_format = {toml_value(fmt)}\n")
    assert by_api == (line is None) == expected_format(fmt), (fmt, line)
    if line is not None and "invalid TOML" not in line and "not UTF-8" not in line:
        # (a lone surrogate cannot be written as UTF-8, nor a raw DEL in a TOML string)
        assert "event hub 'orders'" in line and "name_format" in line, line


def test_a_name_format_that_climbs_says_so_in_both_front_ends(broker, tmp_path):
    r = put(broker, f"{NS}/eventhubs/held", capture_body("../" + FMT))
    assert not answered(r)
    message = r.json()["error"]["message"]
    assert "archiveNameFormat" in message and "'..'" in message, message
    line = loaded(tmp_path / "climb.toml", f'[namespaces.{NS}.eventhubs.orders.capture]\n'
                                           f'name_format = "../{FMT}"\n')
    assert "event hub 'orders'" in line and "name_format" in line and "'..'" in line, line


# -- how many namespaces ----------------------------------------------------------------------
def namespaces_toml(count: int, limit: str) -> str:
    return f"[limits]\nnamespaces = {limit}\n\n" + "".join(f"[namespaces.tenant-{i:02d}]\n" for i in range(count))


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_a_config_file_serves_as_many_namespaces_as_limits_allow(tmp_path, limit):
    assert loaded(tmp_path / "ok.toml", namespaces_toml(limit, str(limit))) is None
    line = loaded(tmp_path / "many.toml", namespaces_toml(limit + 1, str(limit)))
    assert f"{limit + 1} namespaces" in line and "[limits] namespaces" in line, line


@pytest.mark.parametrize("limit", ["0", "-1", "1.5", "2.0", "inf", '"3"', "true", str(2**64)])
def test_a_hostile_namespaces_limit_is_refused_naming_limits(tmp_path, limit):
    line = loaded(tmp_path / "limits.toml", namespaces_toml(1, limit))
    if limit == str(2**64):  # a bound far above anything: the one namespace is served
        assert line is None
        return
    assert line is not None and "[limits] namespaces" in line, line


def test_the_management_api_makes_namespaces_up_to_the_same_limit(broker):
    """The broker's config says [limits] namespaces = 3 and serves one: two more are made,
    the next is refused with ARM's QuotaExceeded, in the rule's words."""
    services = broker.broker.services
    made = []
    try:
        for i in range(LIMIT + 2):  # bounded: two past the limit
            name = f"extra-ns-{i:02d}"
            r = put(broker, name, json.dumps({"sku": {"name": "Standard"}}))
            if not answered(r):
                assert r.json()["error"]["code"] == "QuotaExceeded", r.text
                message = r.json()["error"]["message"]
                assert f"{LIMIT + 1} namespaces" in message and "[limits] namespaces" in message, message
                assert name not in services.namespaces
                break
            made.append(name)
        assert len(services.namespaces) == LIMIT and len(made) == LIMIT - 1, made
    finally:
        for name in made:
            requests.delete(f"{broker.http_url}{MG}/{name}{API}", timeout=20)


# -- the start-up line ------------------------------------------------------------------------
STARTUP = [
    ("retention.toml", f"[namespaces.{NS}.eventhubs.orders]\nretention_hours = 1000001\n",
     ["event hub 'orders'", "retention_hours=1000001", "1,000,000"]),
    ("fraction.toml", f"[namespaces.{NS}.eventhubs.orders]\nretention_hours = 1.5\n",
     ["event hub 'orders'", "retention_hours", "whole number"]),
    ("climb.toml", f'[namespaces.{NS}.eventhubs.orders.capture]\nname_format = "{{Namespace}}/../{FMT}"\n',
     ["event hub 'orders'", "name_format", "'..'"]),
    ("control.toml", f'[namespaces.{NS}.eventhubs.orders.capture]\nname_format = "\\u0001{FMT}"\n',
     ["event hub 'orders'", "name_format", "printable"]),
    ("tenants.toml", namespaces_toml(3, "2"), ["3 namespaces", "[limits] namespaces"]),
    ("bytes.toml", f"[namespaces.{NS}.eventhubs.orders.capture]\nname_format = \"".encode()
     + b"\xff\xfe/.." + FMT.encode() + b'"\n', ["not UTF-8", "0xff"]),
]


@pytest.mark.parametrize("name,text,wanted", STARTUP, ids=[s[0] for s in STARTUP])
def test_kafka_wire_serve_stops_with_one_line_naming_the_file_and_the_rule(tmp_path, name, text, wanted):
    config = tmp_path / name
    config.write_bytes(text if isinstance(text, bytes) else text.encode())
    data = tmp_path / "data"
    res = kafka_wire("serve", "--config", str(config), "--data-dir", str(data), "--listen", "127.0.0.1:0",
                     "--no-http", "--no-amqp")
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    line = res.stderr.strip().splitlines()[-1]
    assert line.startswith(f"kafka-wire: {config}: "), line
    for part in wanted:
        assert part in line, (part, line)
    assert not data.exists()


# -- the door's check reads the model, as the live namespace has it ------------------------------
def test_a_strict_basic_hub_without_a_retention_is_made_by_a_config_as_by_the_management_api(tmp_path):
    """A strict Basic namespace's hubs get its 24-hour default retention: the config file's
    check applies it as the broker does (the check once ran over a stand-in for the runtime
    that lacked the namespace's defaults, and refused the hub: 168 hours past Basic's 24)."""
    config = tmp_path / "basic.toml"
    text = '[namespaces.basic-ns]\ntier = "Basic"\nmode = "strict"\n\n[namespaces.basic-ns.eventhubs.orders]\n'
    assert loaded(config, text) is None
    b = EmulatedBroker(tmp_path / "data", config_file=config, http=True).start()
    try:
        made = put(b, "basic-ns/eventhubs/refunds", '{"properties": {"partitionCount": 1}}')
        assert answered(made), made.text
        topics = b.broker.services.namespaces["basic-ns"].topics
        for hub in ("orders", "refunds"):
            assert topics.effective_config(hub).retention_ms == 24 * 3600 * 1000, hub
        longer = put(b, "basic-ns/eventhubs/longer",
                     '{"properties": {"retentionDescription": {"retentionTimeInHours": 25}}}')
        assert not answered(longer) and "24 hours" in longer.json()["error"]["message"], longer.text
    finally:
        b.stop()
    line = loaded(tmp_path / "longer.toml", text + "retention_hours = 25\n")
    assert line is not None and "event hub 'orders'" in line and "24" in line, line
