"""Python-side helpers of the Java interop tests: codec constants, raw
Fetch of stored batches, and confluent-kafka / kafka-python readers that
return ``{partition: [(key, value), ...]}`` in offset order."""
from __future__ import annotations

import time

import confluent_kafka
from kafka import KafkaConsumer, TopicPartition

from kafka_wire import codec
from kafka_wire.log import batch as rb
from tests.rawclient import RawClient

CODECS = ("gzip", "snappy", "lz4", "zstd")
CODEC_IDS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
PAD = "abc" * 200  # compressible, and the same padding JavaProduceConsume uses
# Java and kafka-python frame snappy the xerial way (this magic, then blocks);
# librdkafka writes one raw snappy block.
XERIAL_MAGIC = b"\x82SNAPPY\x00"


def stored_batches(bootstrap: str, topic: str, partitions: int) -> list[tuple[int, bytes]]:
    """(compression attribute, first 8 bytes of the records section) of every
    batch a Fetch returns, raw."""
    req = codec.request_class(codec.ApiKey.Fetch)
    topic_cls, part_cls = req.FetchTopic, req.FetchTopic.FetchPartition
    seen: list[tuple[int, bytes]] = []
    with RawClient(bootstrap) as client:
        resp = client.request(
            codec.ApiKey.Fetch, 4, replica_id=-1, max_wait_ms=0, min_bytes=0,
            max_bytes=16 << 20, isolation_level=0,
            topics=[topic_cls(topic=topic, partitions=[
                part_cls(partition=p, fetch_offset=0, partition_max_bytes=8 << 20)
                for p in range(partitions)])])
    for t in resp.responses:
        for p in t.partitions:
            assert p.error_code == 0, p
            records = bytes(p.records or b"")
            seen += [(h.compression, records[pos + rb.HEADER_SIZE:pos + rb.HEADER_SIZE + 8])
                     for pos, h in rb.iter_batches(records)]
    return seen


def read_confluent(bootstrap: str, topic: str, partitions: int,
                   count: int) -> dict[int, list[tuple[str, str]]]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "codec-check",
                                         "enable.auto.commit": False, "check.crcs": True})
    out: dict[int, list[tuple[str, str]]] = {p: [] for p in range(partitions)}
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, p, confluent_kafka.OFFSET_BEGINNING)
                         for p in range(partitions)])
        deadline = time.monotonic() + 30
        while sum(map(len, out.values())) < count and time.monotonic() < deadline:
            for msg in consumer.consume(count, timeout=1):
                assert msg.error() is None, msg.error()
                out[msg.partition()].append((msg.key().decode(), msg.value().decode()))
    finally:
        consumer.close()
    return out


def read_kafka_python(bootstrap: str, topic: str, partitions: int,
                      count: int) -> dict[int, list[tuple[str, str]]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=5000, check_crcs=True)
    out: dict[int, list[tuple[str, str]]] = {p: [] for p in range(partitions)}
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        consumer.seek_to_beginning()
        for msg in consumer:
            out[msg.partition].append((msg.key.decode(), msg.value.decode()))
            if sum(map(len, out.values())) >= count:
                break
    finally:
        consumer.close()
    return out
