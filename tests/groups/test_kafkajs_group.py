"""kafkajs 2 (node) joins a consumer group, consumes and commits.

kafkajs is installed by ``make test`` (``npm install --prefix tests/js``) when
npm exists; without node or kafkajs this test SKIPS with the reason."""
from __future__ import annotations

import json
import subprocess

import pytest
from confluent_kafka import Producer
from kafka import KafkaAdminClient

from tests.conftest import JS, node_with



@pytest.fixture(scope="module")
def node():
    return node_with("kafkajs", "KAFKAJS TEST")


def test_kafkajs_consumer_joins_a_group_reads_every_partition_and_commits(node, broker):
    bootstrap = broker.bootstrap_servers
    broker.create_hub("js-orders", partitions=3)
    p = Producer({"bootstrap.servers": bootstrap})
    for part in range(3):
        for i in range(10):
            p.produce("js-orders", b"%d-%d" % (part, i), partition=part)
    assert p.flush(30) == 0

    res = subprocess.run([node, str(JS / "group_consumer.js"), bootstrap, "js-group",
                          "js-orders", "30"], capture_output=True, text=True, timeout=90)
    events = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    assert res.returncode == 0, f"{res.stdout}\n{res.stderr}"
    (joined,) = [e for e in events if e["event"] == "joined"]
    assert joined["isLeader"] and joined["leaderId"] == joined["memberId"]
    assert sorted(joined["assignment"]["js-orders"]) == [0, 1, 2]
    got = sorted((e["partition"], e["offset"]) for e in events if e["event"] == "message")
    assert got == [(p, o) for p in range(3) for o in range(10)]

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        committed = admin.list_group_offsets({"js-group": None})["js-group"]
    finally:
        admin.close()
    assert {tp.partition: om.offset for tp, om in committed.items()} == {0: 10, 1: 10, 2: 10}
