"""A consumer tailing a producer sees each acknowledged batch at once, with the offset and
append time the producer was told, although the log keeps the newest ``.batches`` entries
in memory (log.index.BatchIndex.DEFER_ENTRIES): a read of the active segment writes them."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition


def test_a_tailing_consumer_sees_every_acknowledged_record_at_once(broker):
    broker.create_hub("tail", partitions=2)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all", "linger.ms": 0})
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "tail",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 10})
    consumer.assign([TopicPartition("tail", 0, 0)])
    acked: list[tuple[int, bytes, int]] = []
    seen: list[tuple[int, bytes, int]] = []
    plog = broker.call(lambda: broker.broker.services.default.topics.log("tail", 0))
    # Partition 1, which no consumer reads (a consumer's Fetch writes what waits as soon as it
    # reads), is read here right after each acknowledgement.
    unread = broker.call(lambda: broker.broker.services.default.topics.log("tail", 1))
    unread_end = 0
    waiting = 0  # rounds whose newest entries of partition 1 were still in memory when read

    def delivered(err, msg):
        assert err is None, err
        acked.append((msg.offset(), msg.value(), msg.timestamp()[1]))

    try:
        for round_ in range(40):  # 40 acknowledged requests of 1-5 records, each read back before the next
            for i in range(1 + round_ % 5):
                producer.produce("tail", b"r%d-%d" % (round_, i), on_delivery=delivered, partition=0)
            producer.produce("tail", b"unread", partition=1)
            assert producer.flush(10) == 0
            unread_end += 1

            def read_newest():  # on the broker's loop, as a Fetch would
                pending = unread.active_segment.batch_index.pending_entries
                return pending, bytes(unread.read(unread_end - 1, 1 << 20))

            pending, data = broker.call(read_newest)
            waiting += pending > 0
            assert data, f"round {round_}: partition 1's acknowledged offset {unread_end - 1} does not read"
            deadline = time.monotonic() + 10
            while len(seen) < len(acked) and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and not msg.error():
                    seen.append((msg.offset(), msg.value(), msg.timestamp()[1]))
            assert seen == acked, f"round {round_}: read {len(seen)} of {len(acked)} acknowledged"
    finally:
        consumer.close()
    assert waiting, "no round read entries kept in memory: the test did not try the deferral"
    # Event Hubs' enqueued time and offset come from .batches: the same times as the records' stamps.
    stored = broker.call(lambda: plog.stored_batches(0, 1 << 20))
    times = [append_ms for _position, append_ms, _view in stored]
    assert sorted(set(t for _o, _v, t in acked)) == sorted(set(times))
