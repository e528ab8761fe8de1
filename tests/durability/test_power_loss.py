"""Power loss: SIGKILL the broker, drop every write it did not fsync
(fsync_journal.power_loss), restart on the same directory, and check what
the durability mode promises (docs/durability.md):

* power-loss: no acknowledged record, group commit or committed transaction is
  lost, and no partition is stuck;
* crash: what survives of each partition is a prefix of what was
  acknowledged, and nothing is stuck: the transaction the power loss left open
  is aborted when its timeout passes (read_committed readers move on), and a
  group whose committed offset now points past the log end resets.

Real clients (confluent-kafka) against a real broker subprocess. Seeded:
KAFKA_WIRE_SEED=N replays a run; under ``make soak`` each mode runs more
cycles.
"""
from __future__ import annotations

import threading
import time
from collections import defaultdict

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.durability.fsync_journal import power_loss
from tests.faults.harness import commit_read, read_to_end, record_figures, run_seed, scaled

PLAIN, TXN = "plain", "txns"
PLAIN_PARTS, TXN_PARTS = 3, 2
TOPIC_CONFIGS = {"segment.bytes": "65536"}  # many rolls: zero-filled older segments are the case to recover
TXN_TIMEOUT_MS = 4000
MAX_TXN_TIMEOUT_MS = 8000  # what a transaction its coordinator forgot may hold a partition for
SEED = run_seed("power loss", 36)


class Workload:
    """A producer, a committing consumer group and a transactional producer, run
    until ``targets`` are reached (or 45 s; 150 under soak), all acknowledgements recorded; the
    transaction after the last one committed is left open."""

    def __init__(self, bootstrap: str, cycle: int) -> None:
        self.bootstrap = bootstrap
        self.cycle = cycle
        self.acked: dict[int, list[tuple[int, bytes]]] = defaultdict(list)  # partition -> [(offset, value)]
        self.commits: dict[int, int] = {}  # partition -> last acknowledged committed offset
        self.txns_committed: list[list[bytes]] = []
        self.txns_target = 0
        self.open_txn: list[bytes] = []  # produced (and flushed) in a transaction never ended
        self.stop = threading.Event()
        self.killing = threading.Event()  # set just before the SIGKILL: errors from then on are expected
        self.errors: list[str] = []
        self._lock = threading.Lock()

    def run(self, records: int, txns: int) -> None:
        self.txns_target = txns
        threads = [threading.Thread(target=f, daemon=True) for f in (self._produce, self._consume, self._transact)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + scaled(45, 150)
        while time.monotonic() < deadline:
            with self._lock:
                done = (sum(map(len, self.acked.values())) >= records and len(self.txns_committed) >= txns
                        and self.open_txn and len(self.commits) == PLAIN_PARTS)
            if done:
                break
            time.sleep(0.05)  # watching progress, bounded by the deadline

    def join(self) -> None:
        self.stop.set()

    def _produce(self) -> None:
        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 2,
                      "enable.idempotence": False, "message.send.max.retries": 0, "message.timeout.ms": 5000})

        def cb(err, msg):
            if err is None:
                with self._lock:
                    self.acked[msg.partition()].append((msg.offset(), msg.value()))
        i = 0
        while not self.stop.is_set():
            try:
                p.produce(PLAIN, b"p%d-%08d" % (self.cycle, i), partition=i % PLAIN_PARTS, on_delivery=cb)
                i += 1
            except BufferError:
                p.poll(0.01)
            p.poll(0.0005)  # about 2,000 records/s: the other clients' requests must not queue behind ours
            while len(p) > 100 and not self.stop.is_set():  # bounded in flight
                p.poll(0.005)
        p.poll(0.1)

    def _consume(self) -> None:
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "g1", "enable.auto.commit": False,
                      "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
        c.subscribe([PLAIN])
        while not self.stop.is_set():
            done = commit_read(c, PLAIN, c.consume(500, 0.2))
            if done is None:
                continue
            with self._lock:
                for tp in done:
                    if tp.error is None:
                        self.commits[tp.partition] = max(self.commits.get(tp.partition, 0), tp.offset)

    def _transact(self) -> None:
        p = Producer({"bootstrap.servers": self.bootstrap, "transactional.id": "tx-1",
                      "transaction.timeout.ms": TXN_TIMEOUT_MS})
        try:
            p.init_transactions(15)
            n = 0
            while not self.stop.is_set():
                p.begin_transaction()
                values = [b"t%d-%06d-%d" % (self.cycle, n, k) for k in range(4)]
                for k, v in enumerate(values):
                    p.produce(TXN, v, partition=k % TXN_PARTS)
                if len(self.txns_committed) >= self.txns_target:
                    p.flush(10)  # acknowledged records, but the transaction is left open
                    with self._lock:
                        self.open_txn = values
                    self.stop.wait(30)
                    return
                p.commit_transaction(15)
                with self._lock:
                    self.txns_committed.append(values)
                n += 1
        except KafkaException as exc:
            if not self.killing.is_set():
                self.errors.append(f"transactional producer: {exc}")


def _wait_visible(bootstrap: str, marker: bytes, deadline_s: float) -> dict[int, float]:
    """read_committed: seconds until ``marker`` (committed after the restart to every
    TXN partition) is seen in each; raises if a partition stays stuck."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"rc-{time.monotonic_ns()}",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.assign([TopicPartition(TXN, p, 0) for p in range(TXN_PARTS)])
    seen: dict[int, float] = {}
    start = time.monotonic()
    while len(seen) < TXN_PARTS and time.monotonic() - start < deadline_s:
        m = c.poll(0.5)
        if m is not None and not m.error() and m.value() == marker:
            seen[m.partition()] = time.monotonic() - start
    c.close()
    stuck = sorted(set(range(TXN_PARTS)) - set(seen))
    assert not stuck, f"read_committed stuck on {TXN} partitions {stuck} for {deadline_s} s"
    return seen


def _commit_marker_txn(bootstrap: str, marker: bytes) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx-after",
                  "transaction.timeout.ms": TXN_TIMEOUT_MS})
    p.init_transactions(20)
    p.begin_transaction()
    for part in range(TXN_PARTS):
        p.produce(TXN, marker, partition=part)
    p.commit_transaction(20)


def _group_resumes(bootstrap: str, cycle: int) -> None:
    """Group g1 consumes records produced after the restart on every partition, whatever
    its committed offsets now are: past the log end, the reset policy applies (or, as in
    Kafka, records appended since fill the gap and it reads on from its offset)."""
    p = Producer({"bootstrap.servers": bootstrap})
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g1", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([PLAIN])
    got: set[int] = set()
    deadline = time.monotonic() + 40
    next_send = 0.0
    n = 0
    tag = b"after-restart-%d-" % cycle
    while len(got) < PLAIN_PARTS and time.monotonic() < deadline:
        if time.monotonic() >= next_send:  # a few records a second keep coming, as in a live system
            for part in range(PLAIN_PARTS):
                p.produce(PLAIN, tag + b"%d" % n, partition=part)
            p.flush(10)
            n += 1
            next_send = time.monotonic() + 0.3
        m = c.poll(0.1)
        if m is not None and not m.error() and m.value().startswith(tag):
            got.add(m.partition())
    c.close()
    assert got == set(range(PLAIN_PARTS)), f"group g1 stuck on partitions {sorted(set(range(PLAIN_PARTS)) - got)}"


def _committed(bootstrap: str) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "g1", "enable.auto.commit": False})
    tps = c.committed([TopicPartition(PLAIN, p) for p in range(PLAIN_PARTS)], timeout=15)
    c.close()
    return {tp.partition: tp.offset for tp in tps}


@pytest.mark.parametrize("mode", ["power-loss", "crash"])
def test_power_loss_keeps_what_the_durability_mode_promises(journaled_broker, tmp_path, mode):
    cycles = scaled(1, 5)
    figures = defaultdict(int)
    for cycle in range(cycles):
        seed = SEED + cycle
        zero_tail = bool(seed % 2)
        print(f"cycle {cycle}: KAFKA_WIRE_SEED={seed} replays it (mode {mode})")
        extra = ["--durability", mode, "--transaction-max-timeout-ms", str(MAX_TXN_TIMEOUT_MS)]
        broker = journaled_broker(extra)
        if cycle == 0:
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            for f in admin.create_topics([NewTopic(PLAIN, PLAIN_PARTS, 1, config=TOPIC_CONFIGS),
                                          NewTopic(TXN, TXN_PARTS, 1, config=TOPIC_CONFIGS)]).values():
                f.result(15)
        work = Workload(broker.bootstrap_servers, cycle)
        work.run(records=scaled(3000, 20000), txns=scaled(15, 60))
        work.killing.set()
        broker.kill()  # SIGKILL while the producers still write
        work.join()
        dropped = power_loss(broker.data_dir, broker.journal_dir, seed=seed, zero_tail=zero_tail)
        assert not work.errors, work.errors
        assert work.txns_committed and work.open_txn, "the workload made too little progress"

        broker = journaled_broker(extra, port=broker.port)
        boot = broker.bootstrap_servers
        stored = read_to_end(boot, PLAIN, PLAIN_PARTS, group=f"verify-{time.monotonic_ns()}")
        lost_records = 0
        for part in range(PLAIN_PARTS):
            got = stored[part]
            values = [v for _, v in got]
            assert len(values) == len(set(values)), f"partition {part}: duplicates after recovery"
            offsets = [o for o, _ in got]
            assert offsets == sorted(offsets)
            where = dict((v, o) for o, v in got)
            acked = work.acked[part]
            lost = [(o, v) for o, v in acked if where.get(v) != o]
            lost_records += len(lost)
            if mode == "power-loss":
                assert not lost, f"partition {part}: {len(lost)} acknowledged records lost, first {lost[:3]}"
            else:  # survivors are a prefix of what was acknowledged
                kept = [(o, v) for o, v in acked if v in where]
                assert kept == acked[:len(kept)], f"partition {part}: the survivors are not a prefix"
                assert all(where[v] == o for o, v in kept)

        committed = _committed(boot)
        back = {p: work.commits[p] - committed.get(p, -1) for p in work.commits}
        if mode == "power-loss":
            assert all(b <= 0 for b in back.values()), f"group commits went back: {back}"

        # Every transaction: read_committed readers get past the one left open (aborted at its timeout).
        marker = b"after-%d" % seed
        _commit_marker_txn(boot, marker)
        waited = _wait_visible(boot, marker, deadline_s=MAX_TXN_TIMEOUT_MS / 1000 + 30)
        visible = {v for recs in read_to_end(boot, TXN, TXN_PARTS, committed=True, group=f"verify-{time.monotonic_ns()}").values() for _, v in recs}
        assert not visible & set(work.open_txn), "records of the transaction left open became visible"
        lost_txns = sum(1 for values in work.txns_committed if not set(values) <= visible)
        if mode == "power-loss":
            assert lost_txns == 0, f"{lost_txns} committed transactions lost"
        _group_resumes(boot, cycle)
        broker.kill()

        figures["records_acked"] += sum(map(len, work.acked.values()))
        figures["records_lost"] += lost_records
        figures["commits_back_max"] = max(figures["commits_back_max"], max(back.values(), default=0))
        figures["txns_committed"] += len(work.txns_committed)
        figures["txns_lost"] += lost_txns
        figures["partitions_stuck"] += 0  # asserted above: none
        figures["max_wait_for_lso_s"] = max(figures["max_wait_for_lso_s"], round(max(waited.values()), 1))
        for k, v in dropped.items():
            figures[f"files_{k}"] += v
    record_figures(f"power_loss_{mode}", dict(
        figures, cycles=cycles, seed=SEED,
        command="make test PYTEST_ARGS=tests/durability/test_power_loss.py"))
