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
    r = contoso_call(b, "PUT", f"/$schemaGroups/g/schemas/{name}?api-version=2023-07-01", ROOT,
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


# -- headers and the page's size ----------------------------------------------------------------
def test_a_page_shows_an_events_first_headers_and_how_many_it_has(broker):
    """Events of ~1 MB that are 60,000 headers (Kafka) or user properties (HTTPS send,
    AMQP-typed): a page shows the first HEADERS_PREVIEW of each with headers_count and
    headers_truncated, reads no more of a record than it shows (the rest skipped by the
    record's length), and answers at once; the event's own view shows more, and the AMQP
    properties of an event with fewer headers are there as before."""
    broker.create_hub("fat", 1)
    many = [(f"p{i}", str(i).encode()) for i in range(60_000)]
    produce(broker, "fat", [{"value": b"kafka", "headers": many} for _ in range(5)])
    publication = json.dumps([{"Body": "https", "UserProperties": {f"p{i}": i for i in range(60_000)}}])
    for _ in range(5):
        r = requests.post(f"{broker.http_url}/fat/messages", data=publication, timeout=30,
                          headers={"Content-Type": "application/vnd.microsoft.servicebus.json"})
        assert r.status_code == 201, r.text
    r = requests.post(url(broker, "fat", "/events"), timeout=10,
                      json={"body": "few", "properties": {"a": 1}, "content_type": "text/plain"})
    assert r.status_code == 201, r.text
    started = time.monotonic()
    page = requests.get(url(broker, "fat", "/partitions/0/events"), params={"count": 200}, timeout=30)
    took = time.monotonic() - started
    assert page.status_code == 200 and len(page.content) < 1024 * 1024, len(page.content)
    events = page.json()["events"]
    assert [e["sequence_number"] for e in events] == list(range(11))
    for e in events[:10]:
        assert len(e["headers"]) == explorer.HEADERS_PREVIEW and e["headers_truncated"] is True
        assert e["headers_count"] >= 60_000
        assert e["headers"][7]["name"] == "p7" and e["headers"][7]["value"] in ("7", 7)
    assert events[0]["headers_count"] == 60_000 and events[5]["headers"][7] == \
        {"name": "p7", "type": "integer", "value": 7}
    few = events[10]
    assert few["headers"] == [{"name": "a", "type": "integer", "value": 1}]
    assert (few["headers_count"], few["headers_truncated"]) == (1, False)
    assert few["properties"]["content_type"] == "text/plain"
    assert took < 5, took  # ~10 s on the commit before, holding /health as long
    # A search looks in the headers a page shows (it reads no more of a record either).
    def search(q: str) -> list[int]:
        got = requests.get(url(broker, "fat", "/partitions/0/events"), params={"q": q, "count": 200}, timeout=30)
        return [e["sequence_number"] for e in got.json()["events"]]
    assert search("p99") == list(range(10)) and search("p500") == search("p59999") == []
    one = requests.get(url(broker, "fat", "/partitions/0/events/0"), timeout=30).json()
    assert len(one["headers"]) == explorer.HEADERS_WHOLE and one["headers_truncated"] is True


def test_a_page_stops_at_its_size_and_the_next_page_goes_on(broker):
    """Events whose preview is large (16 KiB of binary body, shown as hex, and 16 KiB of
    binary headers): a page of 100 stops before PAGE_BYTES of JSON, and paging from its
    next_sequence_number shows every event once."""
    broker.create_hub("wide", 1)
    body = bytes(range(256)) * 64
    headers = [(f"h{i}", bytes([0, i]) * 75) for i in range(100)]
    produce(broker, "wide", [{"value": body + bytes([i]), "headers": headers} for i in range(100)])
    seen, position, pages = [], 0, 0
    while position < 100 and pages < 100:
        page = requests.get(url(broker, "wide", "/partitions/0/events"), timeout=30,
                            params={"from": "sequence", "value": position, "count": 100})
        assert page.status_code == 200 and len(page.content) <= explorer.PAGE_BYTES, len(page.content)
        got = page.json()
        assert got["events"] and got["next_sequence_number"] == got["events"][-1]["sequence_number"] + 1
        seen += [e["sequence_number"] for e in got["events"]]
        position, pages = got["next_sequence_number"], pages + 1
    assert seen == list(range(100)) and pages > 1
    latest = requests.get(url(broker, "wide", "/partitions/0/events"), timeout=30,
                          params={"from": "latest", "count": 100}).json()
    assert latest["events"][-1]["sequence_number"] == 99 and len(latest["events"]) < 100


def test_the_console_says_how_many_headers_an_event_has_past_those_shown(tmp_path, chromium):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.console.test_explorer_browser import _click, _text, _wait_rows

    driver = chromium
    with EmulatedBroker(tmp_path / "data", http=True) as b:
        b.create_hub("fat", 1)
        produce(b, "fat", [{"value": b"many", "headers": [(f"p{i}", b"v") for i in range(150)]},
                           {"value": b"two", "headers": [("x", b"1"), ("y", b"2")]}])
        driver.get(b.http_url + "/")
        WebDriverWait(driver, 20).until(lambda d: d.find_element(By.ID, "hub-title").text == "fat")
        driver.find_element(By.ID, "tab-events").click()
        _wait_rows(driver, lambda rows: rows == [0, 1])
        assert _text(driver, '#ex-events tr[data-seq="0"] td:nth-of-type(4)') == "150"
        assert _text(driver, '#ex-events tr[data-seq="1"] td:nth-of-type(4)') == "2"
        _click(driver, '#ex-events tr[data-seq="0"] button.expand')
        assert _text(driver, "#ex-events tr.detail .headers-cut") == \
            "Showing the first 100 of 150 headers (“Event as JSON” has more)."
        assert len(driver.find_elements(By.CSS_SELECTOR, "#ex-events tr.detail table.props tbody tr")) == 100
