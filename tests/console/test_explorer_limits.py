"""The Data Explorer against events built to hurt it: whatever a sender with only the
Send right puts in an event, a page of events still answers, quickly and in a bounded
size, and every other event on it stays readable."""
from __future__ import annotations

import pytest
import requests
from confluent_kafka import Producer

from kafka_wire.testing import EmulatedBroker

NS = "emulatorNs1"


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
