"""Crash loop: idempotent producers and a committing consumer group keep
working while the broker process is SIGKILLed and restarted at random moments.

Pins: every acknowledged record is in the log exactly once, in the order its
producer sent it, per partition; no record is written twice even when its
acknowledgement was lost to a kill (the idempotent producer retries with the
same sequence numbers and the recovered producer state must refuse the
duplicate); committed group offsets never move backwards across restarts.
10 cycles under ``make test``, 100 under ``make soak``.
"""
from __future__ import annotations

import random
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.faults.harness import (broker_process, commit_read, read_to_end, record_figures, run_seed, scaled,
                                  values)

TOPIC = "crashloop"
PARTITIONS = 3
PRODUCERS = 3
GROUP = "crash-group"


class _IdempotentWriter(threading.Thread):
    """One idempotent producer; records ``acked[partition]`` in ack order."""

    def __init__(self, n: int, bootstrap: str, stop: threading.Event, max_records: int) -> None:
        super().__init__(daemon=True, name=f"writer-{n}")
        self.n, self.bootstrap, self.stop, self.max_records = n, bootstrap, stop, max_records
        self.acked: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        self.failed = 0
        self.fatal: list[str] = []
        self.lock = threading.Lock()

    def run(self) -> None:
        def on_error(err):
            if err.fatal():
                self.fatal.append(str(err))

        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                      "enable.idempotence": True, "linger.ms": 5,
                      "message.timeout.ms": 120_000, "retry.backoff.ms": 50,
                      "retry.backoff.max.ms": 500, "reconnect.backoff.ms": 50,
                      "reconnect.backoff.max.ms": 500, "error_cb": on_error})

        def cb(err, msg):
            with self.lock:
                if err is None:
                    self.acked[msg.partition()].append(msg.value())
                else:
                    self.failed += 1
        i = 0
        while not self.stop.is_set() and i < self.max_records and not self.fatal:
            try:
                p.produce(TOPIC, b"w%d-%09d" % (self.n, i), partition=i % PARTITIONS,
                          on_delivery=cb)
                i += 1
            except BufferError:
                p.poll(0.05)
            p.poll(0.002)
        p.flush(150)
        self.sent = i


class _CommittingConsumer(threading.Thread):
    """A group member that commits synchronously after every message batch."""

    def __init__(self, bootstrap: str, stop: threading.Event) -> None:
        super().__init__(daemon=True, name="committer")
        self.bootstrap, self.stop = bootstrap, stop
        self.committed: dict[int, int] = {}   # highest offset the broker acknowledged
        self.commits = 0
        self.lock = threading.Lock()

    def run(self) -> None:
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": GROUP,
                      "enable.auto.commit": False, "auto.offset.reset": "earliest",
                      "session.timeout.ms": 6000, "reconnect.backoff.max.ms": 500})
        c.subscribe([TOPIC])
        while not self.stop.is_set():
            result = commit_read(c, TOPIC, c.consume(200, 0.2))
            if result is None:
                continue  # nothing read, or the broker died mid-commit: not acknowledged
            with self.lock:
                self.commits += 1
                for tp in result:
                    if tp.error is None and tp.offset >= 0:
                        self.committed[tp.partition] = max(self.committed.get(tp.partition, -1),
                                                           tp.offset)
        c.close()


def _committed_offsets(bootstrap: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    try:
        tps = c.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=15)
        return {tp.partition: max(tp.offset, -1) for tp in tps}  # -1001: none committed
    finally:
        c.close()


def test_acked_idempotent_records_exactly_once_in_order_and_offsets_monotonic_across_kill_9_loop(
        tmp_path):
    cycles = scaled(10, 100)
    seed = run_seed("crash loop", 110)
    rng = random.Random(seed)
    started = time.monotonic()

    proc = broker_process(tmp_path / "data")
    port = proc.port
    bootstrap = proc.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(15)
    del admin

    stop = threading.Event()
    writers = [_IdempotentWriter(n, bootstrap, stop, max_records=scaled(60_000, 2_000_000))
               for n in range(PRODUCERS)]
    committer = _CommittingConsumer(bootstrap, stop)
    for t in (*writers, committer):
        t.start()

    observed_committed: dict[int, int] = {}
    backwards: list[str] = []
    try:
        for cycle in range(cycles):
            time.sleep(rng.uniform(0.3, 3.0))
            proc.kill()
            time.sleep(rng.uniform(0.0, 0.5))
            with committer.lock:
                acked_commits = dict(committer.committed)
            proc = broker_process(tmp_path / "data", port=port)
            now = _committed_offsets(bootstrap)
            for p, off in now.items():
                floor = max(observed_committed.get(p, -1), acked_commits.get(p, -1))
                if off < floor:
                    backwards.append(f"cycle {cycle}: partition {p} committed {off} < {floor}")
                observed_committed[p] = max(observed_committed.get(p, -1), off)
            fatal = [f for w in writers for f in w.fatal]
            assert not fatal, f"idempotent producer hit fatal errors after cycle {cycle}: {fatal}"
        # Let the writers' retries drain against a live broker.
        time.sleep(2)
    finally:
        stop.set()
        for t in (*writers, committer):
            t.join(180)

    try:
        stored = values(read_to_end(bootstrap, TOPIC, PARTITIONS, timeout=60, group="crash-verify"))
        final_committed = _committed_offsets(bootstrap)
    finally:
        proc.kill()

    acked_total = 0
    for part in range(PARTITIONS):
        got = stored[part]
        dupes = len(got) - len(set(got))
        assert dupes == 0, f"partition {part}: {dupes} records written twice (seed {seed})"
        positions = {v: i for i, v in enumerate(got)}
        for w in writers:
            acked = w.acked[part]
            acked_total += len(acked)
            missing = [v for v in acked if v not in positions]
            assert not missing, (f"partition {part}: {len(missing)} acknowledged records of "
                                 f"writer {w.n} lost, first {missing[:3]} (seed {seed})")
            idx = [positions[v] for v in acked]
            assert idx == sorted(idx), f"partition {part}: writer {w.n} out of order (seed {seed})"
            # A writer's records (acked or not) are in send order too.
            mine = [v for v in got if v.startswith(b"w%d-" % w.n)]
            assert mine == sorted(mine), f"partition {part}: writer {w.n} reordered (seed {seed})"
    for p, off in final_committed.items():
        if off < observed_committed.get(p, -1):
            backwards.append(f"final: partition {p} committed {off} < {observed_committed[p]}")
    assert not backwards, f"committed offsets moved backwards (seed {seed}): {backwards}"
    assert committer.commits > 0
    assert acked_total > cycles * 100, "producers made too little progress"
    record_figures("crash_loop", {
        "seed": seed, "cycles": cycles, "producers": PRODUCERS, "partitions": PARTITIONS,
        "records_acked": acked_total, "records_stored": sum(map(len, stored.values())),
        "records_failed_delivery": sum(w.failed for w in writers),
        "group_commits": committer.commits, "duration_s": round(time.monotonic() - started, 1),
        "command": "make test PYTEST_ARGS='tests/faults/test_crash_loop.py'",
    })
