"""Bad frames close only the connection that sent them."""
from __future__ import annotations

import random
import struct
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_wire import codec
from tests.rawclient import RawClient


class _Traffic:
    """A producer and a consumer that keep working while we misbehave."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.stop = threading.Event()
        self.sent = 0
        self.errors: list = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 1})

        def cb(err, msg):
            if err:
                self.errors.append(err)
        while not self.stop.is_set():
            p.produce(self.topic, b"payload-%d" % self.sent, on_delivery=cb)
            self.sent += 1
            p.poll(0.005)
        p.flush(15)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)


def _all_readable(bootstrap, topic, count):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "check"})
    c.assign([TopicPartition(topic, 0, 0)])
    n, deadline = 0, time.monotonic() + 30
    while n < count and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            n += 1
    c.close()
    return n


def _garbage_frame() -> bytes:
    # Random bytes with a random length prefix are not reliably bad: about one draw
    # in forty reads as a frame under the 100 MiB limit and the broker rightly waits
    # for the rest of it. So the length is honest and the body is seeded garbage.
    body = random.Random(20261125).randbytes(60)
    return struct.pack(">i", len(body)) + body


def test_garbage_and_bad_lengths_close_only_that_connection(broker):
    broker.create_hub("steady")
    bad_inputs = [
        _garbage_frame(),                                  # garbage in a well-sized frame
        struct.pack(">i", 2**31 - 1) + b"x" * 10,         # huge length prefix
        struct.pack(">i", -5),                             # negative length
        struct.pack(">i", 0),                              # empty frame
        struct.pack(">i", 3) + b"abc",                     # shorter than a header
        struct.pack(">ihhih", 10, 9999, 0, 1, -1),         # unknown api key
        struct.pack(">ihhih", 12, codec.ApiKey.Metadata, 9, 1, 5) + b"ab",  # client id past end
        struct.pack(">ihhih", 12, codec.ApiKey.Produce, 9, 1, -1) + b"\xff\xff",  # body garbage
    ]
    with _Traffic(broker.bootstrap_servers, "steady") as traffic:
        for data in bad_inputs:
            with RawClient(broker.bootstrap_servers) as c:
                c.send_raw(data)
                assert c.is_closed(), data
        # A truncated frame: the broker waits for the rest, then the client gives up.
        with RawClient(broker.bootstrap_servers) as c:
            c.send_raw(struct.pack(">i", 1000) + b"\x00\x12\x00\x00")
            assert not c.is_closed(timeout=0.3)
        time.sleep(0.5)
    assert not traffic.errors
    assert traffic.sent > 0
    assert _all_readable(broker.bootstrap_servers, "steady", traffic.sent) == traffic.sent


def test_huge_length_prefix_is_refused_before_allocation(broker):
    # 2 GiB would be fatal to allocate; the limit check must come first.
    with RawClient(broker.bootstrap_servers) as c:
        c.send_raw(struct.pack(">i", 2**31 - 1))
        assert c.is_closed()
    with RawClient(broker.bootstrap_servers) as c:
        assert c.request(codec.ApiKey.ApiVersions, 0).error_code == 0
