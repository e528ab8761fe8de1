"""The Data Explorer against events built to hurt it: whatever a sender with only the
Send right puts in an event, a page of events still answers, quickly and in a bounded
size, and every other event on it stays readable."""
from __future__ import annotations

import json
import time

import pytest
import requests
from confluent_kafka import Producer

from kafka_wire.console import explorer
from kafka_wire.eventhubs import connection_string, sas
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import LISTENER, MULTI_TOML, ROOT, SENDER
from tests.eventhubs.conftest import confluent_conf

NS = "emulatorNs1"
HOST = "contoso.servicebus.windows.net"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("explorer-limits") / "data", http=True) as b:
        yield b


def url(broker, hub: str, tail: str = "") -> str:
    return f"{broker.http_url}/api/namespaces/{NS}/hubs/{hub}{tail}"


def produce(broker, hub: str, records: list[dict]) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
    for rec in records:
        p.produce(hub, partition=0, **rec)
    assert p.flush(30) == 0


def test_a_body_nested_past_the_recursion_limit_is_shown_as_text(broker):
    """JSON text nested 5,000 deep does not parse in Python (RecursionError): it is
    shown as text, and the events beside it on the page as they are."""
    broker.create_hub("deep", 1)
    deep = b"[" * 5000 + b"]" * 5000  # 10 KB: under the page's preview, so parsed whole
    produce(broker, "deep", [{"value": b'{"n": 1}'}, {"value": deep}, {"value": b"after"}])
    r = requests.get(url(broker, "deep", "/partitions/0/events"), timeout=10)
    assert r.status_code == 200, r.text[:300]
    before, nested, after = r.json()["events"]
    assert (before["body"]["format"], before["body"]["text"]) == ("json", '{"n": 1}')
    assert nested["body"]["format"] == "text" and nested["body"]["text"].encode() == deep
    assert (after["body"]["format"], after["body"]["text"]) == ("text", "after")
    one = requests.get(url(broker, "deep", "/partitions/0/events/1"), timeout=10)
    assert one.status_code == 200, one.text[:300]
    assert one.json()["body"]["format"] == "text" and one.json()["body"]["text"].encode() == deep


# -- Avro bodies with a registered schema ----------------------------------------------------
def zigzag(n: int) -> bytes:
    """An Avro long."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def contoso_call(b, method: str, path: str, policy, **kw) -> requests.Response:
    token = sas.generate(sas.resource_uri(HOST), *policy, int(time.time()) + 600)
    return requests.request(method, b.http_url + path, timeout=10,
                            headers={"Host": HOST, "Authorization": token, **kw.pop("headers", {})}, **kw)


@pytest.fixture
def registry_broker(tmp_path):
    """contoso (auth required) with an Avro schema group ``g``; its hub ``payments``."""
    with EmulatedBroker(tmp_path / "data", config_file=MULTI_TOML, http=True) as b:
        r = contoso_call(b, "PUT", "/subscriptions/s/resourceGroups/g/providers/Microsoft.EventHub/"
                                   "namespaces/contoso/schemagroups/g?api-version=2024-01-01", ROOT,
                         json={"properties": {"schemaType": "Avro"}})
        assert r.status_code == 200, r.text
        yield b


def register(b, name: str, schema) -> str:
    r = contoso_call(b, "PUT", f"/$schemaGroups/g/schemas/{name}?api-version=2023-07-01", SENDER,
                     headers={"Content-Type": "application/json;serialization=Avro"}, data=json.dumps(schema))
    assert r.status_code == 204, r.text
    return r.headers["Schema-Id"]


def send_avro(b, bodies: list[tuple[str, bytes]]) -> None:
    """(schema id, body) events to payments, as the Avro encoder labels them."""
    password = connection_string.build(f"127.0.0.1:{b.port}", key_name=SENDER[0], key=SENDER[1])
    p = Producer(confluent_conf(b.bootstrap_servers, password, **{"linger.ms": 0}))
    for schema_id, body in bodies:
        p.produce("payments", value=body, partition=0, headers=[("content-type", f"avro/binary+{schema_id}".encode())])
    assert p.flush(30) == 0


def read_page(b, **query) -> requests.Response:
    token = sas.generate(sas.resource_uri(HOST), *LISTENER, int(time.time()) + 600)
    return requests.get(f"{b.http_url}/api/namespaces/contoso/hubs/payments/partitions/0/events",
                        params=query, headers={"Authorization": token}, timeout=30)


def test_an_avro_body_claiming_more_values_than_a_page_decodes_is_shown_as_bytes(registry_broker):
    """A few bytes of array or map counts, against items that take no bytes to encode
    (null, a record of nulls, an array of them), claim millions of values, up to 2**62;
    so do a recursive type nesting deeper and deeper, and a decimal of 100 KB (decoded
    in quadratic time). Each is shown as its bytes with why, the page answers at once
    and small, and the Avro bodies beside them still decode."""
    b = registry_broker
    ids = {name: register(b, name, schema) for name, schema in {
        "nulls": {"type": "array", "items": "null"},
        "records": {"type": "array", "items": {"type": "record", "name": "N",
                                               "fields": [{"name": "a", "type": "null"}]}},
        "nested": {"type": "array", "items": {"type": "array", "items": "null"}},
        "map": {"type": "map", "values": {"type": "record", "name": "E", "fields": []}},
        "chain": {"type": "record", "name": "L", "fields": [{"name": "next", "type": ["null", "L"]}]},
        "decimal": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2},
        "order": {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"},
                                                               {"name": "lines", "type": {"type": "array", "items": "int"}}]},
    }.items()}
    order = zigzag(3) + b"o-1" + zigzag(2) + zigzag(5) + zigzag(7) + zigzag(0)
    five_million = zigzag(5_000_000) + zigzag(0)  # before the fix: a 25 MB page, seconds of the loop
    sent = [
        ("order", order),
        ("nulls", five_million),
        ("records", five_million),
        ("nested", zigzag(3) + (zigzag(2_000_000) + zigzag(0)) * 3 + zigzag(0)),
        ("map", zigzag(-900_000) + zigzag(900_000) + zigzag(0) * 900_000 + zigzag(0)),  # empty keys
        ("chain", b"\x02" * 100_000 + b"\x00"),
        ("decimal", zigzag(100_000) + b"\x7f" * 100_000),
        ("nulls", zigzag(2 ** 62) + zigzag(0)),
        ("records", zigzag(2 ** 62) + zigzag(0)),
        ("order", order),
    ]
    send_avro(b, [(ids[name], body) for name, body in sent])
    # A page spends at most PAGE_WORK values walked, so it ends early, after three of these
    # (AVRO_VALUES each); next_sequence_number says where the next one starts.
    events, position, pages = [], 0, 0
    while position < len(sent) and pages < len(sent):
        started = time.monotonic()
        page = read_page(b, **{"from": "sequence", "value": position})
        took = time.monotonic() - started
        assert page.status_code == 200, page.text[:300]
        assert len(page.content) < 256 * 1024 and took < 5, (len(page.content), took)
        got = page.json()
        assert got["events"] and got["next_sequence_number"] == got["events"][-1]["sequence_number"] + 1
        events += got["events"]
        position, pages = got["next_sequence_number"], pages + 1
        assert requests.get(f"{b.http_url}/health", timeout=5).status_code == 200
    assert [e["sequence_number"] for e in events] == list(range(len(sent)))
    assert 1 < pages < len(sent)
    shown = [e["body"]["avro"] for e in events]
    assert shown[0]["value"] == shown[-1]["value"] == {"id": "o-1", "lines": [5, 7]}
    for (name, _), avro in zip(sent[1:-1], shown[1:-1]):
        assert "value" not in avro and avro["too_large"] is True, (name, avro)
        assert avro["error"].startswith("not decoded: it "), (name, avro)
    assert events[1]["body"]["format"] == "binary"  # its bytes, as any binary body
    # The event's own view has a larger limit, and still refuses.
    token = sas.generate(sas.resource_uri(HOST), *LISTENER, int(time.time()) + 600)
    one = requests.get(f"{b.http_url}/api/namespaces/contoso/hubs/payments/partitions/0/events/8",
                       headers={"Authorization": token}, timeout=30)
    assert one.status_code == 200 and one.json()["body"]["avro"]["too_large"] is True
    assert "value" not in one.json()["body"]["avro"] and len(one.content) < 64 * 1024


def test_a_page_of_large_avro_bodies_ends_early_and_the_next_page_goes_on(registry_broker):
    """Bodies each within the limit (9,000 values) but not ten to a page: a page decodes
    at most PAGE_WORK values, ends before the event that would pass it, and the next
    page, from its next_sequence_number, starts with that event, decoded."""
    b = registry_broker
    schema_id = register(b, "longs", {"type": "array", "items": "long"})
    per_event = 9_000
    assert per_event <= explorer.AVRO_VALUES and 10 * per_event > explorer.PAGE_WORK
    body = zigzag(per_event) + zigzag(1) * per_event + zigzag(0)
    send_avro(b, [(schema_id, body)] * 10)
    seen, position, pages = [], 0, 0
    while position < 10 and pages < 10:
        got = read_page(b, **{"from": "sequence", "value": position}).json()
        assert 0 < sum(len(e["body"]["avro"]["value"]) + 1 for e in got["events"]) <= explorer.PAGE_WORK
        seen += [(e["sequence_number"], e["body"]["avro"]["value"]) for e in got["events"]]
        position, pages = got["next_sequence_number"], pages + 1
    assert seen == [(n, [1] * per_event) for n in range(10)] and pages == 4
    # The newest page (it ends at the partition's end) keeps the newest events.
    latest = read_page(b, **{"from": "latest"}).json()
    assert [e["sequence_number"] for e in latest["events"]] == [7, 8, 9]
    assert latest["next_sequence_number"] == 10
