"""Data and topics survive an in-process restart on the same data directory."""
from __future__ import annotations

from confluent_kafka import Consumer, Producer, TopicPartition


def test_topics_and_records_survive_restart(broker_factory):
    b = broker_factory()
    b.create_hub("keep", partitions=2)
    p = Producer({"bootstrap.servers": b.bootstrap_servers, "acks": "all"})
    for i in range(200):
        p.produce("keep", b"v%d" % i, key=b"k%d" % i, partition=i % 2)
    assert p.flush(15) == 0
    b.stop()

    b2 = broker_factory()
    c = Consumer({"bootstrap.servers": b2.bootstrap_servers, "group.id": "x"})
    try:
        for part in (0, 1):
            assert c.get_watermark_offsets(TopicPartition("keep", part), timeout=10) == (0, 100)
        c.assign([TopicPartition("keep", 0, 0), TopicPartition("keep", 1, 0)])
        got = []
        for _ in range(400):
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m.value())
            if len(got) == 200:
                break
        assert sorted(got) == sorted(b"v%d" % i for i in range(200))
    finally:
        c.close()
    # Appends continue from the recovered end.
    p = Producer({"bootstrap.servers": b2.bootstrap_servers, "acks": "all"})
    offsets = []
    p.produce("keep", b"after", partition=0, on_delivery=lambda e, m: offsets.append(m.offset()))
    p.flush(15)
    assert offsets == [100]
