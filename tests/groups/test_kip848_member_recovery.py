"""KIP-848 consumers (librdkafka, ``group.protocol=consumer``) across a broker restart and a
lapsed session, as against Kafka. The coordinator keeps members, epochs and assignments in
its record log (Kafka's group records in ``__consumer_offsets``), so after a restart on the
same data directory the member goes on in its epoch: a commit before its next heartbeat is
accepted and nothing is read twice. A member the coordinator has forgotten (its session
lapsed; an empty group without offsets goes with its last member) is answered
UNKNOWN_MEMBER_ID, as Kafka answers it, and rejoins with epoch 0; GROUP_ID_NOT_FOUND would
be fatal to the client (librdkafka raises ``_FATAL`` and consumes nothing more)."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kafka_wire.coordinator.clock import VirtualClock

STEP_S = 30


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i, value in enumerate(values):
        p.produce(topic, value, partition=i % 2)
    assert p.flush(15) == 0


def _consumer(bootstrap: str, group: str, errors: list, **conf) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "group.protocol": "consumer", "auto.offset.reset": "earliest",
                     "reconnect.backoff.max.ms": 500, "error_cb": errors.append, **conf})


def _read_until(consumer: Consumer, wanted: set[bytes], errors: list) -> set[bytes]:
    """Poll until every wanted value was read (bounded); a fatal error ends it at once."""
    got: set[bytes] = set()
    deadline = time.monotonic() + STEP_S
    while not wanted <= got and time.monotonic() < deadline:
        m = consumer.poll(0.2)
        if m is None:
            continue
        if m.error():
            errors.append(m.error())
            if m.error().fatal():
                break
            continue
        got.add(m.value())
    return got


def _fatal(errors: list) -> list:
    return [e for e in errors if isinstance(e, KafkaError) and
            (e.fatal() or e.code() == KafkaError._FATAL)]


def _member(broker, group: str) -> tuple[int, dict[str, int]]:
    """(group epoch, {member id: member epoch}) as the broker's coordinator has them."""
    groups = broker.broker.services.default.groups

    def read():
        g = groups.consumer.groups.get(group)
        return (-1, {}) if g is None else (
            g.group_epoch, {m.member_id: m.member_epoch for m in g.members.values()})
    return broker.call(read)


def test_kip848_consumer_goes_on_in_its_epoch_after_a_broker_restart(broker_factory):
    first = broker_factory()
    port = first.port
    first.create_hub("orders", partitions=2)
    before = [b"before-%d" % i for i in range(10)]
    _produce(first.bootstrap_servers, "orders", before)
    errors: list = []
    consumer = _consumer(f"127.0.0.1:{port}", "kip848-restart", errors,
                         **{"enable.auto.commit": False})
    try:
        consumer.subscribe(["orders"])
        assert _read_until(consumer, set(before), errors) == set(before), errors
        consumer.commit(asynchronous=False)
        member = _member(first, "kip848-restart")
        assert len(member[1]) == 1 and member[0] > 0, member
        first.stop()
        # Same data directory, same port: the member is back with its epoch and partitions.
        second = broker_factory(listen_port=port)
        assert _member(second, "kip848-restart") == member
        # A commit right after the restart (before the member's next heartbeat, 5 s on)
        # is taken in the member's epoch: it failed before (the member was unknown).
        committed = [TopicPartition("orders", p, 5) for p in (0, 1)]
        consumer.commit(offsets=committed, asynchronous=False)
        after = [b"after-%d" % i for i in range(10)]
        _produce(second.bootstrap_servers, "orders", after)
        got = _read_until(consumer, set(after), errors)
        assert not _fatal(errors), errors
        # Resumed at the committed offsets: the new records, none of the old ones again.
        assert got == set(after), (sorted(got), errors)
        consumer.commit(asynchronous=False)
        assert _member(second, "kip848-restart") == member  # no rejoin, no new epoch
        second.stop()
        third = broker_factory(listen_port=port)
        assert _member(third, "kip848-restart") == member
        positions = consumer.committed([TopicPartition("orders", p) for p in (0, 1)], 15)
        assert [tp.offset for tp in positions] == [10, 10]  # nothing lost, nothing repeated
    finally:
        consumer.close()


def test_kip848_consumer_whose_session_lapsed_rejoins(tmp_path, broker_factory):
    # A clock that moves only when told: the test makes the session lapse (as a long GC
    # pause would) while the client keeps running.
    clock = VirtualClock(start_ms=time.time_ns() // 1_000_000)
    broker = broker_factory(clock=clock)
    broker.create_hub("orders", partitions=2)
    before = [b"before-%d" % i for i in range(6)]
    _produce(broker.bootstrap_servers, "orders", before)
    errors: list = []
    # No commits: the group has no offsets, so it goes with its only member.
    consumer = _consumer(broker.bootstrap_servers, "kip848-lapsed", errors,
                         **{"enable.auto.commit": False})
    try:
        consumer.subscribe(["orders"])
        assert _read_until(consumer, set(before), errors) == set(before), errors
        groups = broker.broker.services.default.groups
        assert broker.call(lambda: groups.consumer.has_group("kip848-lapsed"))
        session_ms = groups.config.consumer_group_session_timeout_ms
        clock.advance_threadsafe(broker._loop, session_ms + 1_000).result(10)
        assert not broker.call(lambda: groups.consumer.has_group("kip848-lapsed"))

        def member_again() -> bool:
            return groups.consumer.has_group("kip848-lapsed") and \
                not groups.consumer.is_empty("kip848-lapsed")

        # Its next heartbeat (every 5 s) learns it is unknown; it rejoins with epoch 0.
        deadline = time.monotonic() + STEP_S
        while not broker.call(member_again) and time.monotonic() < deadline \
                and not _fatal(errors):
            m = consumer.poll(0.2)
            if m is not None and m.error():
                errors.append(m.error())
        assert not _fatal(errors), errors
        assert broker.call(member_again), errors
        after = [b"after-%d" % i for i in range(6)]
        _produce(broker.bootstrap_servers, "orders", after)
        got = _read_until(consumer, set(after), errors)
        assert not _fatal(errors), errors
        assert set(after) <= got, (sorted(got), errors)
    finally:
        consumer.close()
