"""A ListOffsets request naming one partition twice, under one topic entry or two: Kafka's
ReplicaManager answers every such partition INVALID_REQUEST (its ``duplicatePartitions``),
and the other partitions of the request as usual. Hub-scoped denial still comes first."""
from __future__ import annotations

import kafka.errors as Errors
import pytest
from confluent_kafka import Producer

from kafka_wire import codec
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

Req = codec.request_class(codec.ApiKey.ListOffsets)
INVALID = Errors.InvalidRequestError.errno


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("lo-dup") / "data") as b:
        b.create_hub("dup", 2)
        p = Producer({"bootstrap.servers": b.bootstrap_servers})
        for partition in (0, 0, 1):
            p.produce("dup", b"x", partition=partition)
        assert p.flush(15) == 0
        yield b


def _ask(broker, topics: list[tuple[str, list[int]]], version: int = 7):
    entries = [Req.ListOffsetsTopic(name=name, partitions=[
        Req.ListOffsetsTopic.ListOffsetsPartition(partition_index=i, current_leader_epoch=-1, timestamp=-1)
        for i in indexes]) for name, indexes in topics]
    with RawClient(broker.bootstrap_servers) as c:
        answer = c.request(codec.ApiKey.ListOffsets, version, replica_id=-1, isolation_level=0,
                           timeout_ms=1000, topics=entries)
    return [(t.name, p.partition_index, p.error_code, p.offset) for t in answer.topics for p in t.partitions]


@pytest.mark.parametrize("version", [1, 7, 11])
def test_a_partition_named_twice_in_one_topic_entry_is_invalid_request(broker, version):
    assert _ask(broker, [("dup", [0, 1, 0])], version) == [
        ("dup", 0, INVALID, -1), ("dup", 1, 0, 1), ("dup", 0, INVALID, -1)]


def test_a_partition_named_under_two_topic_entries_is_invalid_request(broker):
    assert _ask(broker, [("dup", [0]), ("dup", [0, 1])]) == [
        ("dup", 0, INVALID, -1), ("dup", 0, INVALID, -1), ("dup", 1, 0, 1)]


def test_distinct_partitions_are_answered_as_before(broker):
    assert _ask(broker, [("dup", [1, 0])]) == [("dup", 1, 0, 1), ("dup", 0, 0, 2)]
