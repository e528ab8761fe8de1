"""A Fetch that names one partition many times is answered once for it (it was read
once a mention: a 13 kB request got 763 MiB back), and no response holds more than
the broker's fetch.max.bytes whatever the request's max_bytes, as in Kafka."""
from __future__ import annotations

import pytest
from confluent_kafka import Producer

from kafka_wire import codec
from kafka_wire.apis.fetch import FETCH_MAX_BYTES
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

Req = codec.request_class(codec.ApiKey.Fetch)
T = Req.FetchTopic


def _fetch(c: RawClient, mentions: int, max_bytes: int, partition_max: int):
    return c.request(codec.ApiKey.Fetch, 11, replica_id=-1, max_wait_ms=0, min_bytes=0,
                     max_bytes=max_bytes, isolation_level=0, session_id=0, session_epoch=-1,
                     topics=[T(topic="hub", partitions=[T.FetchPartition(
                         partition=0, current_leader_epoch=-1, fetch_offset=0, log_start_offset=-1,
                         partition_max_bytes=partition_max) for _ in range(mentions)])],
                     forgotten_topics_data=[], rack_id="")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("amplify") / "data") as b:
        b.create_hub("hub", 1)
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 50})
        for i in range(128):  # 64 MiB in records of 512 KiB
            p.produce("hub", bytes([i]) * (1 << 19), partition=0)
            p.poll(0)
        assert p.flush(30) == 0
        yield b


@pytest.mark.parametrize("mentions", [1, 2, 50])
def test_a_partition_named_many_times_is_answered_once(broker, mentions):
    with RawClient(broker.bootstrap_servers) as c:
        answer = _fetch(c, mentions, max_bytes=8 << 20, partition_max=4 << 20)
        partitions = [p for t in answer.responses for p in t.partitions]
        assert len(partitions) == 1 and partitions[0].error_code == 0
        assert 0 < len(partitions[0].records) <= 8 << 20


def test_a_response_holds_at_most_fetch_max_bytes(broker):
    with RawClient(broker.bootstrap_servers) as c:
        answer = _fetch(c, 1, max_bytes=2**31 - 1, partition_max=2**31 - 1)
        (p,) = [p for t in answer.responses for p in t.partitions]
        assert p.error_code == 0 and 32 << 20 < len(p.records) <= FETCH_MAX_BYTES + (2 << 20)
