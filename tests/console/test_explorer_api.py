"""The Data Explorer's JSON API against a live broker: events written by Kafka
clients and over HTTPS read back page by page from every kind of start, cut
bodies downloaded whole, searched, sent through the namespace's policy and read
by a Kafka consumer; reading moves no group's position; a namespace that
requires auth refuses all of it without a token."""
from __future__ import annotations

import json
import socket
import time

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_wire.console import explorer
from kafka_wire.console.api import TOKEN_MAX_BODY
from kafka_wire.eventhubs import connection_string, sas
from kafka_wire.eventhubs.partition_key import partition_for_key
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import LISTENER, MULTI_TOML, ROOT, SENDER
from tests.console.helpers import commit
from tests.eventhubs.conftest import confluent_conf

NS = "emulatorNs1"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("explorer") / "data", http=True) as b:
        yield b


def url(broker, hub: str, tail: str = "", ns: str = NS) -> str:
    return f"{broker.http_url}/api/namespaces/{ns}/hubs/{hub}{tail}"


def events(broker, hub: str, partition: int = 0, **query) -> dict:
    r = requests.get(url(broker, hub, f"/partitions/{partition}/events"), params=query, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def produce(broker, hub: str, records: list[dict], linger_ms: int = 0) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": linger_ms})
    for rec in records:
        p.produce(hub, **rec)
    assert p.flush(30) == 0


def test_pages_show_json_text_and_binary_bodies_with_keys_and_headers(broker):
    broker.create_hub("mixed", 1)
    produce(broker, "mixed", [
        {"value": json.dumps({"order": 7, "lines": [{"sku": "A", "n": 2}]}).encode(), "key": b"cust-7",
         "headers": [("source", b"web"), ("raw", b"\x00\xff")], "partition": 0},
        {"value": "plain text ✓".encode(), "partition": 0},
        {"value": bytes(range(32)), "key": b"\xff\xfe", "partition": 0},
        {"value": None, "key": b"gone", "partition": 0},
    ])
    page = events(broker, "mixed")
    assert [e["sequence_number"] for e in page["events"]] == [0, 1, 2, 3]
    assert (page["first_sequence_number"], page["last_sequence_number"], page["next_sequence_number"]) == (0, 3, 4)
    first, text, binary, tombstone = page["events"]
    assert first["body"]["format"] == "json"
    assert json.loads(first["body"]["text"]) == {"order": 7, "lines": [{"sku": "A", "n": 2}]}
    assert first["partition_key"] == "cust-7" and first["protocol"] == "kafka"
    assert first["headers"] == [{"name": "source", "type": "string", "value": "web"},
                                {"name": "raw", "type": "binary", "value": "00ff"}]
    assert (text["body"]["format"], text["body"]["text"]) == ("text", "plain text ✓")
    assert (binary["body"]["format"], binary["body"]["hex"]) == ("binary", bytes(range(32)).hex())
    assert (binary["partition_key"], binary["key_hex"]) == (None, "fffe")
    assert tombstone["body"]["null"] is True
    # Event Hubs offsets are strings, increasing; the enqueued time is the append time.
    assert all(int(e["offset"]) >= 0 for e in page["events"])
    assert abs(first["enqueued_time_ms"] - time.time() * 1000) < 60_000
    assert first["enqueued_time"].endswith("Z")


def test_every_start_position_and_paging_both_ways(broker):
    broker.create_hub("paged", 1)
    stamps = []
    for burst in range(3):  # three appends, far enough apart to tell their times apart
        produce(broker, "paged", [{"value": f"e{burst * 10 + i}".encode(), "partition": 0}
                                  for i in range(10)], linger_ms=50)
        stamps.append(events(broker, "paged", **{"from": "latest", "count": 1})["events"][0]["enqueued_time_ms"])
        time.sleep(0.05)
    assert stamps[0] < stamps[1] < stamps[2]
    seqs = lambda page: [e["sequence_number"] for e in page["events"]]  # noqa: E731
    assert seqs(events(broker, "paged", **{"from": "earliest", "count": 5})) == [0, 1, 2, 3, 4]
    assert seqs(events(broker, "paged", **{"from": "latest", "count": 3})) == [27, 28, 29]
    assert seqs(events(broker, "paged", **{"from": "sequence", "value": 12, "count": 3})) == [12, 13, 14]
    page = events(broker, "paged", **{"from": "sequence", "value": 12, "count": 3})
    assert page["next_sequence_number"] == 15
    # A byte offset, as an Event Hubs receiver reports it, starts at its event.
    offset = page["events"][1]["offset"]
    assert seqs(events(broker, "paged", **{"from": "offset", "value": offset, "count": 2})) == [13, 14]
    # A time: the first event enqueued at or after it (ISO 8601 or milliseconds).
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(stamps[1] / 1000)) + \
        f".{stamps[1] % 1000:03d}Z"
    assert seqs(events(broker, "paged", **{"from": "time", "value": iso, "count": 2})) == [10, 11]
    assert seqs(events(broker, "paged", **{"from": "time", "value": stamps[2], "count": 1})) == [20]
    # Paging back from a page's first event, and past either end.
    assert seqs(events(broker, "paged", before=12, count=4)) == [8, 9, 10, 11]
    assert seqs(events(broker, "paged", before=2, count=4)) == [0, 1]
    end = events(broker, "paged", **{"from": "sequence", "value": 30})
    assert end["events"] == [] and end["next_sequence_number"] == 30
    assert seqs(events(broker, "paged", **{"from": "sequence", "value": 99, "count": 1})) == []
    for bad in ({"from": "sequence"}, {"from": "sequence", "value": "x"}, {"from": "time", "value": "soon"},
                {"from": "nowhere"}, {"count": "many"}):
        r = requests.get(url(broker, "paged", "/partitions/0/events"), params=bad, timeout=10)
        assert r.status_code == 400 and r.json()["error"], (bad, r.text)
    assert requests.get(url(broker, "paged", "/partitions/7/events"), timeout=10).status_code == 404
    assert requests.get(url(broker, "nohub", "/partitions/0/events"), timeout=10).status_code == 404


_QUERY = st.dictionaries(st.sampled_from(["from", "value", "count", "before", "q"]),
                         st.one_of(st.sampled_from(["earliest", "latest", "sequence", "offset", "time", "-1",
                                                    "0", "99999999999999999999", "2026-13-45T99:00:00Z"]),
                                   st.text(max_size=24)), max_size=5)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=_QUERY, partition=st.sampled_from(["0", "1", "-1", "x", "99"]))
def test_any_query_gets_an_answer_or_a_clear_error_never_a_crash(broker, query, partition):
    if "fuzzed" not in {h["name"] for h in requests.get(f"{broker.http_url}/api/namespaces", timeout=10)
                        .json()[0]["hubs"]}:
        broker.create_hub("fuzzed", 1)
        produce(broker, "fuzzed", [{"value": f"v{i}".encode(), "partition": 0} for i in range(20)])
    r = requests.get(url(broker, "fuzzed", f"/partitions/{partition}/events"), params=query, timeout=10)
    assert r.status_code in (200, 400, 404), (query, r.status_code, r.text)
    body = r.json()
    if r.status_code == 200:
        seqs = [e["sequence_number"] for e in body["events"]]
        assert seqs == sorted(seqs) and all(0 <= s < 20 for s in seqs)
        assert len(seqs) <= 500
    else:
        assert body["error"]


def test_a_large_body_is_cut_in_pages_and_downloads_whole(broker):
    broker.create_hub("large", 1)
    big = json.dumps({"blob": "x" * 300_000, "n": 1}).encode()
    produce(broker, "large", [{"value": big, "partition": 0}])
    body = events(broker, "large")["events"][0]["body"]
    assert body["truncated"] is True and body["size"] == len(big)
    assert len(body["text"].encode()) == explorer.BODY_PREVIEW and body["format"] == "json"
    whole = requests.get(url(broker, "large", "/partitions/0/events/0/body"), timeout=10)
    assert whole.status_code == 200 and whole.content == big
    assert whole.headers["Content-Disposition"] == 'attachment; filename="large-0-0.bin"'
    one = requests.get(url(broker, "large", "/partitions/0/events/0"), timeout=10).json()
    assert one["body"]["truncated"] is False and one["body"]["text"].encode() == big
    assert requests.get(url(broker, "large", "/partitions/0/events/5"), timeout=10).status_code == 404


def test_search_looks_at_keys_headers_and_bodies_and_says_where_it_stopped(broker, monkeypatch):
    broker.create_hub("searched", 1)
    produce(broker, "searched", [{"value": f"event {i}".encode(), "partition": 0,
                                  "key": b"vip" if i == 40 else None,
                                  "headers": [("trace", b"NEEDLE")] if i == 70 else None}
                                 for i in range(100)] + [{"value": b"a needle here", "partition": 0}])
    page = events(broker, "searched", q="needle")  # case-insensitive
    assert [e["sequence_number"] for e in page["events"]] == [70, 100]
    assert [e["sequence_number"] for e in events(broker, "searched", q="VIP")["events"]] == [40]
    # With a small limit a search stops early and says where; going on from there finds the rest.
    monkeypatch.setattr(explorer, "SCAN_EVENTS", 30)
    found, start, requests_made = [], 0, 0
    while start < 101:
        page = events(broker, "searched", q="needle", **{"from": "sequence", "value": start})
        assert page["next_sequence_number"] > start and page["scanned"] == page["next_sequence_number"] - start
        found += [e["sequence_number"] for e in page["events"]]
        start, requests_made = page["next_sequence_number"], requests_made + 1
    assert found == [70, 100] and requests_made > 1


def test_reading_moves_no_consumer_groups_position(broker):
    broker.create_hub("watched", 2)
    produce(broker, "watched", [{"value": b"v", "partition": p} for p in (0, 1) for _ in range(20)])
    commit(broker.bootstrap_servers, "watched", "billing", {0: 5, 1: 7})
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    groups_before = sorted(g.group_id for g in admin.list_consumer_groups().result(10).valid)
    for p in (0, 1):
        events(broker, "watched", p, **{"from": "earliest", "count": 500})
        events(broker, "watched", p, **{"from": "latest"})
        requests.get(url(broker, "watched", f"/partitions/{p}/events/3/body"), timeout=10)
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "billing"})
    try:
        got = c.committed([TopicPartition("watched", 0), TopicPartition("watched", 1)], timeout=10)
    finally:
        c.close()
    assert [tp.offset for tp in got] == [5, 7]
    assert sorted(g.group_id for g in admin.list_consumer_groups().result(10).valid) == groups_before
    lags = {g["name"]: [p["lag"] for p in g["partitions"]]
            for g in requests.get(url(broker, "watched", "/consumer-groups"), timeout=10).json()}
    assert lags["billing"] == [15, 13]


def test_send_goes_to_the_partition_key_or_round_robin_and_a_kafka_consumer_reads_it(broker):
    broker.create_hub("sent", 3)

    def send(doc) -> requests.Response:
        return requests.post(url(broker, "sent", "/events"), json=doc, timeout=10)

    r = send({"body": '{"hello": 1}', "partition": 2, "properties": {"n": 5, "who": "console", "ok": True},
              "content_type": "application/json"})
    assert r.status_code == 201, r.text
    assert r.json() == {"namespace": NS, "hub": "sent", "partition": 2, "sequence_number": 0}
    keyed = send({"body": "keyed", "partition_key": "customer-9"}).json()
    assert keyed["partition"] == partition_for_key("customer-9", 3)
    spread = {send({"body": f"rr{i}"}).json()["partition"] for i in range(3)}
    assert spread == {0, 1, 2}
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "sent-reader",
                  "enable.auto.commit": False})
    c.assign([TopicPartition("sent", 2, 0)])
    try:
        msg = None
        deadline = time.monotonic() + 20
        while msg is None and time.monotonic() < deadline:
            msg = c.poll(0.5)
    finally:
        c.close()
    assert msg is not None and not msg.error() and msg.value() == b'{"hello": 1}'
    names = [name for name, _ in msg.headers()]
    assert names[:3] == ["n", "who", "ok"]  # Kafka sees AMQP-encoded properties, as from an SDK
    shown = events(broker, "sent", 2)["events"][0]
    assert shown["protocol"] == "amqp" and shown["body"]["format"] == "json"
    assert [(h["name"], h["value"]) for h in shown["headers"]] == [("n", 5), ("who", "console"), ("ok", True)]
    assert shown["properties"]["content_type"] == "application/json"
    for bad, status in (({"body": 5}, 400), ({"body": "x", "partition": 9}, 400),
                        ({"body": "x", "properties": {"a": [1]}}, 400),
                        ({"body": "x", "partition": 0, "partition_key": "k"}, 400),
                        ({"body": "x" * 1_100_000}, 413)):  # over Standard's 1 MB publication
        r = send(bad)
        assert r.status_code == status and r.json()["error"], (bad, r.text)
    r = requests.post(url(broker, "sent", "/events"), data=b"not json", timeout=10)
    assert r.status_code == 400


def test_lag_history_is_sampled_per_partition(broker):
    broker.create_hub("lagging", 2)
    produce(broker, "lagging", [{"value": b"v", "partition": p} for p in (0, 1) for _ in range(10)])
    commit(broker.bootstrap_servers, "lagging", "slow", {0: 4, 1: 10})
    deadline = time.monotonic() + 15
    history = []
    while time.monotonic() < deadline and not history:
        groups = requests.get(url(broker, "lagging", "/consumer-groups"), timeout=10).json()
        history = next(g for g in groups if g["name"] == "slow")["lag_history"]
        time.sleep(0.5)
    assert history and history[-1]["lags"] == [6, 0]


# -- a namespace that requires auth -------------------------------------------------------
@pytest.fixture(scope="module")
def auth_broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("explorer-auth") / "data", config_file=MULTI_TOML,
                        http=True) as b:
        password = connection_string.build(f"127.0.0.1:{b.port}", key_name=ROOT[0], key=ROOT[1])
        p = Producer(confluent_conf(b.bootstrap_servers, password))
        p.produce("orders", value=b"secret", partition=0)
        assert p.flush(30) == 0
        yield b


def sas_token(policy, hub: str | None = None) -> str:
    return sas.generate(sas.resource_uri("contoso.servicebus.windows.net", hub), policy[0], policy[1],
                        int(time.time()) + 600)


def test_without_a_token_nothing_of_the_namespace_is_shown(auth_broker):
    b = auth_broker
    for tail in ("", "/consumer-groups", "/partitions/0/events", "/partitions/0/events/0/body"):
        r = requests.get(url(b, "orders", tail, "contoso"), timeout=10)
        assert r.status_code == 401, (tail, r.text)
        assert r.json()["auth_required"] is True and b"secret" not in r.content
    r = requests.post(url(b, "orders", "/events", "contoso"), json={"body": "x"}, timeout=10)
    assert r.status_code == 401
    snap = requests.get(f"{b.http_url}/api/snapshot", params={"namespace": "contoso", "hub": "orders"},
                        timeout=10).json()
    contoso = next(ns for ns in snap["namespaces"] if ns["name"] == "contoso")
    assert contoso["locked"] is True and contoso["hubs"] == []
    assert snap["hub"] is None and snap["hub_error"]["auth_required"] is True
    assert "orders" not in json.dumps(snap["namespaces"])
    bad = requests.get(url(b, "orders", "/partitions/0/events", "contoso"), timeout=10,
                       headers={"Authorization": sas_token(("RootManageSharedAccessKey", "d3Jvbmc="))})
    assert bad.status_code == 401 and "signature" in bad.json()["error"]
    assert bad.json()["token_refused"] is True


def test_tokens_grant_what_their_policy_grants(auth_broker):
    b = auth_broker
    listen = {"Authorization": sas_token(LISTENER)}
    page = requests.get(url(b, "orders", "/partitions/0/events", "contoso"), headers=listen, timeout=10)
    assert page.status_code == 200 and page.json()["events"][0]["body"]["text"] == "secret"
    r = requests.post(url(b, "orders", "/events", "contoso"), json={"body": "x"}, headers=listen, timeout=10)
    assert r.status_code == 401 and "Send" in r.json()["error"]
    assert "token_refused" not in r.json()  # a good token without the right
    send = {"Authorization": sas_token(SENDER)}
    r = requests.post(url(b, "orders", "/events", "contoso"), json={"body": "from the console"},
                      headers=send, timeout=10)
    assert r.status_code == 201, r.text
    r = requests.get(url(b, "orders", "/partitions/0/events", "contoso"), headers=send, timeout=10)
    assert r.status_code == 401 and "Listen" in r.json()["error"]
    snap = requests.get(f"{b.http_url}/api/snapshot", params={"namespace": "contoso", "hub": "orders"},
                        headers={"Authorization": sas_token(ROOT)}, timeout=10).json()
    contoso = next(ns for ns in snap["namespaces"] if ns["name"] == "contoso")
    assert contoso["locked"] is False and {h["name"] for h in contoso["hubs"]} == {"orders", "payments"}
    assert snap["hub"]["name"] == "orders"
    fabrikam = next(ns for ns in snap["namespaces"] if ns["name"] == "fabrikam")
    assert fabrikam["locked"] is True  # its own token is needed


def test_the_console_signs_in_with_a_connection_string(auth_broker):
    b = auth_broker
    token_url = f"{b.http_url}/api/namespaces/contoso/token"
    cs = connection_string.build("contoso.servicebus.windows.net", key_name=LISTENER[0], key=LISTENER[1])
    r = requests.post(token_url, json={"connection_string": cs}, timeout=10)
    assert r.status_code == 200, r.text
    assert r.json()["rights"] == ["Listen"]
    page = requests.get(url(b, "orders", "/partitions/0/events", "contoso"), timeout=10,
                        headers={"Authorization": r.json()["token"]})
    assert page.status_code == 200
    wrong = connection_string.build("contoso.servicebus.windows.net", key_name=LISTENER[0], key="d3Jvbmc=")
    r = requests.post(token_url, json={"connection_string": wrong}, timeout=10)
    assert r.status_code == 401 and "wrong" in r.json()["error"]
    other = connection_string.build("fabrikam.servicebus.windows.net", key_name=ROOT[0], key="ZmFicmlrYW0ta2V5")
    r = requests.post(token_url, json={"connection_string": other}, timeout=10)
    assert r.status_code == 401 and "fabrikam" in r.json()["error"]
    assert requests.post(token_url, json={}, timeout=10).status_code == 400


def test_a_sign_in_body_past_64_kib_is_refused_before_it_is_read(auth_broker):
    """The sign-in's body is its credential, so it is read before anything is checked:
    the listener would otherwise take 64 MiB of it from anyone."""
    b = auth_broker
    token_url = f"{b.http_url}/api/namespaces/contoso/token"
    cs = connection_string.build("contoso.servicebus.windows.net", key_name=LISTENER[0], key=LISTENER[1])
    fits = json.dumps({"connection_string": cs, "pad": "x" * (TOKEN_MAX_BODY - len(cs) - 100)})
    assert len(fits) <= TOKEN_MAX_BODY
    r = requests.post(token_url, data=fits, timeout=10)
    assert r.status_code == 200 and r.json()["rights"] == ["Listen"], r.text
    # A 60 MiB Content-Length with no body sent: the answer comes at once, not after a read.
    host, port = b.http_url.split("//")[1].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /api/namespaces/contoso/token HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (60 << 20))
        head = sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 413"), head
    r = requests.post(token_url, data=b"{" + b" " * TOKEN_MAX_BODY + b"}", timeout=10)
    assert r.status_code == 413 and "at most 65536 bytes" in r.json()["error"]


def test_aborted_transactions_and_markers_are_not_shown(broker):
    broker.create_hub("txns", 1)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "explorer-txn"})
    p.init_transactions(30)
    for outcome in ("kept-1", "dropped", "kept-2"):
        p.begin_transaction()
        for i in range(3):
            p.produce("txns", f"{outcome}-{i}".encode(), partition=0)
        if outcome == "dropped":
            assert p.flush(30) == 0  # written to the log first, then aborted
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)
    page = events(broker, "txns", count=50)
    assert [e["body"]["text"] for e in page["events"]] == \
        [f"kept-{n}-{i}" for n in (1, 2) for i in range(3)]
    # The markers and aborted records still take sequence numbers: 3 + 1, 3 + 1, 3 + 1.
    assert [e["sequence_number"] for e in page["events"]] == [0, 1, 2, 8, 9, 10]
    assert page["next_sequence_number"] == 12
    assert requests.get(url(broker, "txns", "/partitions/0/events/4"), timeout=10).status_code == 404
