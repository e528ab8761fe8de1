"""confluent-kafka (librdkafka) against a real in-process broker."""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def _produce(bootstrap, topic, records, **conf):
    acked, errors = [], []

    def cb(err, msg):
        (errors if err else acked).append(err or msg)

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, **conf})
    for key, value, headers, partition in records:
        extra = {} if partition is None else {"partition": partition}
        p.produce(topic, value=value, key=key, headers=headers, on_delivery=cb, **extra)
        p.poll(0)
    assert p.flush(30) == 0
    assert not errors, errors
    return acked


def _consume_assigned(bootstrap, topic, partitions, expected, timeout=30, **conf):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4()}",
                  "enable.auto.commit": False, **conf})
    c.assign([TopicPartition(topic, p, 0) for p in partitions])
    out = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expected and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise AssertionError(msg.error())
            out.append(msg)
    finally:
        c.close()
    return out


def _create(bootstrap, topic, partitions=1):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(topic, partitions, 1)])[topic]
    fut.result(15)


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_keeps_keys_headers_and_order(broker, codec):
    topic = f"rt-{codec}"
    broker.create_hub(topic, partitions=2)
    records = [(f"k{i}".encode(), f"value-{i}".encode() * (i % 7 + 1),
                [("h", f"{i}".encode()), ("empty", b"")], i % 2) for i in range(500)]
    acked = _produce(broker.bootstrap_servers, topic, records, **{"compression.type": codec})
    assert len(acked) == 500
    got = _consume_assigned(broker.bootstrap_servers, topic, [0, 1], 500)
    assert len(got) == 500
    by_part = {0: [], 1: []}
    for m in got:
        by_part[m.partition()].append(m)
    for part, msgs in by_part.items():
        assert [m.offset() for m in msgs] == list(range(len(msgs)))
        expected = [r for r in records if r[3] == part]
        assert [(m.key(), m.value(), m.headers()) for m in msgs] == \
               [(k, v, [(hk, hv) for hk, hv in h]) for k, v, h, _p in expected]


def test_null_key_and_tombstone_round_trip(broker):
    broker.create_hub("nulls")
    _produce(broker.bootstrap_servers, "nulls", [(None, b"v", None, 0), (b"k", None, None, 0)])
    got = _consume_assigned(broker.bootstrap_servers, "nulls", [0], 2)
    assert [(m.key(), m.value()) for m in got] == [(None, b"v"), (b"k", None)]


def test_acked_offsets_match_list_offsets(broker):
    broker.create_hub("watermarks", partitions=3)
    acked = _produce(broker.bootstrap_servers, "watermarks",
                     [(None, b"x" * 10, None, i % 3) for i in range(300)])
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "wm"})
    try:
        for p in range(3):
            lo, hi = c.get_watermark_offsets(TopicPartition("watermarks", p), timeout=10)
            acked_p = sorted(m.offset() for m in acked if m.partition() == p)
            assert (lo, hi) == (0, 100)
            assert acked_p == list(range(100))
    finally:
        c.close()


def test_admin_created_topic_is_usable_and_auto_create_on_metadata(broker):
    _create(broker.bootstrap_servers, "made-by-admin", 4)
    md = AdminClient({"bootstrap.servers": broker.bootstrap_servers}).list_topics(timeout=10)
    assert len(md.topics["made-by-admin"].partitions) == 4
    # librdkafka asks for auto-creation only when allowed; the producer's metadata request does.
    acked = _produce(broker.bootstrap_servers, "auto-made", [(None, b"a", None, None)],
                     **{"allow.auto.create.topics": True})
    assert acked[0].offset() == 0


def test_offsets_for_times_uses_append_time(broker):
    broker.create_hub("times")
    before = int(time.time() * 1000) - 1
    _produce(broker.bootstrap_servers, "times", [(None, b"a", None, 0)])
    time.sleep(0.05)
    middle = int(time.time() * 1000)
    _produce(broker.bootstrap_servers, "times", [(None, b"b", None, 0)])
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "times"})
    try:
        res = c.offsets_for_times([TopicPartition("times", 0, before)], timeout=10)
        assert res[0].offset == 0
        res = c.offsets_for_times([TopicPartition("times", 0, middle)], timeout=10)
        assert res[0].offset == 1
        res = c.offsets_for_times([TopicPartition("times", 0, middle + 3_600_000)], timeout=10)
        assert res[0].offset == -1
    finally:
        c.close()


def test_message_over_max_message_bytes_is_refused(broker):
    broker.create_hub("big", configs={"max.message.bytes": "2000"})
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "message.max.bytes": 100000,
                  "compression.type": "none"})
    errors = []
    p.produce("big", value=b"x" * 5000, on_delivery=lambda e, m: errors.append(e))
    p.flush(15)
    assert errors and errors[0] is not None
    assert errors[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
