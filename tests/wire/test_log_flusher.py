"""flush.ms is kept by a periodic flusher off the event loop, not only when the
next record arrives: one record, then silence, is on disk within flush.ms."""
from __future__ import annotations

import time

from confluent_kafka import Producer


def test_a_partition_with_flush_ms_is_fsynced_without_another_append(broker):
    broker.create_hub("flushed", partitions=1, configs={"flush.ms": "100"})
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    producer.produce("flushed", b"only one")
    assert producer.flush(10) == 0
    plog = broker.call(lambda: broker.broker.services.default.topics.log("flushed", 0))
    deadline = time.monotonic() + 5
    while broker.call(lambda: plog._unflushed) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert broker.call(lambda: plog._unflushed) == 0
    assert not broker.call(lambda: any(seg.dirty for seg in plog._segments))
