"""A Kafka 4.3 Java consumer with ``group.protocol=consumer`` (KIP-848) across a broker
restart on the same data directory: the coordinator keeps members, epochs and assignments
in its record log, as Kafka keeps them in ``__consumer_offsets``, so the consumer goes on
in its epoch. Records produced right after the restart are read and committed
(``commitSync``) before its next heartbeat: that commit failed before with
CommitFailedException (the member was unknown until it rejoined)."""
from __future__ import annotations

import pytest
from confluent_kafka import Producer

from tests.java.test_java_groups import STEP_TIMEOUT, _assignment, _records, _stop, _wait

pytestmark = pytest.mark.slow

GROUP = "java-kip848-restart"


def _produce(bootstrap: str, topic: str, prefix: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, f"{prefix}-{i}".encode(), partition=i % 2)
    assert producer.flush(15) == 0


def _member(broker) -> tuple[int, dict[str, int]]:
    """(group epoch, {member id: member epoch}) as the broker's coordinator has them."""
    groups = broker.broker.services.default.groups

    def read():
        g = groups.consumer.groups.get(GROUP)
        return (-1, {}) if g is None else (
            g.group_epoch, {m.member_id: m.member_epoch for m in g.members.values()})
    return broker.call(read)


def _committed(broker) -> dict[int, int]:
    groups = broker.broker.services.default.groups
    return broker.call(lambda: {p: om.offset for (t, p), om in groups.offsets.get(GROUP).items()
                                if t == "orders"})


def test_java_kip848_consumer_commits_right_after_a_broker_restart(java, broker_factory):
    first = broker_factory()
    port = first.port
    first.create_hub("orders", partitions=2)
    _produce(first.bootstrap_servers, "orders", "before", 10)
    consumer = java.start("GroupConsumer", f"127.0.0.1:{port}", GROUP,
                          "consumer", "orders", "reconnect.backoff.max.ms=500")
    # _records reads the program's new output lines first.
    _wait(lambda: len(_records(consumer)) >= 10 and consumer.lines[-1] == "COMMITTED"
          and _committed(first) == {0: 5, 1: 5},
          STEP_TIMEOUT, "the first 10 records, committed", consumer)
    member = _member(first)
    assert len(member[1]) == 1, member
    first.stop()
    second = broker_factory(listen_port=port)
    assert _member(second) == member  # loaded: the same member, epoch and group epoch
    # Produced at once: the consumer reads them and commits with commitSync in the epoch
    # it had, before its next heartbeat (5 s). The program treats a failed commit as fatal.
    _produce(second.bootstrap_servers, "orders", "after", 10)
    _wait(lambda: {v for _p, _o, v in _records(consumer)} >= {f"after-{i}" for i in range(10)}
          and consumer.lines[-1] == "COMMITTED" and _committed(second) == {0: 10, 1: 10},
          STEP_TIMEOUT, "the 10 records produced after the restart, committed", consumer)
    assert not any(line.startswith("ERROR") for line in consumer.lines), consumer.stdout
    values = [v for _p, _o, v in _records(consumer)]
    assert len(values) == len(set(values)) == 20  # nothing read twice
    assert _member(second) == member  # it never had to rejoin
    assert _assignment(consumer) == {0, 1}
    _stop(consumer)
