"""The console's events API reads at the namespace's one door, as a Kafka fetch and an AMQP
receiver do: a Disabled hub or a disabled application group serves no events (403), and
what it answers is charged to the egress throughput units, a read in their debt waiting
it out. Sends through a publisher's token go through the publisher policy, as REST's do."""
from __future__ import annotations

import concurrent.futures
import json
import time
import urllib.error
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_wire.coordinator.clock import VirtualClock
from kafka_wire.eventhubs import sas
from kafka_wire.eventhubs.app_groups import ApplicationGroup
from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.config_toml import namespace_config, sas_policy, toml_text

NS = "consolens"
HOST = f"{NS}.servicebus.windows.net"
ROOT_KEY, LISTEN_KEY, SEND_KEY = "cm9vdC1rZXk=", "bGlzdGVuLWtleQ==", "c2VuZC1rZXk="
CONFIG = toml_text(namespace_config(
    NS, throughput_units=1,
    policies={"RootManageSharedAccessKey": sas_policy(ROOT_KEY), "listen": sas_policy(LISTEN_KEY, "Listen"),
              "sender": sas_policy(SEND_KEY, "Send")},
    hubs={"orders": {"partitions": 1}, "other": {"partitions": 1}}))
EVENTS, SIZE = 50, 16_000  # 800 KB: within the one unit's 1 MB ingress burst (no throttled ack)


def token(policy: str, key: str, resource: str = "") -> str:
    return sas.generate(f"https://{HOST}/{resource}", policy, key, int(time.time()) + 3600)


def call(url: str, auth: str | None = None, method: str = "GET", body: bytes | None = None):
    """(status, body) of a request; error statuses are returned, not raised."""
    headers = {"Host": HOST, "Content-Type": "application/json"}
    if auth is not None:
        headers["Authorization"] = auth
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


@pytest.fixture
def clocked(tmp_path):
    """The namespace (1 throughput unit) on a frozen clock, its hub holding EVENTS events of
    SIZE bytes: egress refills only when the test advances the clock."""
    (tmp_path / "c.toml").write_text(CONFIG)
    clock = VirtualClock(start_ms=time.time_ns() // 1_000_000)
    with EmulatedBroker(tmp_path / "data", config_file=tmp_path / "c.toml", http=True, clock=clock,
                        group_initial_rebalance_delay_ms=0) as b:
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                      "sasl.mechanism": "PLAIN", "sasl.username": "$ConnectionString",
                      "sasl.password": b.connection_string(namespace=NS, policy="RootManageSharedAccessKey"),
                      "linger.ms": 5})
        for i in range(EVENTS):
            p.produce("orders", b"%05d" % i + b"x" * (SIZE - 5), partition=0)
        assert p.flush(30) == 0
        yield b, clock


def events_url(b, hub: str = "orders", tail: str = "") -> str:
    return f"{b.http_url}/api/namespaces/{NS}/hubs/{hub}/partitions/0/events{tail}"


def egress(b):
    return b.broker.services.namespaces[NS].quota.egress_bytes


def test_pages_are_charged_to_egress_and_a_read_in_debt_waits_it_out(clocked):
    b, clock = clocked
    listen = token("listen", LISTEN_KEY)
    bucket = egress(b)
    full = bucket.capacity
    assert bucket.tokens == full
    served = 0
    for _ in range(6):  # ~815 KB a page: the 2 MB bucket is in debt after the third
        status, body = call(events_url(b, tail=f"?count={EVENTS}&from=earliest"), listen)
        assert status == 200 and len(json.loads(body)["events"]) == EVENTS
        served += len(body)
        assert bucket.tokens == full - served  # (the clock is frozen: nothing refills)
        if bucket.tokens < 0:
            break
    assert bucket.tokens < 0, "six pages did not spend the namespace's egress"
    quota = b.broker.services.namespaces[NS].quota
    delay = quota.egress_delay(clock.now_ms())
    assert delay > 0
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(call, events_url(b, tail="/3/body"), listen)
        with pytest.raises(concurrent.futures.TimeoutError):
            waiting.result(timeout=0.3)  # held while the units are in debt
        clock.advance_threadsafe(b._loop, delay).result(5)
        status, body = waiting.result(timeout=20)
    assert status == 200 and body == b"00003" + b"x" * (SIZE - 5)
    # the debt refilled (to the ms the delay was rounded up to), then the body charged
    assert -SIZE <= bucket.tokens < -SIZE + bucket.rate / 1000


def test_an_event_and_its_body_are_charged_what_they_carry(clocked):
    b, _clock = clocked
    listen = token("listen", LISTEN_KEY)
    bucket = egress(b)
    full = bucket.capacity
    status, body = call(events_url(b, tail="/7"), listen)
    assert status == 200 and json.loads(body)["sequence_number"] == 7
    assert bucket.tokens == full - len(body)
    status, raw = call(events_url(b, tail="/7/body"), listen)
    assert status == 200 and len(raw) == SIZE
    assert bucket.tokens == full - len(body) - SIZE
    # A page past the end carries no event: nothing is charged
    status, empty = call(events_url(b, tail=f"?from=sequence&value={EVENTS}"), listen)
    assert status == 200 and json.loads(empty)["events"] == []
    assert bucket.tokens == full - len(body) - SIZE
    # Refused reads are not charged either: no token, a wrong one, no such event
    assert call(events_url(b, tail="/7/body"))[0] == 401
    assert call(events_url(b, tail="/7/body"), token("listen", "d3Jvbmc="))[0] == 401
    assert call(events_url(b, tail=f"/{EVENTS + 5}/body"), listen)[0] == 404
    assert bucket.tokens == full - len(body) - SIZE


def _disable(b, hub: str) -> None:
    url = (f"{b.http_url}/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/"
           f"Microsoft.EventHub/namespaces/{NS}/eventhubs/{hub}?api-version=2024-01-01")
    status, body = call(url, token("RootManageSharedAccessKey", ROOT_KEY), "PUT",
                        json.dumps({"properties": {"partitionCount": 1, "status": "Disabled"}}).encode())
    assert status == 200 and json.loads(body)["properties"]["status"] == "Disabled", body


@pytest.mark.parametrize("tail", ["?from=earliest", "?from=latest", "/0", "/0/body",
                                  "?from=earliest&q=xx"])
def test_a_disabled_hub_serves_no_events(clocked, tail):
    b, _clock = clocked
    listen = token("listen", LISTEN_KEY)
    assert call(events_url(b, tail=tail), listen)[0] == 200
    _disable(b, "orders")
    before = egress(b).tokens
    status, body = call(events_url(b, tail=tail), listen)
    assert status == 403, body
    assert "Disabled" in json.loads(body)["error"]
    assert egress(b).tokens == before
    # without a token, or with a wrong one, it is the token that is refused first (401)
    assert call(events_url(b, tail=tail))[0] == 401
    assert call(events_url(b, tail=tail), token("listen", "d3Jvbmc="))[0] == 401
    # the hub is still described; another hub still serves
    assert call(f"{b.http_url}/api/namespaces/{NS}/hubs/orders", listen)[0] == 200
    assert call(events_url(b, "other", tail), listen)[0] in (200, 404)  # (404: other has no event 0)


def test_a_disabled_application_group_reads_nothing(clocked):
    b, _clock = clocked
    listen = token("listen", LISTEN_KEY)
    model = b.broker.services.namespaces[NS].model
    b.call(lambda: model.application_groups.__setitem__(
        "readers", ApplicationGroup("readers", "SASKeyName=listen", enabled=False)))
    status, body = call(events_url(b, tail="?from=earliest"), listen)
    assert status == 403 and "application group 'readers'" in json.loads(body)["error"]
    assert call(events_url(b, tail="/1/body"), listen)[0] == 403
    # another policy's token is not in the group
    status, body = call(events_url(b, tail="?from=earliest"), token("RootManageSharedAccessKey", ROOT_KEY))
    assert status == 200 and len(json.loads(body)["events"]) == EVENTS


@pytest.mark.parametrize("tail", ["/..%2F0", "/-1/body", "/1/body/x", "/" + "9" * 400, "?from=nowhere",
                                  "?count=" + "9" * 400])
def test_odd_paths_are_refused_and_charge_nothing(clocked, tail):
    b, _clock = clocked
    before = egress(b).tokens
    status, body = call(events_url(b, tail=tail), token("listen", LISTEN_KEY))
    assert status in (400, 404) and "error" in json.loads(body)
    assert egress(b).tokens == before


# -- sends through a publisher's token ---------------------------------------------------
def _send(b, auth, doc, hub: str = "orders"):
    return call(f"{b.http_url}/api/namespaces/{NS}/hubs/{hub}/events", auth, "POST",
                json.dumps(doc).encode() if isinstance(doc, dict) else doc)


def _stored(b, expected: int) -> list:
    c = Consumer({"bootstrap.servers": b.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "PLAIN", "sasl.username": "$ConnectionString", "group.id": "g",
                  "sasl.password": b.connection_string(namespace=NS, policy="RootManageSharedAccessKey"),
                  "enable.auto.commit": False})
    c.assign([TopicPartition("other", 0, 0)])
    got = []
    deadline = time.monotonic() + 20
    try:
        while len(got) < expected and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m)
    finally:
        c.close()
    assert len(got) == expected, f"read {len(got)} of {expected} events"
    return got


def test_a_publishers_console_send_is_keyed_and_stamped_as_rest_sends_it(clocked):
    b, _clock = clocked
    dev1 = token("sender", SEND_KEY, "other/publishers/dev1")
    assert _send(b, dev1, {"body": "keyed", "partition_key": "dev1"}, "other")[0] == 201
    assert _send(b, dev1, {"body": "no key"}, "other")[0] == 201
    status, body = _send(b, dev1, {"body": "other key", "partition_key": "dev2"}, "other")
    assert status == 403 and "dev2" in json.loads(body)["error"]
    status, body = _send(b, dev1, {"body": "a partition", "partition": 0}, "other")
    assert status == 403 and "partition" in json.loads(body)["error"]
    assert _send(b, dev1, {"body": "another hub"}, "orders")[0] == 404  # the token is for 'other'
    assert _send(b, None, {"body": "no token"}, "other")[0] == 401
    assert _send(b, token("sender", "d3Jvbmc=", "other/publishers/dev1"), {"body": "x"}, "other")[0] == 401
    assert _send(b, dev1, b"[not json", "other")[0] == 400
    assert _send(b, dev1, {"body": "x", "partition_key": "dev1" * 10_000}, "other")[0] == 403
    stored = _stored(b, 2)
    assert [m.value() for m in stored] == [b"keyed", b"no key"]
    for m in stored:
        assert m.key() == b"dev1"
        amqp = dict(m.headers())["x-opt-amqp-properties"]
        assert b"\xa3\x0fx-opt-publisher\xa1\x04dev1" in amqp  # (symbol key, str8 value)
