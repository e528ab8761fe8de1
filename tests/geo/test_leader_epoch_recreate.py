"""A hub deleted and made again is a new hub (Kafka: a new topic id): its leader epochs start
at 0 whatever promotions the old one went through, in memory and after a restart (the geo
state file keeps no rows of a deleted hub), and a later promotion moves it up from there,
as it does a hub made after a promotion. Had it kept the old hub's epochs, its batches would
be stamped with them and OffsetForLeaderEpoch would answer the old log's offsets."""
from __future__ import annotations

import json
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_wire.log.batch import iter_batches
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import confluent_conf
from tests.geo.conftest import NAMESPACE, geo, geo_broker, stored

HUB = "audit"


def conf(b: EmulatedBroker, **extra) -> dict:
    return confluent_conf(b.bootstrap_servers, b.connection_string(), **extra)


def make_hub(b: EmulatedBroker) -> None:
    admin = AdminClient(conf(b))  # kept until the futures are done: its end cancels them
    for fut in admin.create_topics([NewTopic(HUB, 1)]).values():
        fut.result(30)


def delete_hub(b: EmulatedBroker) -> None:
    admin = AdminClient(conf(b))
    for fut in admin.delete_topics([HUB]).values():
        fut.result(30)


def produce(b: EmulatedBroker, values: list[str]) -> None:
    p = Producer(conf(b))
    for v in values:
        p.produce(HUB, v.encode(), partition=0)
    assert p.flush(15) == 0


def read_all(b: EmulatedBroker, count: int, timeout: float = 30.0) -> list[tuple[int, str, int]]:
    """(offset, value, leader epoch) of the hub's first ``count`` events, read from offset 0."""
    c = Consumer(conf(b, **{"group.id": "audit-reader", "enable.auto.commit": False}))
    got: list[tuple[int, str, int]] = []
    try:
        c.assign([TopicPartition(HUB, 0, 0)])
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append((m.offset(), m.value().decode(), m.leader_epoch()))
    finally:
        c.close()
    assert len(got) == count, f"{count} events not read within {timeout} s: {got}"
    return got


def stored_epochs(b: EmulatedBroker, location: str) -> set[int]:
    return {h.partition_leader_epoch for _pos, h in iter_batches(stored(b, location, hub=HUB))}


def topics(b: EmulatedBroker):
    return b.broker.services.namespaces[NAMESPACE].topics


def test_a_hub_made_again_after_a_promotion_starts_at_epoch_0(tmp_path):
    with geo_broker(tmp_path, partitions=1) as b:
        make_hub(b)
        produce(b, ["old-0", "old-1", "old-2"])
        b.call(lambda: geo(b).promote("eastus"))            # the old hub: epoch 1 from offset 3
        produce(b, ["old-3", "old-4"])
        delete_hub(b)
        make_hub(b)
        produce(b, ["new-0", "new-1", "new-2"])
        assert read_all(b, 3) == [(0, "new-0", 0), (1, "new-1", 0), (2, "new-2", 0)]
        assert stored_epochs(b, "eastus") == {0}
        # OffsetForLeaderEpoch answers this log: epoch 0 runs to its end (not the old hub's 3),
        # a later epoch asked for is epoch 0 too, and a client at epoch 0 is not fenced.
        t = topics(b)
        assert b.call(lambda: (t.leader_epoch(HUB, 0), t.end_offset_for_epoch(HUB, 0, 0),
                               t.end_offset_for_epoch(HUB, 0, 1), t.epoch_error(HUB, 0, 0))) == (
            0, (0, 3), (0, 3), 0)


def test_a_hub_made_again_keeps_its_own_epochs_across_restarts(tmp_path):
    with geo_broker(tmp_path, partitions=1) as b:
        make_hub(b)
        produce(b, ["old-0", "old-1"])
        b.call(lambda: geo(b).promote("eastus"))
        delete_hub(b)
        make_hub(b)
        produce(b, ["a"])
    # The state file holds no promotion of the deleted hub: the restart restores none.
    with geo_broker(tmp_path, partitions=1) as b:
        produce(b, ["b"])
        assert read_all(b, 2) == [(0, "a", 0), (1, "b", 0)]
        b.call(lambda: geo(b).promote("westus"))            # the new hub's first: epoch 1 from 2
        produce(b, ["c"])
    with geo_broker(tmp_path, partitions=1) as b:
        produce(b, ["d"])
        assert read_all(b, 4) == [(0, "a", 0), (1, "b", 0), (2, "c", 1), (3, "d", 1)]
        assert stored_epochs(b, "westus") == {0, 1}


def test_a_state_file_naming_a_deleted_hub_gives_a_new_one_no_epochs(tmp_path):
    """A state file written before deletions pruned it (or whose write a crash cut short)
    still has the deleted hub's rows: they are dropped at start, as the hub is not there."""
    with geo_broker(tmp_path, partitions=1) as b:
        make_hub(b)
        produce(b, ["old-0", "old-1"])
        b.call(lambda: geo(b).promote("eastus"))
        delete_hub(b)
        path = b.call(lambda: geo(b)._state_path())
    state = json.loads(path.read_text())
    state["starts"][HUB] = {"0": [[1, 2]]}                  # the old hub's promotion, as kept before
    path.write_text(json.dumps(state))
    with geo_broker(tmp_path, partitions=1) as b:
        make_hub(b)
        produce(b, ["new-0"])
        assert read_all(b, 1) == [(0, "new-0", 0)]
    assert HUB not in json.loads(path.read_text())["starts"]
