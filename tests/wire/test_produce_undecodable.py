"""Produce decompresses a compressed batch, as Kafka's LogValidator does, and refuses
with INVALID_RECORD one that no reader could decompress: a decompression bomb (10 KB of
zstd for 300 MiB), bytes that do not decompress. Before, the broker stored them, and
Capture stopped for good at such a batch while AMQP receivers were detached at it over
and over. Records that do not parse inside a good compression are stored (parsing them
cost thirty times the decompression): the readers go on past them (their own tests).
Large batches are checked off the event loop; a producer's batches stay in order."""
from __future__ import annotations

import time

import kafka.errors as Errors
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_wire.log import records as rec
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient
from tests.undecodable_batches import UNDECODABLE, batch, produce


@pytest.fixture(scope="module")
def module_broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("produce-undecodable") / "data") as b:
        yield b


def _read(bootstrap: str, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "u", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got, deadline = [], time.monotonic() + 30
    try:
        while len(got) < expected and time.monotonic() < deadline:
            m = consumer.poll(0.2)
            if m is not None:
                assert m.error() is None, m.error()
                got.append(m.value())
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("name", ["bomb", "not-decompressing"])
def test_an_undecodable_compressed_batch_is_refused_and_the_partition_goes_on(module_broker, name):
    topic = f"undecodable-{name}"
    module_broker.create_hub(topic)
    with RawClient(module_broker.bootstrap_servers) as c:
        assert produce(c, topic, batch([b"before"])).error_code == 0
        bad = produce(c, topic, UNDECODABLE[name]())
        assert bad.error_code == Errors.InvalidRecordError.errno, bad
        assert produce(c, topic, batch([b"after"], codec_id=rec.ZSTD)).error_code == 0
    assert _read(module_broker.bootstrap_servers, topic, 2) == [b"before", b"after"]


def test_records_that_do_not_parse_in_a_good_compression_are_stored_unparsed(module_broker):
    topic = "undecodable-records"
    module_broker.create_hub(topic)
    with RawClient(module_broker.bootstrap_servers) as c:
        stored = produce(c, topic, UNDECODABLE["not-parsing"]())
        assert (stored.error_code, stored.base_offset) == (0, 0), stored
        assert produce(c, topic, batch([b"after"], codec_id=rec.ZSTD)).base_offset == 2


@pytest.mark.parametrize("codec_id", [rec.GZIP, rec.SNAPPY, rec.LZ4, rec.ZSTD])
def test_a_large_compressed_batch_is_checked_in_a_thread_and_stored_in_order(module_broker, codec_id):
    """5,000 records (past what the loop checks at once), between small ones on one
    connection: every one stored, in the order sent; a large bad one refused."""
    topic = f"large-{codec_id}"
    module_broker.create_hub(topic)
    large = [b"large %d" % i for i in range(5000)]
    with RawClient(module_broker.bootstrap_servers) as c:
        sent = [(batch([b"small 0"]), 1), (batch(large, codec_id=codec_id), 5000), (batch([b"small 1"]), 1)]
        answers = [produce(c, topic, blob) for blob, _ in sent]
        assert [a.error_code for a in answers] == [0, 0, 0]
        assert [a.base_offset for a in answers] == [0, 1, 5001]
        # 5,000 records (checked in a thread) whose compressed bytes are not the codec's
        bad = produce(c, topic, batch([b""] * 5000, codec_id=codec_id, body=b"\xff not compressed" * 100))
        assert bad.error_code == Errors.InvalidRecordError.errno, bad
    assert _read(module_broker.bootstrap_servers, topic, 5002) == [b"small 0", *large, b"small 1"]


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_what_librdkafka_compresses_is_stored(module_broker, compression):
    topic = f"librdkafka-{compression}"
    module_broker.create_hub(topic)
    p = Producer({"bootstrap.servers": module_broker.bootstrap_servers, "compression.type": compression,
                  "linger.ms": 50, "enable.idempotence": True})
    errors = []
    for i in range(3000):
        p.produce(topic, key=b"k%d" % i, value=b"value %d " % i * (i % 7 + 1), partition=0,
                  headers=[("h", b"%d" % i)], on_delivery=lambda err, msg: err and errors.append(err))
    assert p.flush(30) == 0 and errors == []
    got = _read(module_broker.bootstrap_servers, topic, 3000)
    assert got == [b"value %d " % i * (i % 7 + 1) for i in range(3000)]


def test_a_gzip_batch_with_zero_padding_is_stored_as_kafka_stores_it(module_broker):
    """Bytes after the gzip member that begin no other (here zeros) end the stream for
    Kafka's GZIPInputStream: Kafka stores such a batch, so does the broker, and readers
    read its records."""
    topic = "gzip-padded"
    module_broker.create_hub(topic)
    body = rec.compress(rec.GZIP, b"".join(rec.encode_record(i, 0, b"k", v)
                                           for i, v in enumerate([b"a", b"b"])))
    with RawClient(module_broker.bootstrap_servers) as c:
        stored = produce(c, topic, batch([b"a", b"b"], codec_id=rec.GZIP, body=body + bytes(32)))
        assert (stored.error_code, stored.base_offset) == (0, 0), stored
    assert _read(module_broker.bootstrap_servers, topic, 2) == [b"a", b"b"]
