"""KIP-848 regex subscriptions with a real client: librdkafka (confluent-kafka)
with ``group.protocol=consumer`` sends a ``^regex`` subscription to the
coordinator (SubscribedTopicRegex), which resolves it against the event hubs,
and a hub created later joins the subscription."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer


def _produce(bootstrap: str, topic: str, value: str) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    p.produce(topic, value.encode())
    assert p.flush(10) == 0


def _read_until(consumer: Consumer, wanted: set[str], seconds: float) -> set[str]:
    got: set[str] = set()
    deadline = time.monotonic() + seconds
    while not wanted <= got and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and not msg.error():
            got.add(f"{msg.topic()}:{msg.value().decode()}")
    return got


def test_librdkafka_regex_subscription_is_resolved_by_the_coordinator(broker):
    bootstrap = broker.bootstrap_servers
    for name, partitions in (("rxc-1", 2), ("rxc-2", 1), ("elsewhere", 1)):
        broker.create_hub(name, partitions)
        _produce(bootstrap, name, "first")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "rx-readers",
                         "group.protocol": "consumer", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 1000})
    try:
        consumer.subscribe(["^rxc-.*"])
        got = _read_until(consumer, {"rxc-1:first", "rxc-2:first"}, 30)
        assert got == {"rxc-1:first", "rxc-2:first"}, "only the matching hubs"
        group = broker.call(lambda: broker.broker.services.default.groups.describe_consumer_groups(
            ["rx-readers"]))[0]
        (member,) = group.members
        assert member.subscribed_topic_regex == "(^rxc-.*)"  # as librdkafka joins its regexes

        broker.create_hub("rxc-3", 1)
        _produce(bootstrap, "rxc-3", "later")
        got = _read_until(consumer, {"rxc-3:later"}, 30)
        assert "rxc-3:later" in got, "a hub created later joins the subscription"
        assert not any(g.startswith("elsewhere") for g in got)
    finally:
        consumer.close()
