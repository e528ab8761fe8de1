"""A Produce request names at most MAX_PARTITIONS topics and partitions: past it the
request is not decoded further and the connection is closed (INVALID_REQUEST: the
answer would list every entry again); other clients are served throughout."""
from __future__ import annotations

import struct

import pytest

from kafka_wire import codec
from kafka_wire.apis.produce_decoding import MAX_PARTITIONS
from kafka_wire.log import batch as rb
from kafka_wire.log import records as rec
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

BATCH = bytes(rb.encode_batch(
    base_offset=0, partition_leader_epoch=0, attributes=0, last_offset_delta=0, base_timestamp=0,
    max_timestamp=0, producer_id=-1, producer_epoch=-1, base_sequence=-1, records_count=1,
    records=rec.encode_record(0, 0, None, b"v")))


@pytest.fixture(scope="module")
def hub_broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("produce-bounds") / "data") as b:
        b.create_hub("t1", 2)
        yield b


def _v7_body(topics: list[tuple[str, int]]) -> bytes:
    """Produce v7 (acks 1): each topic with ``n`` entries of partition 0 and one batch."""
    entry = struct.pack(">ii", 0, len(BATCH)) + BATCH
    out = struct.pack(">hhii", -1, 1, 30000, len(topics))
    for name, n in topics:
        out += struct.pack(">h", len(name)) + name.encode() + struct.pack(">i", n) + entry * n
    return out


def _answer(client: RawClient, body: bytes):
    client.send_raw(client.frame(codec.ApiKey.Produce, 7, body))
    try:
        return client.read_frame()
    except ConnectionError:
        return None


@pytest.mark.parametrize("topics", [[("t1", MAX_PARTITIONS + 1)],
                                    [("t1", MAX_PARTITIONS // 2), ("t1", MAX_PARTITIONS // 2)],
                                    [("t1", 500_000)]])
def test_a_request_past_the_bound_is_refused_and_others_are_served(hub_broker, topics):
    with RawClient(hub_broker.bootstrap_servers, timeout=30) as c:
        assert _answer(c, _v7_body(topics)) is None
    with RawClient(hub_broker.bootstrap_servers) as other:
        answer = other.request(codec.ApiKey.Produce, 7, transactional_id=None, acks=1, timeout_ms=5000,
                               topic_data=[("t1", [(1, BATCH)])])
        assert answer.responses[0][1][0].error_code == 0


def test_many_partitions_within_the_bound_are_answered(hub_broker):
    with RawClient(hub_broker.bootstrap_servers, timeout=60) as c:
        assert _answer(c, _v7_body([("t1", 2_000), ("absent", 1)])) is not None
