"""ListOffsets names at most MAX_ENTRIES topics and partitions a request: past it the
request is refused before it is decoded (the connection closed, as Kafka does with a
request it cannot parse) and other clients are served throughout."""
from __future__ import annotations

import struct

import kafka.errors as Errors
import pytest

from kafka_wire import codec
from kafka_wire.apis.list_offsets import MAX_ENTRIES
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient


@pytest.fixture(scope="module")
def hub_broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("list-offsets") / "data") as b:
        b.create_hub("t1", 2)
        yield b


def _v1_body(partitions: int) -> bytes:
    """ListOffsets v1: replica id, [topic, [partition, timestamp -1]]."""
    return (struct.pack(">ii", -1, 1) + struct.pack(">h", 2) + b"t1" + struct.pack(">i", partitions)
            + struct.pack(">iq", 0, -1) * partitions)


def _body(version: int, topics: list) -> bytes:
    request = codec.request_class(codec.ApiKey.ListOffsets)(
        version=version, replica_id=-1, isolation_level=0, topics=topics, timeout_ms=1000)
    return bytes(request.encode(version=version))


def _answered(client: RawClient, body: bytes, version: int = 1) -> bool:
    client.send_raw(client.frame(codec.ApiKey.ListOffsets, version, body))
    try:
        return len(client.read_frame()) > 0
    except ConnectionError:
        return False


@pytest.mark.parametrize("version", [1, 4, 7])
def test_a_request_within_the_bound_is_answered_in_every_version(hub_broker, version):
    with RawClient(hub_broker.bootstrap_servers) as c:
        answer = c.request(codec.ApiKey.ListOffsets, version, replica_id=-1, isolation_level=0,
                           topics=[("t1", [(p % 2, -1, -1) if version >= 4 else (p % 2, -1)
                                           for p in range(MAX_ENTRIES - 1)])], timeout_ms=1000)
        assert len(answer.topics[0].partitions) == MAX_ENTRIES - 1
        # Each partition is named thousands of times: Kafka answers a duplicate INVALID_REQUEST
        assert {p.error_code for p in answer.topics[0].partitions} == {Errors.InvalidRequestError.errno}


def test_a_request_past_the_bound_is_refused_and_others_are_served(hub_broker):
    with RawClient(hub_broker.bootstrap_servers, timeout=30) as c:
        assert not _answered(c, _v1_body(MAX_ENTRIES + 1))
    with RawClient(hub_broker.bootstrap_servers, timeout=30) as c:
        assert not _answered(c, _v1_body(2_000_000))
    with RawClient(hub_broker.bootstrap_servers) as other:
        answer = other.request(codec.ApiKey.ListOffsets, 1, replica_id=-1, topics=[("t1", [(0, -1), (1, -1)])])
        assert [p.error_code for p in answer.topics[0].partitions] == [0, 0]


@pytest.mark.parametrize("version", [1, 5, 6, 11])
def test_topics_and_partitions_count_alike_in_every_version(hub_broker, version):
    entry = (0, -1, -1) if version >= 4 else (0, -1)
    for topics in ([(f"t{i}", []) for i in range(MAX_ENTRIES + 1)],
                   [("t1", [entry] * (MAX_ENTRIES // 2)), ("t2", [entry] * (MAX_ENTRIES // 2))]):
        with RawClient(hub_broker.bootstrap_servers, timeout=30) as c:
            assert not _answered(c, _body(version, topics), version)
