"""A Kafka 4.3 Java consumer with ``group.protocol=consumer`` (KIP-848) across a broker
restart on the same data directory: members are not persisted, so its next
ConsumerGroupHeartbeat finds no group; it is answered UNKNOWN_MEMBER_ID, as Kafka answers
a member it no longer knows, and rejoins (GROUP_ID_NOT_FOUND would be fatal to it: its
poll throws and it reads nothing more)."""
from __future__ import annotations

import pytest
from confluent_kafka import Producer

from tests.java.test_java_groups import STEP_TIMEOUT, _assignment, _records, _stop, _wait

pytestmark = pytest.mark.slow


def _produce(bootstrap: str, topic: str, prefix: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, f"{prefix}-{i}".encode(), partition=i % 2)
    assert producer.flush(15) == 0


def test_java_kip848_consumer_rejoins_after_a_broker_restart(java, broker_factory):
    first = broker_factory()
    port = first.port
    first.create_hub("orders", partitions=2)
    _produce(first.bootstrap_servers, "orders", "before", 10)
    consumer = java.start("GroupConsumer", f"127.0.0.1:{port}", "java-kip848-restart",
                          "consumer", "orders", "reconnect.backoff.max.ms=500")
    # _records reads the program's new output lines first.
    _wait(lambda: len(_records(consumer)) >= 10 and consumer.lines[-1] == "COMMITTED",
          STEP_TIMEOUT, "the first 10 records, committed", consumer)
    first.stop()
    second = broker_factory(listen_port=port)
    groups = second.broker.services.default.groups

    def member_again() -> bool:
        return groups.consumer.has_group("java-kip848-restart") and \
            not groups.consumer.is_empty("java-kip848-restart")

    # Its next heartbeat (every 5 s) is answered UNKNOWN_MEMBER_ID and it rejoins. Records
    # come after that: a commitSync before it would fail with CommitFailedException (a
    # member the coordinator does not know, as after a lapsed session), which this
    # program treats as fatal; against Kafka the member would have survived the restart.
    _wait(lambda: second.call(member_again), STEP_TIMEOUT, "the consumer to rejoin", consumer)
    _produce(second.bootstrap_servers, "orders", "after", 10)
    _wait(lambda: {v for _p, _o, v in _records(consumer)} >= {f"after-{i}" for i in range(10)},
          STEP_TIMEOUT, "the 10 records produced after the restart", consumer)
    assert not any(line.startswith("ERROR") for line in consumer.lines), consumer.stdout
    assert _assignment(consumer) == {0, 1}
    _stop(consumer)
