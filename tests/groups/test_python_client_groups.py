"""kafka-python and aiokafka consumer groups (classic protocol): two consumers
split the partitions, commit, and a consumer started after they stop
resumes from the committed offsets."""
from __future__ import annotations

import asyncio
import threading
import time

import pytest
from confluent_kafka import Producer

PARTITIONS = 4
WAIT = 45


class Member:
    """One group consumer on its own thread; records what it owns and reads."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str) -> None:
        self.client, self.bootstrap, self.group, self.topic = client, bootstrap, group, topic
        self.lock = threading.Lock()
        self.assignment: set[int] | None = None
        self.records: list[tuple[int, int]] = []
        self.commits = 0
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _seen(self, assignment, records) -> None:
        with self.lock:
            self.assignment = {tp.partition for tp in assignment}
            self.records.extend(records)

    def _run(self) -> None:
        try:
            if self.client == "kafka-python":
                self._kafka_python()
            else:
                asyncio.run(self._aiokafka())
        except BaseException as exc:  # reported by the test
            self.error = exc

    def _kafka_python(self) -> None:
        from kafka import KafkaConsumer

        c = KafkaConsumer(self.topic, bootstrap_servers=self.bootstrap, group_id=self.group,
                          auto_offset_reset="earliest", enable_auto_commit=False,
                          session_timeout_ms=6000, heartbeat_interval_ms=300,
                          client_id=f"kafka-python-{id(self)}")
        try:
            while not self.stop.is_set():
                batch = c.poll(timeout_ms=200)
                got = [(r.partition, r.offset) for rs in batch.values() for r in rs]
                self._seen(c.assignment(), got)
                if got:
                    c.commit()
                    self.commits += 1
        finally:
            c.close()

    async def _aiokafka(self) -> None:
        from aiokafka import AIOKafkaConsumer

        c = AIOKafkaConsumer(self.topic, bootstrap_servers=self.bootstrap, group_id=self.group,
                             auto_offset_reset="earliest", enable_auto_commit=False,
                             session_timeout_ms=6000, heartbeat_interval_ms=300,
                             client_id=f"aiokafka-{id(self)}")
        await c.start()
        try:
            while not self.stop.is_set():
                batch = await c.getmany(timeout_ms=200)
                got = [(r.partition, r.offset) for rs in batch.values() for r in rs]
                self._seen(c.assignment(), got)
                if got:
                    await c.commit()
                    self.commits += 1
        finally:
            await c.stop()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)
        assert not self.thread.is_alive(), f"{self.client} consumer did not stop"
        if self.error is not None:
            raise self.error

    def snapshot(self) -> tuple[set[int] | None, list[tuple[int, int]]]:
        with self.lock:
            return self.assignment, list(self.records)


def _wait(condition, what: str, members) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        for m in members:
            if m.error is not None:
                raise m.error
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {WAIT}s waiting for {what}: "
                         f"{[m.snapshot()[0] for m in members]}")


def _produce(bootstrap: str, topic: str, per_partition: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    for part in range(PARTITIONS):
        for i in range(per_partition):
            p.produce(topic, b"%d" % i, partition=part)
    assert p.flush(30) == 0


@pytest.mark.parametrize("client", ["kafka-python", "aiokafka"])
def test_two_consumers_split_partitions_commit_and_a_new_consumer_resumes(broker, client):
    bootstrap, topic, group = broker.bootstrap_servers, f"split-{client}", f"group-{client}"
    broker.create_hub(topic, partitions=PARTITIONS)
    first = Member(client, bootstrap, group, topic)
    members = [first]
    try:
        _wait(lambda: first.snapshot()[0] == set(range(PARTITIONS)), "the first to own all",
              members)
        second = Member(client, bootstrap, group, topic)
        members.append(second)

        def split() -> bool:
            a, b = first.snapshot()[0], second.snapshot()[0]
            return a is not None and b is not None and len(a) == len(b) == 2 and \
                a | b == set(range(PARTITIONS))

        _wait(split, "two consumers with two partitions each", members)
        owned = {id(m): m.snapshot()[0] for m in members}
        _produce(bootstrap, topic, 20)
        _wait(lambda: sum(len(m.snapshot()[1]) for m in members) >= PARTITIONS * 20,
              "80 records read", members)
        for m in members:
            _, got = m.snapshot()
            assert got and {p for p, _o in got} <= owned[id(m)]
        both = first.snapshot()[1] + second.snapshot()[1]
        assert sorted(both) == [(p, o) for p in range(PARTITIONS) for o in range(20)]
    finally:
        for m in members:
            m.close()
    assert all(m.commits > 0 for m in members)

    _produce(bootstrap, topic, 10)
    resumed = Member(client, bootstrap, group, topic)
    try:
        _wait(lambda: len(resumed.snapshot()[1]) >= PARTITIONS * 10, "40 new records",
              [resumed])
        time.sleep(0.3)  # anything re-delivered would show up now
        assert sorted(resumed.snapshot()[1]) == \
            [(p, o) for p in range(PARTITIONS) for o in range(20, 30)]
    finally:
        resumed.close()
