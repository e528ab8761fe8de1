"""Capture suite fixtures: one SparkSession for the whole test session
(local[2], UI off) and one broker holding 20,000 produced events."""
from __future__ import annotations

import os
import sys
import time

import pytest
from confluent_kafka import Producer

from kafka_wire.testing import EmulatedBroker

HUB, PARTITIONS, EVENTS = "orders", 4, 20_000


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    # Workers must run this interpreter, or they fail with "Python worker failed to connect back".
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from kafka_wire.spark.session import get_session

    session = get_session("local[2]", app_name="kafka-wire-capture-tests",
                          scratch_dir=tmp_path_factory.mktemp("spark-scratch"))
    yield session
    session.stop()


def produce(bootstrap: str, hub: str, n: int, *, compression: str, start: int = 0, partitions: int = PARTITIONS,
            pause_every: int = 0, pause_s: float = 0.0) -> dict:
    """Produce ``n`` keyed events with headers; returns {(partition, offset): (key, body, headers)}."""
    acked: dict = {}
    errors: list = []

    def on_delivery(headers):
        def done(err, msg):
            if err is not None:
                errors.append(err)
            else:  # delivery reports carry key and value but not the headers: keep ours
                acked[(msg.partition(), msg.offset())] = (msg.key(), msg.value(), headers)
        return done

    p = Producer({"bootstrap.servers": bootstrap, "compression.type": compression, "linger.ms": 20,
                  "enable.idempotence": True})
    for i in range(start, start + n):
        headers = [("seq", str(i).encode()), ("kind", b"test")]
        for _ in range(600):  # 60 s at most
            try:
                p.produce(hub, key=f"key-{i}".encode(), value=f"event {i} ".encode() * (i % 5 + 1),
                          headers=headers, partition=i % partitions, on_delivery=on_delivery(headers))
                break
            except BufferError:  # librdkafka's queue (100,000) is full: a loaded broker; let it drain
                p.poll(0.1)
        else:
            raise AssertionError(f"the producer's queue stayed full for 60 s at event {i}")
        if pause_every and (i - start + 1) % pause_every == 0:
            p.flush()
            time.sleep(pause_s)
        p.poll(0)
    p.flush(30)
    assert not errors and len(acked) == n
    return acked


@pytest.fixture(scope="module")
def produced(tmp_path_factory):
    """A running broker whose hub ``orders`` (4 partitions) holds 20,000
    events, half produced with snappy and half with zstd."""
    data = tmp_path_factory.mktemp("capture") / "data"
    with EmulatedBroker(data) as broker:
        broker.create_hub(HUB, PARTITIONS)
        expected = produce(broker.bootstrap_servers, HUB, EVENTS // 2, compression="snappy")
        expected |= produce(broker.bootstrap_servers, HUB, EVENTS // 2, compression="zstd", start=EVENTS // 2)
        yield broker, expected
