"""Produce refuses batches that would be stored but never read back (an unknown
compression codec, zstd below Produce v7: Kafka's UNSUPPORTED_COMPRESSION_TYPE) and
batches claiming more records than their bytes hold (INVALID_RECORD); the log and
the namespace's quota stay as they were."""
from __future__ import annotations

import time

import kafka.errors as Errors
import pytest
from confluent_kafka import Consumer, TopicPartition

from kafka_wire import codec
from kafka_wire.coordinator.clock import VirtualClock
from kafka_wire.eventhubs.model import EventHubsModel, Namespace
from kafka_wire.log import batch as rb
from kafka_wire.log import records as rec
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient


@pytest.fixture(scope="module")
def module_broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("produce-validation") / "data") as b:
        yield b


def _batch(values, *, attributes=0, count=None, body=None) -> bytes:
    ts = 1_700_000_000_000
    if body is None:
        body = b"".join(rec.encode_record(i, 0, b"k", v) for i, v in enumerate(values))
        if attributes & rb.COMPRESSION_MASK in (rec.GZIP, rec.SNAPPY, rec.LZ4, rec.ZSTD):
            body = rec.compress(attributes & rb.COMPRESSION_MASK, body)
    n = len(values) if count is None else count
    return bytes(rb.encode_batch(
        base_offset=0, partition_leader_epoch=0, attributes=attributes, last_offset_delta=n - 1,
        base_timestamp=ts, max_timestamp=ts, producer_id=-1, producer_epoch=-1, base_sequence=-1,
        records_count=n, records=body))


def _produce(client, topic, blob, version=7):
    answer = client.request(codec.ApiKey.Produce, version, transactional_id=None, acks=1, timeout_ms=5000,
                            topic_data=[(topic, [(0, blob)])])
    return answer.responses[0][1][0]


def _high_watermark(client, topic) -> int:
    answer = client.request(codec.ApiKey.ListOffsets, 1, replica_id=-1, topics=[(topic, [(0, -1)])])
    return answer.topics[0].partitions[0].offset


def _read(bootstrap, topic, expected: int):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "v", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got, errors, deadline = [], [], time.monotonic() + 20
    try:
        while len(got) < expected and not errors and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is None:
                continue
            (errors if m.error() else got).append(m.error() or m.value())
    finally:
        consumer.close()
    return got, errors


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_a_batch_naming_an_unknown_codec_is_refused_and_consumers_read_past_it(module_broker, codec_id):
    topic = f"codec-{codec_id}"
    module_broker.create_hub(topic)
    with RawClient(module_broker.bootstrap_servers) as c:
        assert _produce(c, topic, _batch([b"before"])).error_code == 0
        bad = _produce(c, topic, _batch([b"poison"], attributes=codec_id))
        assert bad.error_code == Errors.UnsupportedCompressionTypeError.errno
        assert _produce(c, topic, _batch([b"after"])).error_code == 0
        assert _high_watermark(c, topic) == 2
    got, errors = _read(module_broker.bootstrap_servers, topic, 2)
    assert (got, errors) == ([b"before", b"after"], [])


@pytest.mark.parametrize("version", [3, 6])
def test_zstd_below_produce_v7_is_refused(module_broker, version):
    topic = f"zstd-v{version}"
    module_broker.create_hub(topic)
    with RawClient(module_broker.bootstrap_servers) as c:
        refused = _produce(c, topic, _batch([b"z"], attributes=rec.ZSTD), version=version)
        assert refused.error_code == Errors.UnsupportedCompressionTypeError.errno
        assert _produce(c, topic, _batch([b"g"], attributes=rec.GZIP), version=version).error_code == 0
        assert _produce(c, topic, _batch([b"z"], attributes=rec.ZSTD), version=7).error_code == 0
        assert _high_watermark(c, topic) == 2


def test_a_batch_claiming_more_records_than_it_holds_is_refused_and_not_charged(tmp_path):
    """One record claiming 10^8: stored, it moved the high watermark by 10^8 and put the
    namespace's throughput unit (1,000 events/s) in ~28 hours of debt for every producer."""
    model = EventHubsModel({"tu-ns": Namespace("tu-ns", units=1)}, "tu-ns")
    with EmulatedBroker(tmp_path / "data", clock=VirtualClock(), eventhubs=model) as broker:
        broker.create_hub("orders")
        with RawClient(broker.bootstrap_servers) as c:
            liar = _batch(None, count=100_000_000, body=rec.encode_record(0, 0, b"k", b"v"))
            refused = _produce(c, "orders", liar, version=8)
            assert refused.error_code == Errors.InvalidRecordError.errno
            assert "cannot hold" in refused.error_message
            liar = _batch(None, count=1_000_000, attributes=rec.ZSTD,
                          body=rec.compress(rec.ZSTD, rec.encode_record(0, 0, b"k", b"v")))
            assert _produce(c, "orders", liar).error_code == Errors.InvalidRecordError.errno
            assert _high_watermark(c, "orders") == 0
        with RawClient(broker.bootstrap_servers) as other:
            answer = other.request(codec.ApiKey.Produce, 7, transactional_id=None, acks=1, timeout_ms=5000,
                                   topic_data=[("orders", [(0, _batch([b"legit"]))])])
            assert (answer.responses[0][1][0].error_code, answer.throttle_time_ms) == (0, 0)
            assert _high_watermark(other, "orders") == 1


@pytest.mark.parametrize("batches", [2, 100_000])
def test_a_partition_gets_exactly_one_batch_a_produce_request(module_broker, batches):
    """Kafka's ProduceRequest.validateRecords: more than one batch a partition is
    INVALID_RECORD. 1.5 million 61-byte batches in one request held the broker 7 s."""
    topic = f"one-batch-{batches}"
    module_broker.create_hub(topic)
    with RawClient(module_broker.bootstrap_servers) as c:
        refused = _produce(c, topic, _batch([b"a"]) * batches, version=8)
        assert refused.error_code == Errors.InvalidRecordError.errno
        assert "exactly one record batch" in refused.error_message
        assert _produce(c, topic, _batch([b"a"]) + b"\0" * 8).error_code == Errors.InvalidRecordError.errno
        assert _high_watermark(c, topic) == 0
        assert _produce(c, topic, _batch([b"a", b"b"])).error_code == 0
        assert _high_watermark(c, topic) == 2
