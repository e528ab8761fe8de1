"""``close_large_frames``: a namespace that mimics the Event Hubs Kafka endpoint
closes the connection of a client whose request frame is 1,046,528 bytes or
more (Event Hubs closes such connections), logs why and records it in the compatibility report;
other connections and namespaces are untouched."""
from __future__ import annotations

import struct

import pytest

from kafka_wire import codec
from kafka_wire.eventhubs import connection_string
from kafka_wire.eventhubs.config_file import load_toml
from kafka_wire.eventhubs.model import KAFKA_FRAME_LIMIT
from kafka_wire.eventhubs.report import load
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient
from tests.unit.log.log_helpers import make_batch

from .conftest import DATA, confluent_conf, produce_one, sasl_raw

MB = 1024 * 1024


@pytest.fixture(scope="module")
def broker(module_tmp):
    with EmulatedBroker(module_tmp / "data", config_file=DATA / "frames.toml") as b:
        yield b


def _produce_frame(client: RawClient, payload_size: int) -> bytes:
    """A Produce frame (length prefix excluded) of exactly ``payload_size`` bytes."""
    Req = codec.request_class(codec.ApiKey.Produce)
    T = Req.TopicProduceData
    value_size = payload_size - 200
    for _ in range(10):
        body = bytes(Req(version=9, transactional_id=None, acks=1, timeout_ms=30000, topic_data=[
            T(name="events", partition_data=[T.PartitionProduceData(
                index=0, records=make_batch(1, value_size=value_size))])]).encode(version=9))
        frame = client.frame(codec.ApiKey.Produce, 9, body)
        size = len(frame) - 4
        if size == payload_size:
            return frame
        value_size += payload_size - size
        client.correlation -= 1
    raise AssertionError("could not size the frame")


def _report(broker) -> dict:
    broker.call(lambda: broker.broker.services.report.flush())
    return {(e["namespace"], e["rule"]): e for e in load(broker.data_dir)}


def test_a_frame_at_the_limit_closes_only_its_connection(broker):
    with RawClient(broker.bootstrap_servers) as bystander, RawClient(broker.bootstrap_servers) as c:
        c.send_raw(_produce_frame(c, KAFKA_FRAME_LIMIT - 1))
        answer = c.read_response(codec.ApiKey.Produce, 9).responses[0].partition_responses[0]
        assert answer.error_code == 0, "a frame just under the limit is served"

        c.send_raw(_produce_frame(c, KAFKA_FRAME_LIMIT))
        assert c.is_closed(), "a frame at the limit must close the connection"
        meta = bystander.request(codec.ApiKey.Metadata, 1, topics=None)
        assert {t.name for t in meta.topics} == {"events"}

    with RawClient(broker.bootstrap_servers) as c:
        listed = c.request(codec.ApiKey.ListOffsets, 1, replica_id=-1, topics=[
            codec.request_class(codec.ApiKey.ListOffsets).ListOffsetsTopic(name="events", partitions=[
                codec.request_class(codec.ApiKey.ListOffsets).ListOffsetsTopic.ListOffsetsPartition(
                    partition_index=0, timestamp=-1)])])
        assert listed.topics[0].partitions[0].offset == 1, "the oversized request stored nothing"
    entry = _report(broker)[("frames-ns", "frame-size")]
    assert entry["enforced"] and "1,046,528" in entry["message"]


def test_the_limit_is_decided_only_by_the_length_prefix(broker):
    with RawClient(broker.bootstrap_servers) as c:
        c.send_raw(struct.pack(">i", 50 * MB))  # no body follows: nothing is allocated or awaited
        assert c.is_closed()


def test_a_connection_bound_to_another_namespace_keeps_kafkas_limit(broker):
    password = connection_string.build("roomy-ns.servicebus.windows.net", key_name="any", key="any")
    with RawClient(broker.bootstrap_servers) as c:
        assert sasl_raw(c, password).error_code == 0
        c.send_raw(_produce_frame(c, KAFKA_FRAME_LIMIT + 1000))
        answer = c.read_response(codec.ApiKey.Produce, 9).responses[0].partition_responses[0]
        assert answer.error_code == 0


def test_a_client_sending_a_1_5_mb_record_sees_disconnects_not_an_answer(broker):
    conf = confluent_conf(broker.bootstrap_servers, **{"message.max.bytes": 3 * MB,
                                                       "compression.type": "none"})
    err = produce_one(conf, "events", b"x" * (3 * MB // 2), timeout=4.0)
    assert err is not None, "the record must not be stored"
    assert _report(broker)[("frames-ns", "frame-size")]["count"] >= 2
    assert produce_one(conf, "events", b"x" * (MB // 2)) is None, "smaller frames still work"


def test_dedicated_namespaces_cannot_close_large_frames():
    with pytest.raises(ValueError, match="close_large_frames"):
        load_toml({"namespaces": {"big-cluster": {"tier": "Dedicated", "capacity_units": 1,
                                          "close_large_frames": True}}})
