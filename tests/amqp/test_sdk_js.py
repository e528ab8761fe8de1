"""The Azure Event Hubs JavaScript SDK (@azure/event-hubs on npm, rhea underneath)
against the AMQP endpoint over plain AMQP: properties, sending to a partition and by
key, receiving with EventHubConsumerClient.subscribe, the SDK's own lookup3 partition
mapper, and events crossing between the JavaScript and the Python SDK.

The node side is tests/js/eventhubs_sdk.js. @azure/event-hubs is installed with
``npm install --prefix tests/js``; without node or the package these tests SKIP with
the reason."""
from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from collections import defaultdict

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

from kafka_wire.eventhubs.partition_key import key_hash, partition_for_key

from .conftest import JS, ROOT, receive, sdk_cs

SCRIPT = JS / "eventhubs_sdk.js"

# Every lookup3 tail length (0-12 bytes, then past one and two 12-byte blocks),
# multi-byte UTF-8, and keys as applications use them.
KEYS = ["", "a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh", "abcdefghi",
        "abcdefghij", "abcdefghijk", "abcdefghijkl", "abcdefghijklm", "abcdefghijklmnopqrstuvwx",
        "abcdefghijklmnopqrstuvwxy", "ü", "ключ", "キー-7", "🔑", "clé/é", "x" * 100,
        *[f"device-{i}" for i in range(20)],
        *[f"customer-{i:05d}@contoso.example" for i in (1, 42, 777, 31337)],
        "1", "42", "-1", "00000000-0000-0000-0000-000000000000"]
COUNTS = [1, 2, 3, 4, 5, 7, 8, 16, 32, 100]


def run_js(node: str, *args, stdin=None, env: dict | None = None) -> dict:
    """Run one eventhubs_sdk.js command; its JSON result. ``env``: extra variables."""
    res = subprocess.run([node, str(SCRIPT), *map(str, args)], cwd=JS, capture_output=True, text=True,
                         input=json.dumps(stdin) if stdin is not None else "", timeout=60,
                         env={**os.environ, **(env or {})})
    lines = [line for line in res.stdout.splitlines() if line.startswith("{")]
    assert res.returncode == 0 and lines, (
        f"node eventhubs_sdk.js {args[0]} exited {res.returncode}\n{res.stdout}\n{res.stderr[-6000:]}")
    return json.loads(lines[-1])


def js_receive(node: str, broker, hub: str, count: int, partition_id: str | None = None) -> list[dict]:
    args = [sdk_cs(broker), hub, count] + ([partition_id] if partition_id is not None else [])
    result = run_js(node, "receive", *args)
    assert len(result["events"]) == count, result
    return result["events"]


def by_partition(events: list[dict]) -> dict[str, list[dict]]:
    """Events per partition id, in sequence number order."""
    parts: dict[str, list[dict]] = defaultdict(list)
    for e in events:
        parts[e["partitionId"]].append(e)
    return {pid: sorted(es, key=lambda e: e["sequenceNumber"]) for pid, es in parts.items()}


def test_the_js_sdk_mapper_is_the_python_partition_key_mapping(node):
    """The SDK's own lookup3 (``mapPartitionKeyToId``, what its buffered producer uses)
    and kafka_wire.eventhubs.partition_key give the same hash and partition for every key."""
    mapped = run_js(node, "hash", stdin={"keys": KEYS, "counts": COUNTS})["mapped"]
    assert [m["key"] for m in mapped] == KEYS
    for m in mapped:
        assert m["hash"] == key_hash(m["key"]), m["key"]
        assert m["partitions"] == {str(n): partition_for_key(m["key"], n) for n in COUNTS}, m["key"]
    assert len({m["partitions"]["8"] for m in mapped}) == 8  # the keys spread


def test_js_sdk_properties_send_to_a_partition_and_by_key_then_subscribe(node, broker):
    broker.create_hub("js-roundtrip", 3)
    cs = sdk_cs(broker)
    before = run_js(node, "properties", cs, "js-roundtrip")
    assert before["name"] == "js-roundtrip"
    assert before["partitionIds"] == before["ids"] == ["0", "1", "2"]
    created = dt.datetime.fromisoformat(before["createdOn"].replace("Z", "+00:00"))
    assert abs(created - dt.datetime.now(dt.timezone.utc)) < dt.timedelta(minutes=5)
    assert [(p["partitionId"], p["isEmpty"], p["lastEnqueuedSequenceNumber"])
            for p in before["partitions"]] == [("0", True, -1), ("1", True, -1), ("2", True, -1)]

    key = "customer-42"
    keyed_partition = str(partition_for_key(key, 3))
    batches = [
        {"partitionId": "1", "events": [
            {"body": f"to-1 #{i}", "properties": {"n": i, "kind": "js", "ratio": 0.5, "flag": True}}
            for i in range(5)]},
        {"partitionId": "2", "events": [{"body": f"to-2 #{i}"} for i in range(3)]},
        {"partitionKey": key, "events": [{"body": f"keyed #{i}", "properties": {"n": i}} for i in range(4)]},
    ]
    assert run_js(node, "send", cs, "js-roundtrip", stdin={"batches": batches}) == {"sent": 12}

    parts = by_partition(js_receive(node, broker, "js-roundtrip", 12))
    expected: dict[str, list[str]] = defaultdict(list)
    for b in batches:
        expected[b.get("partitionId", keyed_partition)] += [e["body"] for e in b["events"]]
    assert {pid: [e["body"] for e in es] for pid, es in parts.items()} == expected
    for pid, es in parts.items():
        assert [e["sequenceNumber"] for e in es] == list(range(len(es))), pid
        offsets = [int(e["offset"]) for e in es]
        assert offsets == sorted(offsets) and len(set(offsets)) == len(es), pid
        for e in es:
            enqueued = dt.datetime.fromisoformat(e["enqueuedTimeUtc"].replace("Z", "+00:00"))
            assert abs(enqueued - dt.datetime.now(dt.timezone.utc)) < dt.timedelta(minutes=5)

    sent_props = {e["body"]: e.get("properties", {}) for b in batches for e in b["events"]}
    every = [e for es in parts.values() for e in es]
    assert {e["body"]: e["properties"] for e in every} == sent_props
    assert {e["body"]: e["partitionKey"] for e in every if e["body"].startswith("keyed")} == {
        f"keyed #{i}": key for i in range(4)}
    assert all(e["partitionKey"] is None for e in every if not e["body"].startswith("keyed"))

    after = run_js(node, "properties", cs, "js-roundtrip")
    counts = {pid: len(expected[pid]) for pid in ("0", "1", "2")}
    for p in after["partitions"]:
        n = counts[p["partitionId"]]
        assert (p["isEmpty"], p["beginningSequenceNumber"], p["lastEnqueuedSequenceNumber"]) == (
            n == 0, 0 if n else -1, n - 1), p
        if n:
            assert int(p["lastEnqueuedOffset"]) == int(parts[p["partitionId"]][-1]["offset"])


def test_js_keyed_sends_land_where_the_js_sdk_mapper_predicts(node, broker):
    """Each key is sent twice: by EventHubProducerClient with a partitionKey (the broker
    hashes it) and by EventHubBufferedProducerClient (the SDK hashes it with its lookup3
    mapper and sends to that partition id). Both land on the mapper's partition, which is
    the Python mapping's, as the JavaScript and the Python SDK consumers both read."""
    hub, partitions = "js-keyed", 8
    broker.create_hub(hub, partitions)
    keys = [k for k in KEYS if k]  # an empty partitionKey is refused by the SDK's options check
    mapped = run_js(node, "hash", stdin={"keys": keys, "counts": [partitions]})["mapped"]
    predicted = {m["key"]: str(m["partitions"][str(partitions)]) for m in mapped}
    assert predicted == {k: str(partition_for_key(k, partitions)) for k in keys}

    cs = sdk_cs(broker)
    batches = [{"partitionKey": k, "events": [{"body": f"{k}|keyed"}]} for k in keys]
    assert run_js(node, "send", cs, hub, stdin={"batches": batches}) == {"sent": len(keys)}
    buffered = [{"partitionKey": k, "body": f"{k}|buffered"} for k in keys]
    assert run_js(node, "send", cs, hub, stdin={"buffered": buffered}) == {"sent": len(keys)}

    events = js_receive(node, broker, hub, 2 * len(keys))
    where = {e["body"]: e["partitionId"] for e in events}
    assert where == {f"{k}|{how}": predicted[k] for k in keys for how in ("keyed", "buffered")}
    assert {e["body"]: e["partitionKey"] for e in events if e["body"].endswith("|keyed")} == {
        f"{k}|keyed": k for k in keys}
    for pid, es in by_partition(events).items():
        assert [e["sequenceNumber"] for e in es] == list(range(len(es))), pid
    assert len(set(where.values())) == partitions  # the keys spread over all of them

    # The sync processor serves the 8 partitions in turn, blocking socket_timeout (0.2 s by
    # default) on each that has nothing more: a shorter one only shortens those turns.
    client = EventHubConsumerClient.from_connection_string(
        sdk_cs(broker), consumer_group="$Default", eventhub_name=hub, load_balancing_interval=1,
        socket_timeout=0.05)
    got = receive(client, 2 * len(keys), starting_position="-1")
    assert {e.body_as_str(): pid for pid, e in got} == where


def test_python_sdk_sends_and_js_sdk_receives(node, broker):
    hub = "py-to-js"
    broker.create_hub(hub, 2)
    with EventHubProducerClient.from_connection_string(sdk_cs(broker, ROOT), eventhub_name=hub) as p:
        batch = p.create_batch(partition_id="0")
        for i in range(4):
            event = EventData(f"py #{i}")
            event.properties = {"n": i, "src": "python", "ratio": 1.5, "flag": False}
            batch.add(event)
        p.send_batch(batch)
        p.send_batch([EventData(f"py-keyed #{i}") for i in range(3)], partition_key="py-key")

    keyed = str(partition_for_key("py-key", 2))
    parts = by_partition(js_receive(node, broker, hub, 7))
    expected: dict[str, list[str]] = defaultdict(list)
    expected["0"] += [f"py #{i}" for i in range(4)]
    expected[keyed] += [f"py-keyed #{i}" for i in range(3)]
    assert {pid: [e["body"] for e in es] for pid, es in parts.items()} == expected
    for pid, es in parts.items():
        assert [e["sequenceNumber"] for e in es] == list(range(len(es)))
    every = {e["body"]: e for es in parts.values() for e in es}
    for i in range(4):
        assert every[f"py #{i}"]["properties"] == {"n": i, "src": "python", "ratio": 1.5, "flag": False}
        assert every[f"py #{i}"]["partitionKey"] is None
    for i in range(3):
        assert every[f"py-keyed #{i}"]["partitionKey"] == "py-key"


def test_js_sdk_sends_and_python_sdk_receives(node, broker):
    hub = "js-to-py"
    broker.create_hub(hub, 2)
    batches = [
        {"partitionId": "1", "events": [{"body": f"js #{i}", "properties": {"n": i, "src": "js"}}
                                        for i in range(4)]},
        {"partitionKey": "js-key", "events": [{"body": f"js-keyed #{i}"} for i in range(3)]},
        {"partitionId": "0", "events": [{"json": True, "body": {"a": 1, "b": ["x", None]}}]},
    ]
    assert run_js(node, "send", sdk_cs(broker), hub, stdin={"batches": batches}) == {"sent": 8}

    client = EventHubConsumerClient.from_connection_string(  # socket_timeout: as above
        sdk_cs(broker), consumer_group="$Default", eventhub_name=hub, load_balancing_interval=1,
        socket_timeout=0.05)
    got = receive(client, 8, starting_position="-1")
    keyed = str(partition_for_key("js-key", 2))
    parts: dict[str, list] = defaultdict(list)
    for pid, e in sorted(got, key=lambda pe: (pe[0], pe[1].sequence_number)):
        parts[pid].append(e)
    expected: dict[str, list[str]] = defaultdict(list)
    expected["1"] += [f"js #{i}" for i in range(4)]
    expected[keyed] += [f"js-keyed #{i}" for i in range(3)]
    expected["0"].append('{"a":1,"b":["x",null]}')
    assert {pid: [e.body_as_str() for e in es] for pid, es in parts.items()} == expected
    for pid, es in parts.items():
        assert [e.sequence_number for e in es] == list(range(len(es)))
    every = {e.body_as_str(): e for _, e in got}
    assert [every[f"js #{i}"].properties for i in range(4)] == [
        {b"n": i, b"src": b"js"} for i in range(4)]
    assert all(every[f"js-keyed #{i}"].partition_key == b"js-key" for i in range(3))
    assert every['{"a":1,"b":["x",null]}'].body_as_json() == {"a": 1, "b": ["x", None]}
