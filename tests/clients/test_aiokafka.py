"""aiokafka against a real in-process broker."""
from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

CODECS = [None, "gzip", "snappy", "lz4", "zstd"]


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_with_compression(broker, codec):
    topic = f"aio-{codec or 'none'}"
    broker.create_hub(topic)

    async def main():
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all",
                                    compression_type=codec)
        await producer.start()
        try:
            metas = [await producer.send_and_wait(topic, key=b"k%d" % i, value=b"v%d" % i,
                                                  headers=[("h", b"%d" % i)]) for i in range(50)]
            batch = producer.create_batch()
            for i in range(50, 100):
                batch.append(key=b"k%d" % i, value=b"v%d" % i, timestamp=None, headers=[("h", b"%d" % i)])
            await producer.send_batch(batch, topic, partition=0)
            await producer.flush()
        finally:
            await producer.stop()
        assert [m.offset for m in metas] == list(range(50))
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap_servers, enable_auto_commit=False)
        await consumer.start()
        try:
            tp = TopicPartition(topic, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            got = []
            while len(got) < 100:
                batch = await asyncio.wait_for(consumer.getmany(tp, timeout_ms=1000), 20)
                got.extend(batch.get(tp, []))
        finally:
            await consumer.stop()
        assert [(m.offset, m.key, m.value, list(m.headers)) for m in got] == \
               [(i, b"k%d" % i, b"v%d" % i, [("h", b"%d" % i)]) for i in range(100)]

    asyncio.run(main())
