"""Time retention deletes whole closed segments and advances the log start offset."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_wire.testing import EmulatedBroker


def test_time_retention_advances_log_start_offset(tmp_path):
    with EmulatedBroker(tmp_path / "d", retention_check_interval_ms=100) as b:
        b.create_hub("short", configs={"retention.ms": "500", "segment.bytes": "1024"})
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "acks": "all", "linger.ms": 0,
                      "batch.num.messages": 1})
        for i in range(50):
            p.produce("short", b"x" * 200, partition=0)
            p.flush(10)
        c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "r"})
        try:
            lo, hi = c.get_watermark_offsets(TopicPartition("short", 0), timeout=10)
            assert hi == 50
            deadline = time.monotonic() + 15
            while lo == 0 and time.monotonic() < deadline:
                time.sleep(0.2)
                lo, hi = c.get_watermark_offsets(TopicPartition("short", 0), timeout=10)
            # Everything but the active segment is gone; sequence numbers are kept.
            assert 0 < lo <= 50 and hi == 50
        finally:
            c.close()
