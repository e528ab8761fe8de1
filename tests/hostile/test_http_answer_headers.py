"""What a client sends never reaches an answer's headers raw: a name or a path
echoed in a header (Schema Registry's Schema-Name and Location, a failover's
Azure-AsyncOperation) cannot split the answer with CR LF, nor leave the client
without one because a character past Latin-1 cannot be written. Names are
refused by the route's own rule (in its own error shape) before anything is
stored; whatever gets through anyway is percent-encoded by the listener."""
from __future__ import annotations

import json
import re
import socket
import time
from urllib.parse import urlsplit

import pytest
import requests

from tests.hostile.conftest import start
from tests.hostile.surfaces import API, CREDENTIALS, HOST, MG, NS

ROOT = next(c for c in CREDENTIALS if c.kind == "root")
SR = "?api-version=2023-07-01"
AVRO = "application/json;serialization=Avro"
SCHEMA = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}]})
INJECTED = "x\r\nSet-Cookie: session=attacker\r\nX-Injected: yes"


def raw(broker, head: str, body: bytes = b"", timeout: float = 15.0) -> tuple[list[str], bytes]:
    """The answer's head lines and body, read until the broker closes (``Connection: close``)."""
    with socket.create_connection(("127.0.0.1", broker.http_port), timeout=timeout) as s:
        s.sendall(head.encode("latin-1") + body)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    head_bytes, _, rest = out.partition(b"\r\n\r\n")
    return head_bytes.decode("latin-1").split("\r\n"), rest


def arm_error(answer: requests.Response) -> tuple[int, str]:
    assert answer.headers["content-type"].startswith("application/json"), answer.text
    return answer.status_code, answer.json()["error"]["code"]


def stored(data_dir) -> bytes:
    """The registry's file: unchanged by a refused request (whatever its format)."""
    return (data_dir / "_schemas" / f"{NS}.json").read_bytes()


@pytest.fixture
def registry(tmp_path):
    """A broker whose namespace has the schema group ``g1`` and one schema in it."""
    broker = start(tmp_path / "data")
    try:
        made = requests.put(f"{broker.http_url}{MG}/{NS}/schemagroups/g1{API}", timeout=15,
                            json={"properties": {"schemaType": "Avro"}},
                            headers={"Host": HOST, **ROOT.header()})
        assert made.status_code == 200, made.text
        put = requests.put(f"{broker.http_url}/$schemaGroups/g1/schemas/shop.Order{SR}", data=SCHEMA,
                           timeout=15, headers={"Host": HOST, "Content-Type": AVRO, **ROOT.header()})
        assert put.status_code == 204, put.text
        yield broker, tmp_path / "data"
    finally:
        broker.stop()


def test_a_schema_name_past_latin_1_is_refused_in_the_registrys_shape_and_not_stored(registry):
    broker, data_dir = registry
    before = stored(data_dir)
    for name in ("%E2%82%AC-euro", "a%3Ab", "-dash-first", "n" * 51):
        answer = requests.put(f"{broker.http_url}/$schemaGroups/g1/schemas/{name}{SR}", data=SCHEMA,
                              timeout=15, headers={"Host": HOST, "Content-Type": AVRO, **ROOT.header()})
        assert arm_error(answer) == (400, "BadRequest"), name
        assert "schema name" in answer.json()["error"]["message"]
        looked_up = requests.post(f"{broker.http_url}/$schemaGroups/g1/schemas/{name}:get-id{SR}",
                                  data=SCHEMA, timeout=15,
                                  headers={"Host": HOST, "Content-Type": AVRO, **ROOT.header()})
        assert arm_error(looked_up) == (404, "ItemNotFound"), name  # nothing was stored under it
    assert stored(data_dir) == before


def test_cr_lf_in_a_schema_name_cannot_split_the_answer(registry):
    broker, data_dir = registry
    before = stored(data_dir)
    path = "/$schemaGroups/g1/schemas/x%0D%0ASet-Cookie:%20session=attacker%0D%0AX-Injected:%20yes" + SR
    lines, body = raw(broker, f"PUT {path} HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: {ROOT.token()}\r\n"
                              f"Content-Type: {AVRO}\r\nContent-Length: {len(SCHEMA)}\r\n"
                              "Connection: close\r\n\r\n", SCHEMA.encode())
    assert lines[0] == "HTTP/1.1 400 Bad Request", lines
    assert not [h for h in lines if h.lower().startswith(("set-cookie", "x-injected"))], lines
    assert json.loads(body)["error"]["code"] == "BadRequest"
    assert stored(data_dir) == before


def test_names_stored_before_the_rule_are_served_with_their_headers_percent_encoded(tmp_path):
    """A registry kept by an older broker may hold any name: the listener still answers,
    and never with a header of the client's making."""
    state = {"groups": {"g1": {"format": "Avro", "compatibility": "None", "properties": {},
                               "versions": {INJECTED: ["crlf"], "\u20ac-euro": ["euro"]}}},
             "schemas": {"crlf": {"group": "g1", "name": INJECTED, "version": 1, "format": "Avro",
                                  "content": SCHEMA},
                         "euro": {"group": "g1", "name": "\u20ac-euro", "version": 1, "format": "Avro",
                                  "content": SCHEMA}}}
    (tmp_path / "data" / "_schemas").mkdir(parents=True)
    (tmp_path / "data" / "_schemas" / f"{NS}.json").write_text(json.dumps(state))
    broker = start(tmp_path / "data")
    try:
        lines, body = raw(broker, f"GET /$schemaGroups/$schemas/crlf{SR} HTTP/1.1\r\nHost: {HOST}\r\n"
                                  f"Authorization: {ROOT.token()}\r\nConnection: close\r\n\r\n")
        assert lines[0] == "HTTP/1.1 200 OK", lines
        assert body == SCHEMA.encode()
        assert not [h for h in lines if h.lower().startswith(("set-cookie", "x-injected"))], lines
        assert "Schema-Name: x%0D%0ASet-Cookie: session=attacker%0D%0AX-Injected: yes" in lines
        euro = requests.get(f"{broker.http_url}/$schemaGroups/$schemas/euro{SR}", timeout=15,
                            headers={"Host": HOST, **ROOT.header()})
        assert euro.status_code == 200 and euro.text == SCHEMA
        assert euro.headers["Schema-Name"] == "%E2%82%AC-euro"
        assert euro.headers["Location"] == "/$schemaGroups/g1/schemas/%E2%82%AC-euro/versions/1"
    finally:
        broker.stop()


GEO = "?api-version=2026-01-01"
GEO_NS = "georeplic"
# a URL as RFC 3986 writes one: nothing raw that a header, or a client splitting the URL, could trip on
URL = re.compile(r"https?://[A-Za-z0-9\-._~%!$&'()*+,;=:\[\]]+(/[A-Za-z0-9\-._~%!$&'()*+,;=:@]*)*"
                 r"\?api-version=[A-Za-z0-9\-._~%]+")


def geo_namespace(broker) -> dict:
    owner = {"Authorization": f"Bearer {broker.subscription_token}"}
    made = requests.put(f"{broker.http_url}{MG}/{GEO_NS}{GEO}", headers=owner, timeout=15, json={
        "location": "local", "sku": {"name": "Premium", "tier": "Premium", "capacity": 1},
        "properties": {"geoDataReplication": {"locations": [{"locationName": "local", "roleType": "Primary"},
                                                            {"locationName": "west", "roleType": "Secondary"}]}}})
    assert made.status_code in (200, 201), made.text
    return owner


def finished(broker, url: str, owner: dict, timeout: float = 20.0) -> dict:
    """The operation's status once it is no longer InProgress, polled at the URL the 202 named."""
    parts = urlsplit(url)
    deadline = time.monotonic() + timeout
    while True:
        status = requests.get(f"{broker.http_url}{parts.path}?{parts.query}", headers={"Host": HOST, **owner},
                              timeout=15)
        assert status.status_code == 200, status.text
        if status.json()["status"] != "InProgress":
            return status.json()
        assert time.monotonic() < deadline, status.text
        time.sleep(0.05)


def test_a_failovers_operation_urls_are_percent_encoded_and_lead_back(tmp_path, caplog):
    """The subscription and resource group segments of the path, and the Host, are the
    client's: the 202's URLs carry them percent-encoded (no raw byte for the listener's last
    guard to catch), an answer always comes, and the poller finds the operation there."""
    broker = start(tmp_path / "data")
    try:
        owner = geo_namespace(broker)
        sub = "/subscriptions/s%20%E2%82%AC/resourceGroups/g(1)/providers/Microsoft.EventHub/namespaces"
        started = requests.post(f"{broker.http_url}{sub}/{GEO_NS}/failover{GEO}", timeout=15,
                                headers={"Host": HOST, **owner},
                                json={"properties": {"primaryLocation": "west", "force": True}})
        assert started.status_code == 202, started.text
        status_url = started.headers["Azure-AsyncOperation"]
        assert URL.fullmatch(status_url) and URL.fullmatch(started.headers["Location"]), started.headers
        assert status_url.startswith(f"http://{HOST}/subscriptions/s%20%E2%82%AC/resourceGroups/g(1)/"), status_url
        assert finished(broker, status_url, owner)["status"] == "Succeeded"

        # CR LF in a segment: no header of the client's making
        sub = "/subscriptions/s%0D%0ASet-Cookie:%20a=b%0D%0AX-Injected:%20yes/resourceGroups/g/providers/" \
              "Microsoft.EventHub/namespaces"
        body = json.dumps({"properties": {"primaryLocation": "local", "force": True}})
        head = (f"POST {sub}/{GEO_NS}/failover{GEO} HTTP/1.1\r\n"
                f"Host: {HOST}\r\nAuthorization: {owner['Authorization']}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n")
        # A bare LF in the Host is refused before anything is done (21678e1): a proxy
        # reading it as a line end would see other fields than the broker does
        refused, _ = raw(broker, head.replace(f"Host: {HOST}\r\n", f"Host: {HOST}\nX-Injected: yes\r\n"),
                         body.encode())
        assert refused[0].startswith("HTTP/1.1 400 "), refused
        assert not [h for h in refused if h.lower().startswith(("set-cookie", "x-injected"))]
        lines, _ = raw(broker, head, body.encode())
        assert lines[0].startswith("HTTP/1.1 202 "), lines
        assert not [h for h in "\n".join(lines).split("\n") if h.lower().startswith(("set-cookie", "x-injected"))]
        operation = next(h.split(": ", 1)[1] for h in lines if h.startswith("Azure-AsyncOperation: "))
        assert URL.fullmatch(operation), operation
        assert finished(broker, operation, owner)["status"] == "Succeeded"
        assert not [r for r in caplog.records if "percent-encoded" in r.getMessage()]
    finally:
        broker.stop()
