"""Events sent over AMQP become a record batch the broker builds; on a LogAppendTime hub it is
built already stamped with the append time (eventhubs.events.records_batch), so the log keeps
its CRC instead of computing a second one. The stored CRC must be valid for both timestamp
types, and when the log's append time is not the builder's (a clock that went back) the log
stamps it again."""
from __future__ import annotations

import time

import pytest
from azure.eventhub import EventData, EventHubProducerClient
from confluent_kafka import Consumer, TopicPartition

from kafka_wire.eventhubs.events import Incoming, records_batch
from kafka_wire.log import batch as rb
from kafka_wire.log.config import LogConfig
from kafka_wire.log.partition_log import PartitionLog

from .conftest import ROOT, sdk_cs


def _stored_batches(plog: PartitionLog) -> list[bytes]:
    out, offset = [], 0
    while offset < plog.log_end_offset:
        view = bytes(plog.read(offset, 1 << 22))
        for _pos, h in rb.iter_batches(view):
            out.append(view[_pos:_pos + h.size])
            offset = h.last_offset + 1
    return out


@pytest.mark.parametrize("timestamp_type", ["LogAppendTime", "CreateTime"])
def test_sdk_sends_are_stored_with_a_valid_crc_and_the_hubs_timestamp_type(broker, timestamp_type):
    hub = f"stamped-{timestamp_type.lower()}"
    broker.create_hub(hub, partitions=1, configs={"message.timestamp.type": timestamp_type})
    before = int(time.time() * 1000)
    with EventHubProducerClient.from_connection_string(sdk_cs(broker, ROOT), eventhub_name=hub) as p:
        for n in (1, 7, 300):
            batch = p.create_batch(partition_id="0")
            for i in range(n):
                batch.add(EventData(b"e%d-%d" % (n, i) * 8))
            p.send_batch(batch)
    plog = broker.call(lambda: broker.broker.services.default.topics.log(hub, 0))
    stored = broker.call(lambda: _stored_batches(plog))
    assert len(stored) == 3
    for data in stored:
        h = rb.parse_header(data, 0)
        assert rb.crc32c(data[rb.ATTRIBUTES_OFFSET:]) == h.crc
        assert h.timestamp_type == (1 if timestamp_type == "LogAppendTime" else 0)
        assert h.max_timestamp >= before
    # librdkafka checks each batch's CRC-32C when asked (check.crcs) and reports a bad one.
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": hub, "check.crcs": True,
                         "enable.auto.commit": False, "security.protocol": "SASL_PLAINTEXT",
                         "sasl.mechanism": "PLAIN", "sasl.username": "$ConnectionString",
                         "sasl.password": broker.connection_string()})
    consumer.assign([TopicPartition(hub, 0, 0)])
    got = []
    try:
        deadline = time.monotonic() + 20
        while len(got) < 308 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append(msg.value())
    finally:
        consumer.close()
    assert got == [b"e%d-%d" % (n, i) * 8 for n in (1, 7, 300) for i in range(n)]


def test_a_batch_built_stamped_is_stamped_again_when_the_append_time_differs(tmp_path):
    log = PartitionLog(tmp_path, LogConfig(message_timestamp_type="LogAppendTime"), now_ms=0)
    try:
        events = [Incoming(None, [], b"x" * 20, []), Incoming("key", [], b"y" * 30, [])]
        log.append(records_batch(events, 5_000, log_append_time=True), now_ms=5_000)
        # The builder's clock went back: the log's append time stays 5,000 (monotonic).
        log.append(records_batch(events, 4_000, log_append_time=True), now_ms=4_000)
        log.append(records_batch(events, 6_000, log_append_time=False), now_ms=6_000)
        stamps = []
        for data in _stored_batches(log):
            h = rb.parse_header(data, 0)
            assert rb.crc32c(data[rb.ATTRIBUTES_OFFSET:]) == h.crc
            stamps.append((h.timestamp_type, h.max_timestamp))
        assert stamps == [(1, 5_000), (1, 5_000), (1, 6_000)]
    finally:
        log.abandon()
