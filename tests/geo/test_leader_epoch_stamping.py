"""Leader epochs across geo promotions (docs/georeplication.md, "Promotion").

Every stored batch carries the leader epoch it was appended in (Kafka's LogValidator stamps
partitionLeaderEpoch; producers write 0 or -1), whichever front end sent it, and a secondary's
copy keeps the primary's. A consumer validates its position after a leader change with
OffsetForLeaderEpoch(the epoch of the last record it read): had the records kept the producer's
0, a second promotion would answer epoch 0's end (the first promotion's offset) and the consumer
would re-read what came after it. The epochs' history is durable (the geo state file, as Kafka's
leader-epoch-checkpoint): a commit made in epoch 1 is still good after a restart.
"""
from __future__ import annotations

import time

import requests
from azure.eventhub import EventData, EventHubProducerClient
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_wire.eventhubs import sas
from kafka_wire.log.batch import iter_batches
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import confluent_conf
from tests.geo.conftest import KEY, NAMESPACE, geo, geo_broker, geo_toml, stored


def produce(b: EmulatedBroker, values: list[str], **extra) -> None:
    p = Producer(confluent_conf(b.bootstrap_servers, b.connection_string(), **extra))
    for v in values:
        p.produce("orders", v.encode(), partition=0)
    assert p.flush(15) == 0


def consumer(b: EmulatedBroker, **extra) -> Consumer:
    return Consumer(confluent_conf(b.bootstrap_servers, b.connection_string(), **{
        "group.id": "billing", "auto.offset.reset": "earliest", "enable.auto.commit": False,
        "topic.metadata.refresh.interval.ms": 1000, **extra}))


def read_until(c: Consumer, last: str, got: list, timeout: float = 30.0) -> list:
    """Append (offset, value, leader epoch) of what ``c`` reads to ``got`` until ``last`` is read."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not (got and got[-1][1] == last):
        m = c.poll(0.2)
        if m is not None and not m.error():
            got.append((m.offset(), m.value().decode(), m.leader_epoch()))
    assert got and got[-1][1] == last, f"{last!r} not read within {timeout} s: {got}"
    return got


def stored_epochs(b: EmulatedBroker, location: str) -> list[int]:
    return [h.partition_leader_epoch for _pos, h in iter_batches(stored(b, location))]


def test_a_consumer_reads_nothing_twice_across_two_planned_promotions(tmp_path):
    with geo_broker(tmp_path, partitions=1) as b:
        produce(b, [f"old-{i}" for i in range(3)])
        b.call(lambda: geo(b).promote("eastus"))          # leader epoch 1 from offset 3
        produce(b, [f"new-{i}" for i in range(3)])
        c = consumer(b)
        try:
            c.assign([TopicPartition("orders", 0)])
            got = read_until(c, "new-2", [])
            b.call(lambda: geo(b).promote("westus"))      # leader epoch 2 from offset 6: nothing lost
            produce(b, ["latest"])
            read_until(c, "latest", got)
        finally:
            c.close()
        # Validating (offset 6, epoch 1) answers epoch 1's end, 6: no truncation, no re-read.
        assert [(o, v) for o, v, _e in got] == [
            (0, "old-0"), (1, "old-1"), (2, "old-2"), (3, "new-0"), (4, "new-1"), (5, "new-2"), (6, "latest")]
        assert [e for _o, _v, e in got] == [0, 0, 0, 1, 1, 1, 2]


def test_every_front_end_stamps_the_epoch_and_the_secondary_keeps_it(tmp_path):
    with geo_broker(tmp_path, partitions=1, amqp=True, http=True) as b:
        produce(b, ["before"])
        b.call(lambda: geo(b).promote("eastus"))
        produce(b, ["kafka"])
        p = Producer(confluent_conf(b.bootstrap_servers, b.connection_string(), **{"transactional.id": "t1"}))
        p.init_transactions()
        p.begin_transaction()
        p.produce("orders", b"txn", partition=0)
        p.commit_transaction(15)                          # its COMMIT marker is a batch too
        with EventHubProducerClient.from_connection_string(b.amqp_connection_string(),
                                                           eventhub_name="orders") as sender:
            sender.send_batch([EventData("amqp")], partition_id="0")
        host = f"{NAMESPACE}.servicebus.windows.net"
        token = sas.generate(sas.resource_uri(host, None), "RootManageSharedAccessKey", KEY, int(time.time()) + 600)
        sent = requests.post(f"{b.http_url}/orders/partitions/0/messages", data=b"rest",
                             headers={"Host": host, "Authorization": token}, timeout=30)
        assert sent.status_code == 201, sent.text
        c = consumer(b)
        try:
            c.assign([TopicPartition("orders", 0)])
            got = read_until(c, "rest", [])
        finally:
            c.close()
        assert [(v, e) for _o, v, e in got] == [("before", 0), ("kafka", 1), ("txn", 1), ("amqp", 1), ("rest", 1)]
        assert stored_epochs(b, "eastus") == [0, 1, 1, 1, 1, 1]
        # Synchronous replication: westus (now the secondary) holds the same bytes, epochs included.
        assert stored(b, "westus") == stored(b, "eastus")


def test_a_commit_made_after_a_promotion_is_good_after_a_restart(tmp_path):
    with geo_broker(tmp_path, partitions=1) as b:
        produce(b, [f"old-{i}" for i in range(3)])
        b.call(lambda: geo(b).promote("eastus"))
        produce(b, [f"new-{i}" for i in range(3)])
        c = consumer(b)
        try:
            c.subscribe(["orders"])
            read_until(c, "new-2", [])
            c.commit(asynchronous=False)
            [committed] = c.committed([TopicPartition("orders", 0)], timeout=10)
        finally:
            c.close()
        assert (committed.offset, committed.leader_epoch) == (6, 1)
    # The same data directory: the leader epochs are those before the restart, so the commit's
    # epoch (1) is the current one and the group's next consumer resumes at its offset.
    with EmulatedBroker(tmp_path / "data", config_file=geo_toml(tmp_path, partitions=1)) as b:
        produce(b, ["after-restart"])
        c = consumer(b)
        try:
            c.subscribe(["orders"])
            got = read_until(c, "after-restart", [])
        finally:
            c.close()
        assert got == [(6, "after-restart", 1)]
