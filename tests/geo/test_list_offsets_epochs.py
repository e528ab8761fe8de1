"""ListOffsets answers the leader epoch of the offset it finds (docs/georeplication.md, "Promotion").

As Kafka's UnifiedLog.fetchOffsetByTimestamp and Partition.fetchOffsetForTimestamp: a timestamp
lookup and max timestamp (-3) answer the epoch of the batch holding the offset found, earliest
(-2, -4) the epoch of the log start offset, latest (-1) the leader's current epoch. A consumer
that seeks by time (offsets_for_times) and validates its position after a leader change asks
OffsetForLeaderEpoch with that epoch: told the current one for an event written before the
change, it would take the offsets of the epochs between as its own. Each promotion starts the
next epoch; the epochs' history survives a restart (the geo state file).

The hub keeps the producer's timestamps (CreateTime), so the largest one can lie in an epoch
before the current one.
"""
from __future__ import annotations

from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

from kafka_wire import codec
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import confluent_conf, kafka_python_conf
from tests.geo.conftest import geo, geo_toml
from tests.rawclient import RawClient

Req = codec.request_class(codec.ApiKey.ListOffsets)
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -1, -2, -3, -4
# (value, CreateTime timestamp) per leader epoch: epoch 1 holds the largest timestamp.
EPOCHS = [
    [("old-0", 1_000), ("old-1", 1_001), ("old-2", 1_002)],   # epoch 0, offsets 0-2
    [("mid-0", 9_000), ("mid-1", 9_001), ("mid-2", 9_002)],   # epoch 1, offsets 3-5
    [("new-0", 5_000), ("new-1", 5_001), ("new-2", 5_002)],   # epoch 2, offsets 6-8
]


def broker(tmp_path) -> EmulatedBroker:
    """The geo broker of tests/geo/conftest.py, its hub ``orders`` (one partition) CreateTime."""
    path = geo_toml(tmp_path, partitions=1)
    path.write_text(path.read_text().replace("partitions = 1\n", 'partitions = 1\ntimestamp_type = "Create"\n'))
    return EmulatedBroker(tmp_path / "data", config_file=path)


def produce(b: EmulatedBroker, events: list[tuple[str, int]]) -> None:
    p = Producer(confluent_conf(b.bootstrap_servers, b.connection_string()))
    for value, ts in events:
        p.produce("orders", value.encode(), partition=0, timestamp=ts)
    assert p.flush(15) == 0


def ask(b: EmulatedBroker, timestamp: int, version: int = 11) -> tuple[int, int, int]:
    """(offset, timestamp, leader epoch) ListOffsets answers for partition 0 of ``orders``."""
    partition = Req.ListOffsetsTopic.ListOffsetsPartition(
        partition_index=0, current_leader_epoch=-1, timestamp=timestamp)
    with RawClient(b.bootstrap_servers) as c:
        assert c.login(b.connection_string()) == 0
        answer = c.request(codec.ApiKey.ListOffsets, version, replica_id=-1, isolation_level=0, timeout_ms=1000,
                           topics=[Req.ListOffsetsTopic(name="orders", partitions=[partition])])
    [p] = answer.topics[0].partitions
    assert p.error_code == 0, p
    return p.offset, p.timestamp, p.leader_epoch


def offsets_for_times(b: EmulatedBroker, timestamps: list[int]) -> list[tuple[int, int, int]]:
    """kafka-python's KafkaConsumer.offsets_for_times, one call per timestamp."""
    c = KafkaConsumer(**kafka_python_conf(b.bootstrap_servers, b.connection_string()))
    try:
        tp = KafkaTopicPartition("orders", 0)
        return [tuple(c.offsets_for_times({tp: ts})[tp]) for ts in timestamps]
    finally:
        c.close()


def promote(b: EmulatedBroker, location: str) -> None:
    b.call(lambda: geo(b).promote(location))


def test_an_event_written_before_a_promotion_is_found_with_its_own_epoch(tmp_path):
    with broker(tmp_path) as b:
        produce(b, EPOCHS[0])
        promote(b, "eastus")                       # epoch 1 from offset 3
        produce(b, EPOCHS[1])
        promote(b, "westus")                       # epoch 2 from offset 6
        produce(b, EPOCHS[2])
        # A timestamp: the first event stamped at or after it, with the epoch it was written in.
        assert offsets_for_times(b, [1_000, 1_002, 2_000, 9_001]) == [
            (0, 1_000, 0), (2, 1_002, 0), (3, 9_000, 1), (4, 9_001, 1)]
        assert ask(b, 1_001) == (1, 1_001, 0)
        assert ask(b, MAX_TIMESTAMP) == (5, 9_002, 1)
        assert ask(b, EARLIEST) == ask(b, EARLIEST_LOCAL) == (0, -1, 0)
        assert ask(b, LATEST) == (9, -1, 2)
        assert ask(b, 9_003) == (-1, -1, -1)       # no such event
    # After a restart the epochs' history is the geo state file's: the same answers.
    with EmulatedBroker(tmp_path / "data", config_file=tmp_path / "geo.toml") as b:
        assert ask(b, 1_001) == (1, 1_001, 0)
        assert ask(b, 2_000) == (3, 9_000, 1)
        assert ask(b, MAX_TIMESTAMP) == (5, 9_002, 1)
        assert ask(b, LATEST) == (9, -1, 2)


def test_earliest_answers_the_epoch_of_the_log_start_offset(tmp_path):
    with broker(tmp_path) as b:
        produce(b, EPOCHS[0])
        promote(b, "eastus")
        produce(b, EPOCHS[1])
        promote(b, "westus")
        assert ask(b, EARLIEST) == (0, -1, 0)
        admin = AdminClient(confluent_conf(b.bootstrap_servers, b.connection_string()))
        [done] = admin.delete_records([TopicPartition("orders", 0, 4)]).values()
        assert done.result(30).low_watermark == 4  # the log start offset, in epoch 1
        assert ask(b, EARLIEST) == ask(b, EARLIEST_LOCAL) == (4, -1, 1)
        assert ask(b, LATEST) == (6, -1, 2)        # epoch 2 holds no event yet
        assert ask(b, 0) == (4, 9_001, 1)
