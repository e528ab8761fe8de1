"""A secondary that holds events the primary does not (docs/georeplication.md,
"When the primary loses its tail"): the primary lost the unsynced tail of its log in
a crash, the secondary kept it. The secondary is cut back to where the two agree
before anything is shipped to it, as a Kafka follower truncates to its leader's
epoch end offset; otherwise the events acknowledged at those offsets afterwards
never reach it and a promotion serves the old ones in their place.

The crash is a clean stop followed by what an unsynced power loss leaves: the
primary's segment cut at a batch boundary and its clean-shutdown marker gone."""
from __future__ import annotations

import struct
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kafka_wire.log.recovery import CLEAN_SHUTDOWN_FILE
from tests.eventhubs.conftest import confluent_conf
from tests.geo.conftest import NAMESPACE, geo, geo_broker, stored


def conf(b, **extra):
    return confluent_conf(b.bootstrap_servers, b.connection_string(), **extra)


def send(b, values: list[str]) -> dict[str, int]:
    """Each value in a batch of its own to partition 0; value -> offset acknowledged."""
    acked: dict[str, int] = {}
    p = Producer(conf(b, **{"linger.ms": 0, "retries": 0, "message.timeout.ms": 10000}))
    for v in values:
        p.produce("orders", v.encode(), partition=0,
                  on_delivery=lambda err, m: err is None and acked.__setitem__(m.value().decode(), m.offset()))
        assert p.flush(10) == 0
    return acked


def read(b, start: int, end: int) -> dict[int, str]:
    """Offsets [start, end) of partition 0, read with a consumer: offset -> value."""
    c = Consumer(conf(b, **{"group.id": "reader", "enable.partition.eof": True}))
    c.assign([TopicPartition("orders", 0, start)])
    got: dict[int, str] = {}
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and len(got) < end - start:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                break
            continue
        got[m.offset()] = m.value().decode()
    c.close()
    return got


def tear_primary_at(data_dir: Path, offset: int) -> None:
    """Cut the first primary's orders-0 segment where the batch at ``offset`` begins and
    drop its clean-shutdown marker: what a power loss leaves of writes never fsynced."""
    part = data_dir / NAMESPACE / "orders-0"
    segment = sorted(part.glob("*.log"))[-1]
    data = segment.read_bytes()
    pos = 0
    while pos + 12 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if base == offset:
            break
        pos += 12 + length
    assert pos < len(data), f"no batch begins at offset {offset}"
    with open(segment, "r+b") as f:
        f.truncate(pos)
    (part / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)


def ends(b, location: str) -> dict:
    return b.call(lambda: geo(b)._stores[location].ends())


def test_a_secondary_ahead_of_the_primary_is_cut_back_and_a_promotion_keeps_every_acknowledged_event(tmp_path):
    with geo_broker(tmp_path, max_lag=0, partitions=1) as b:
        assert len(send(b, [f"a-{i}" for i in range(100)])) == 100
        assert ends(b, "eastus") == {("orders", 0): 100}  # synchronous: on both when acknowledged
    tear_primary_at(tmp_path / "data", 90)
    with geo_broker(tmp_path, max_lag=0, partitions=1) as b:
        assert ends(b, "westus") == ends(b, "eastus") == {("orders", 0): 90}
        acked = send(b, [f"b-{i}" for i in range(10)])
        assert acked == {f"b-{i}": 90 + i for i in range(10)}
        assert stored(b, "eastus") == stored(b, "westus")
        result = b.call(lambda: geo(b).promote("eastus"))
        assert result.lost_events == 0
        got = read(b, 88, 100)
    assert got == {88: "a-88", 89: "a-89", **{90 + i: f"b-{i}" for i in range(10)}}


def test_a_paused_secondary_with_other_events_counts_them_as_lacking_and_takes_the_primarys_on_resume(tmp_path):
    with geo_broker(tmp_path, max_lag=300, partitions=1) as b:
        assert len(send(b, [f"a-{i}" for i in range(100)])) == 100
        deadline = time.monotonic() + 15
        while ends(b, "eastus") != {("orders", 0): 100} and time.monotonic() < deadline:
            time.sleep(0.02)
        assert ends(b, "eastus") == {("orders", 0): 100}
        b.call(lambda: geo(b).pause("eastus"))
    tear_primary_at(tmp_path / "data", 90)
    with geo_broker(tmp_path, max_lag=300, partitions=1) as b:
        assert send(b, [f"b-{i}" for i in range(5)]) == {f"b-{i}": 90 + i for i in range(5)}
        east = b.call(lambda: geo(b).replica("eastus"))
        # it holds a-90..a-99 where the primary has b-0..b-4: those 5 are what it lacks
        assert (east.paused, east.lag_events) == (True, 5)
        assert ends(b, "eastus") == {("orders", 0): 100}  # paused: nothing reaches it
        b.call(lambda: geo(b).resume("eastus"))
        assert ends(b, "eastus") == {("orders", 0): 95}
        assert stored(b, "eastus") == stored(b, "westus")
        assert b.call(lambda: geo(b).replica("eastus")).lag_events == 0


def test_a_primary_that_cuts_its_own_tail_while_running_is_followed_by_the_synchronous_secondary(tmp_path):
    """The primary cuts its tail at runtime (as bit rot found on a read does) and its next
    append, one batch of 20 events, grows it past the secondary's end: the secondary,
    which kept the old tail, is cut back before that batch is shipped."""
    from tests.unit.log.log_helpers import make_batch

    with geo_broker(tmp_path, max_lag=0, partitions=1) as b:
        assert len(send(b, [f"a-{i}" for i in range(100)])) == 100
        topics = b.broker.services.namespaces[NAMESPACE].topics

        def cut_and_append():
            topics.logs.get_log("orders", 0).truncate_to(90)
            return topics.append("orders", 0, make_batch(20, tag=7), int(time.time() * 1000))
        info = b.call(cut_and_append)
        assert (info.base_offset, info.last_offset) == (90, 109)
        assert ends(b, "eastus") == ends(b, "westus") == {("orders", 0): 110}
        assert stored(b, "eastus") == stored(b, "westus")
