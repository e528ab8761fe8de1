"""Kafka 4.3 Java consumers in a group, with the classic protocol and with the
KIP-848 consumer protocol (ConsumerGroupHeartbeat): two consumers split the
partitions, commit, and a consumer started after they stop resumes from the
committed offsets. Data is produced by the Java producer (idempotent, its
default)."""
from __future__ import annotations

import time

import kafka.errors as Errors
import pytest
from kafka import KafkaAdminClient

from kafka_wire.coordinator import consumer_protocol
from tests.rawclient import RawClient

pytestmark = pytest.mark.slow

PARTITIONS = 4
STEP_TIMEOUT = 60


def _assignment(proc) -> set[int] | None:
    proc._collect()
    for line in reversed(proc.lines):
        if line.startswith("ASSIGNED"):
            parts = line.split(" ", 1)
            return {int(p) for p in parts[1].split(",")} if len(parts) > 1 and parts[1] else set()
    return None


def _records(proc) -> list[tuple[int, int, str]]:
    proc._collect()
    out = []
    for line in proc.lines:
        if line.startswith("RECORD "):
            _, p, off, value = line.split(" ", 3)
            out.append((int(p), int(off), value))
    return out


def _wait(condition, timeout: float, what: str, *procs) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        for proc in procs:
            if proc.popen.poll() is not None:
                break
        time.sleep(0.1)
    detail = "\n".join(f"--- {p.name}:\n{p.stdout}\n{p.stderr[-3000:]}" for p in procs)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{detail}")


def _produce(java, bootstrap: str, topic: str, per_partition: int) -> None:
    res = java.run("SimpleProducer", bootstrap, topic, str(PARTITIONS), str(per_partition),
                   timeout=STEP_TIMEOUT)
    assert res.returncode == 0 and f"ACKED {PARTITIONS * per_partition}" in res.stdout, \
        f"Java producer failed:\n{res.stdout}\n{res.stderr[-3000:]}"


def _check_group_described(bootstrap: str, group: str, protocol: str, split) -> None:
    """The broker sees the group the clients think they are in (over the wire:
    ConsumerGroupDescribe for KIP-848 groups, DescribeGroups for classic)."""
    with RawClient(bootstrap) as client:
        if protocol == "consumer":
            (described,) = client.request(69, 1, group_ids=[group],
                                          include_authorized_operations=True).groups
            assert described.error_code == 0 and described.group_state == "Stable", described
            assert described.authorized_operations == 328
            owned = sorted(sorted(p for tp in m.assignment.topic_partitions for p in tp.partitions)
                           for m in described.members)
            assert all(m.member_type == 1 and m.client_id.startswith("java-consumer")
                       for m in described.members)
            # Java KIP-848 members are not classic groups: DescribeGroups v6 says so.
            (classic,) = client.request(15, 6, groups=[group],
                                        include_authorized_operations=False).groups
            assert classic.error_code == Errors.GroupIdNotFoundError.errno
        else:
            (described,) = client.request(15, 5, groups=[group],
                                          include_authorized_operations=False).groups
            assert (described.error_code, described.group_state, described.protocol_type) == \
                (0, "Stable", "consumer")
            owned = sorted(
                sorted(p for _t, ps in
                       consumer_protocol.decode_assignment(m.member_assignment) for p in ps)
                for m in described.members)
    assert owned == sorted(sorted(a) for a in split.values())


def _stop(proc) -> None:
    proc.send("stop")
    assert proc.wait(STEP_TIMEOUT) == 0, f"{proc.name}:\n{proc.stdout}\n{proc.stderr[-3000:]}"
    assert proc.lines[-1] == "CLOSED", proc.stdout


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_java_consumers_split_partitions_commit_and_restarted_consumer_resumes(
        java, broker, protocol):
    bootstrap = broker.bootstrap_servers
    topic, group = f"java-groups-{protocol}", f"java-group-{protocol}"
    broker.create_hub(topic, partitions=PARTITIONS)

    first = java.start("GroupConsumer", bootstrap, group, protocol, topic)
    _wait(lambda: _assignment(first) == set(range(PARTITIONS)), STEP_TIMEOUT,
          "the first consumer to own every partition", first)
    second = java.start("GroupConsumer", bootstrap, group, protocol, topic)
    _wait(lambda: (a := _assignment(first)) is not None and (b := _assignment(second)) is not None
          and len(a) == len(b) == PARTITIONS // 2 and a | b == set(range(PARTITIONS)),
          STEP_TIMEOUT, "two consumers holding two partitions each", first, second)
    split = {first.name: _assignment(first), second.name: _assignment(second)}
    _check_group_described(bootstrap, group, protocol, split)

    _produce(java, bootstrap, topic, 50)
    _wait(lambda: len(_records(first)) + len(_records(second)) >= PARTITIONS * 50,
          STEP_TIMEOUT, "all 200 records", first, second)
    for proc in (first, second):
        got = _records(proc)
        assert got, f"{proc.name} read nothing: the partitions were not split"
        assert {p for p, _o, _v in got} <= split[proc.name], "read a partition it does not own"
    both = _records(first) + _records(second)
    assert len(both) == len(set(both)) == PARTITIONS * 50, "a record was read twice"
    assert sorted((p, o) for p, o, _v in both) == \
        [(p, o) for p in range(PARTITIONS) for o in range(50)]
    _stop(first)
    _stop(second)

    _produce(java, bootstrap, topic, 25)
    resumed = java.start("GroupConsumer", bootstrap, group, protocol, topic)
    _wait(lambda: len(_records(resumed)) >= PARTITIONS * 25, STEP_TIMEOUT,
          "the restarted consumer to read the 100 new records", resumed)
    got = _records(resumed)
    assert sorted((p, o) for p, o, _v in got) == \
        [(p, o) for p in range(PARTITIONS) for o in range(50, 75)], \
        "the restarted consumer did not resume exactly at the committed offsets"
    _stop(resumed)

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        committed = admin.list_group_offsets({group: None})[group]
    finally:
        admin.close()
    assert {tp.partition: om.offset for tp, om in committed.items()} == \
        {p: 75 for p in range(PARTITIONS)}


def _produce_values(bootstrap: str, topic: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, f"{topic}-{i}".encode())
    assert producer.flush(15) == 0


def test_java_subscription_pattern_is_resolved_by_the_coordinator(java, broker):
    """Java 4.x ``subscribe(SubscriptionPattern)``: the KIP-848 regex goes to the
    coordinator, which matches hub names (and later hubs) itself."""
    bootstrap = broker.bootstrap_servers
    for name in ("jrx-a", "jrx-b", "jrx-elsewhere-x"):
        broker.create_hub(name, partitions=2)
    consumer = java.start("GroupConsumer", bootstrap, "java-regex", "consumer",
                          "pattern:jrx-[a-z]")
    _wait(lambda: _assignment(consumer) == {0, 1}, STEP_TIMEOUT, "an assignment", consumer)
    for name in ("jrx-a", "jrx-b", "jrx-elsewhere-x"):
        _produce_values(bootstrap, name, 5)

    def topics_read() -> set[str]:
        return {value.rsplit(" ", 1)[1] for _p, _o, value in _records(consumer)}

    _wait(lambda: topics_read() == {"jrx-a", "jrx-b"} and len(_records(consumer)) >= 10,
          STEP_TIMEOUT, "the records of both matching hubs", consumer)
    broker.create_hub("jrx-c", partitions=1)
    _produce_values(bootstrap, "jrx-c", 3)
    _wait(lambda: "jrx-c" in topics_read(), STEP_TIMEOUT, "the hub created later", consumer)
    assert "jrx-elsewhere-x" not in topics_read()
    assert len(_records(consumer)) == 13
    _stop(consumer)
