"""A topic or partition named many times in one request is served once, as Kafka does
(Metadata: a set of the topics asked for; DeleteRecords: a map by partition, the last
offset named winning): 20,000 names of one topic, or of one partition, within the
request bound held every other client 1.3 s and 0.9 s."""
from __future__ import annotations

import pytest

from kafka_wire import codec
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

K = codec.ApiKey
TIMES = 20_000


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("repeated") / "data") as b:
        b.create_hub("t1", 2)
        yield b


def _produce(b, n: int) -> None:
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": b.bootstrap_servers})
    for i in range(n):
        p.produce("t1", b"%d" % i, partition=0)
    assert p.flush(15) == 0


def test_metadata_answers_a_topic_named_many_times_once(broker):
    with RawClient(broker.bootstrap_servers, timeout=60) as c:
        r = c.request(K.Metadata, 9, topics=[("t1",)] * TIMES + [("nope",)] * 3,
                      allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
                      include_topic_authorized_operations=False)
        assert [(t.name, t.error_code, len(t.partitions)) for t in r.topics] == [("t1", 0, 2), ("nope", 3, 0)]


def test_delete_records_answers_a_partition_named_many_times_once_with_the_last_offset(broker):
    _produce(broker, 5)
    with RawClient(broker.bootstrap_servers, timeout=60) as c:
        r = c.request(K.DeleteRecords, 1, topics=[("t1", [(0, 1)] * TIMES + [(0, 2)]), ("t1", [(1, 0)])],
                      timeout_ms=1000)
        assert [(t.name, [(p.partition_index, p.error_code, p.low_watermark) for p in t.partitions])
                for t in r.topics] == [("t1", [(0, 0, 2), (1, 0, 0)])]
