"""A committed offset past the log end (the log lost its tail in a power loss,
the checkpoint store did not) is handled as Kafka handles it: OffsetFetch
answers it as committed, the consumer's Fetch from it gets
OFFSET_OUT_OF_RANGE, and the consumer's auto.offset.reset policy decides where
it goes on. Real client (confluent-kafka), in-process broker."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TOPIC = "shortened"


def _setup(broker) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(15)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(10):
        p.produce(TOPIC, b"old-%d" % i, partition=0)
    assert p.flush(15) == 0
    # As after a power loss that cut the log back to 10 records but kept a commit at 5,000.
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g", "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(TOPIC, 0, 5000)], asynchronous=False)
    assert c.committed([TopicPartition(TOPIC, 0)], timeout=10)[0].offset == 5000  # OffsetFetch answers it
    c.close()


@pytest.mark.parametrize("reset,first", [("earliest", b"old-0"), ("latest", b"new-")])
def test_a_commit_past_the_log_end_is_reset_by_the_consumers_policy(broker, reset, first):
    _setup(broker)
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "g", "enable.auto.commit": False,
                  "auto.offset.reset": reset})
    c.subscribe([TOPIC])
    p = Producer({"bootstrap.servers": broker.bootstrap_servers})
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    n = 0
    while not got and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
        else:  # keep appending: with "latest" only records after the reset are read
            p.produce(TOPIC, b"new-%d" % n, partition=0)
            p.flush(10)
            n += 1
    c.close()
    assert got and got[0].startswith(first), got
