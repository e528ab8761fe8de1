"""Consumer groups driven by confluent-kafka (librdkafka), classic protocol."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition


def _fill(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2})
    for part in range(partitions):
        for i in range(per_partition):
            p.produce(topic, b"%d-%d" % (part, i), partition=part)
    assert p.flush(30) == 0


def _consumer(bootstrap: str, group: str, **conf) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                     "heartbeat.interval.ms": 500, **conf})


def test_three_cooperative_sticky_consumers_split_six_partitions_without_duplicates(broker):
    broker.create_hub("six", partitions=6)
    _fill(broker.bootstrap_servers, "six", 6, 200)
    seen: list[tuple[int, int]] = []
    assigned: dict[int, set] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def run(idx: int) -> None:
        c = _consumer(broker.bootstrap_servers, "split", **{
            "partition.assignment.strategy": "cooperative-sticky", "enable.auto.commit": True,
            "auto.commit.interval.ms": 200})
        c.subscribe(["six"])
        try:
            while not stop.is_set():
                m = c.poll(0.2)
                with lock:
                    assigned[idx] = {tp.partition for tp in c.assignment()}
                if m is None or m.error():
                    continue
                with lock:
                    seen.append((m.partition(), m.offset()))
        finally:
            c.close()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(3)]
    for t in threads:
        t.start()
        time.sleep(0.3)  # staggered joins force incremental rebalances
    deadline = time.monotonic() + 60
    final = None
    while time.monotonic() < deadline:
        with lock:
            # The settled split, read at one instant (after stop, a consumer starved of
            # CPU past its session timeout could still report partitions it lost).
            if (len(seen) >= 1200 and len(assigned) == 3
                    and sorted(len(a) for a in assigned.values()) == [2, 2, 2]
                    and set().union(*assigned.values()) == set(range(6))):
                final = [set(assigned[i]) for i in range(3)]
                break
        time.sleep(0.2)
    stop.set()
    for t in threads:
        t.join(30)
    assert len(seen) == 1200, f"consumed {len(seen)} of 1200"
    assert len(set(seen)) == 1200, "a record was delivered twice within the group"
    assert final is not None, f"the group never settled on 2 partitions each: {assigned}"


_KILLED_CONSUMER = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "victim-group",
                  "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
                  "auto.offset.reset": "earliest"})
    c.subscribe(["victim"])
    while True:
        c.poll(0.2)
        if c.assignment():
            print("ASSIGNED", len(c.assignment()), flush=True)
""")


def test_killed_consumer_loses_its_partitions_after_session_timeout(broker):
    broker.create_hub("victim", partitions=4)
    child = subprocess.Popen([sys.executable, "-c", _KILLED_CONSUMER, broker.bootstrap_servers],
                             stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        assert line.startswith("ASSIGNED")
        survivor = _consumer(broker.bootstrap_servers, "victim-group")
        survivor.subscribe(["victim"])
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            survivor.poll(0.2)
        # Two members share the partitions while both are alive.
        assert len(survivor.assignment()) == 2
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        killed_at = time.monotonic()
        while len(survivor.assignment()) < 4 and time.monotonic() - killed_at < 30:
            survivor.poll(0.2)
        took = time.monotonic() - killed_at
        assert len(survivor.assignment()) == 4
        assert 4.0 < took < 20.0, f"partitions moved after {took:.1f}s, session timeout is 6s"
        survivor.close()
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(10)


def test_committed_offsets_survive_broker_restart(broker_factory):
    b = broker_factory()
    b.create_hub("resume", partitions=2)
    _fill(b.bootstrap_servers, "resume", 2, 100)
    c = _consumer(b.bootstrap_servers, "resumers", **{"enable.auto.commit": False})
    c.subscribe(["resume"])
    got = 0
    deadline = time.monotonic() + 30
    while got < 60 and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            got += 1
    c.commit(asynchronous=False)
    committed = {tp.partition: tp.offset for tp in
                 c.committed([TopicPartition("resume", 0), TopicPartition("resume", 1)], timeout=10)}
    c.close()
    assert sum(max(o, 0) for o in committed.values()) == 60  # -1001: nothing committed
    b.stop()

    b2 = broker_factory()
    c2 = _consumer(b2.bootstrap_servers, "resumers", **{"enable.auto.commit": False})
    after = {tp.partition: tp.offset for tp in
             c2.committed([TopicPartition("resume", 0), TopicPartition("resume", 1)], timeout=10)}
    assert after == committed
    c2.subscribe(["resume"])
    first: dict[int, int] = {}
    deadline = time.monotonic() + 30
    while len(first) < 2 and time.monotonic() < deadline:
        m = c2.poll(0.2)
        if m is not None and not m.error():
            first.setdefault(m.partition(), m.offset())
    c2.close()
    assert first == {p: max(o, 0) for p, o in committed.items() if o < 100}


def test_static_member_rejoins_without_rebalance(broker):
    broker.create_hub("static", partitions=2)
    conf = {"group.instance.id": "instance-a", "session.timeout.ms": 10000}
    a = _consumer(broker.bootstrap_servers, "statics", **conf)
    other = _consumer(broker.bootstrap_servers, "statics")
    rebalances: list[str] = []
    a.subscribe(["static"])
    other.subscribe(["static"], on_assign=lambda c, p: rebalances.append("assign"),
                    on_revoke=lambda c, p: rebalances.append("revoke"))
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not (a.assignment() and other.assignment()):
        a.poll(0.1)
        other.poll(0.1)
    before_a = {tp.partition for tp in a.assignment()}
    before_other = {tp.partition for tp in other.assignment()}
    assert before_a and before_other
    for _ in range(5):
        other.poll(0.1)
    seen_before = len(rebalances)
    # librdkafka's close() of a static member does not send LeaveGroup.
    a.close()
    a2 = _consumer(broker.bootstrap_servers, "statics", **conf)
    a2.subscribe(["static"])
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not a2.assignment():
        a2.poll(0.1)
        other.poll(0.1)
    assert {tp.partition for tp in a2.assignment()} == before_a
    for _ in range(20):
        other.poll(0.1)
        a2.poll(0.0)
    assert {tp.partition for tp in other.assignment()} == before_other
    assert rebalances[seen_before:] == [], "the other member went through a rebalance"
    a2.close()
    other.close()
