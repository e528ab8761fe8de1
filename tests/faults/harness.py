"""Shared pieces of the reliability suite: soak scaling, figures written to
``test-artifacts/reliability.json``, broker-process memory readings, a
producer/consumer pair that must keep working while a test misbehaves, and the
broker and requests of the fault and replica control API tests.

``make test`` runs the bounded counts; ``make soak`` sets KAFKA_WIRE_SOAK=1
and every test scales up to the counts in the issue.
"""
from __future__ import annotations

import json
import os
import random
import threading
import time
from pathlib import Path

import requests
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kafka_wire.testing import EmulatedBroker

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
SOAK = os.environ.get("KAFKA_WIRE_SOAK", "") not in ("", "0")


def scaled(normal, soak):
    """The count for this run: ``soak`` under ``make soak``."""
    return soak if SOAK else normal


def run_seed(name: str, default: int) -> int:
    """The seed of a test's randomness: $KAFKA_WIRE_SEED if set, else ``default`` under
    ``make test`` (the same run every time, so CI cannot fail by chance) and a fresh one
    under ``make soak`` (to explore). Printed, so a failure can be replayed."""
    given = os.environ.get("KAFKA_WIRE_SEED", "")
    seed = int(given) if given else (random.SystemRandom().randrange(1, 1 << 30) if SOAK else default)
    print(f"{name} seed={seed} (rerun with KAFKA_WIRE_SEED={seed})")
    return seed


def record_figures(name: str, figures: dict) -> None:
    """Merge one test's figures into test-artifacts/reliability.json (and print them)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / ("reliability-soak.json" if SOAK else "reliability.json")
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    if SOAK and "command" in figures:
        figures["command"] = figures["command"].replace("make test", "make soak")
    figures = dict(figures, recorded_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   soak=SOAK)
    data[name] = figures
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    print(f"\n[{name}] {json.dumps(figures, sort_keys=True)}")


def proc_memory_kib(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM (peak RSS), RssAnon (heap) and RssFile (mapped files) of a process, in KiB."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(rest.split()[0])
    return out


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


class Traffic:
    """A producer and a consumer (own threads) that must keep working throughout.

    ``errors`` collects delivery and consume errors; ``check()`` verifies that
    every acknowledged record was consumed.
    """

    def __init__(self, bootstrap: str, topic: str, rate_per_s: int = 200) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.interval = 1.0 / rate_per_s
        self.stop = threading.Event()
        self._producer_done = threading.Event()
        self.acked: set[bytes] = set()
        self.consumed: set[bytes] = set()
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._produce, daemon=True),
                         threading.Thread(target=self._consume, daemon=True)]

    def _produce(self) -> None:
        p = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 1,
                      "message.timeout.ms": 20000})

        def cb(err, msg):
            with self._lock:
                if err is not None:
                    self.errors.append(f"produce: {err}")
                else:
                    self.acked.add(msg.value())
        i = 0
        while not self.stop.is_set():
            p.produce(self.topic, b"steady-%08d" % i, on_delivery=cb)
            i += 1
            p.poll(self.interval)
        p.flush(20)
        self._producer_done.set()

    def _consume(self) -> None:
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": f"steady-{id(self)}",
                      "auto.offset.reset": "earliest", "enable.auto.commit": False,
                      "check.crcs": True})
        c.assign([TopicPartition(self.topic, 0, 0)])
        # Keep reading a little after stop so the last acknowledged records arrive.
        linger_until = None
        while True:
            if self._producer_done.is_set():
                if linger_until is None:
                    linger_until = time.monotonic() + 20
                with self._lock:
                    done = self.acked <= self.consumed
                if done or time.monotonic() > linger_until:
                    break
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                if m.error().code() != KafkaError._PARTITION_EOF:
                    with self._lock:
                        self.errors.append(f"consume: {m.error()}")
                continue
            with self._lock:
                self.consumed.add(m.value())
        c.close()

    def __enter__(self) -> "Traffic":
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for t in self._threads:
            t.join(60)

    def missing(self) -> set[bytes]:
        with self._lock:
            return self.acked - self.consumed


_LIVE: list = []   # every broker process started here; killed after each test (conftest)


def broker_process(data_dir: Path, port: int = 0, extra: list[str] | None = None,
                   log_path: Path | None = None):
    """``kafka-wire serve`` as a child process on 127.0.0.1 (ephemeral port
    unless given), without the HTTP console (its default port is fixed).
    Killed by PID after the test even if the test fails before its own cleanup."""
    from tests.conftest import BrokerProcess
    proc = BrokerProcess(data_dir, port, ["--no-http", *(extra or [])])
    if log_path is not None:
        proc.log_path = log_path
    _LIVE.append(proc)
    return proc.start()


def kill_live_brokers() -> None:
    while _LIVE:
        _LIVE.pop().kill()


def read_to_end(bootstrap: str, topic: str, parts: int, *, committed: bool = False,
                timeout: float = 30, group: str = "verify") -> dict[int, list[tuple[int, bytes]]]:
    """Every record of ``topic`` as (offset, value), from the beginning to the end of
    each partition (the LSO when ``committed``); fails if an end is not reached."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.partition.eof": True,
                  "check.crcs": True, "enable.auto.commit": False,
                  "isolation.level": "read_committed" if committed else "read_uncommitted"})
    c.assign([TopicPartition(topic, p, 0) for p in range(parts)])
    out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(parts)}
    eof: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while len(eof) < parts and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                if m.error():
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        eof.add(m.partition())
                    continue
                eof.discard(m.partition())
                out[m.partition()].append((m.offset(), m.value()))
    finally:
        c.close()
    assert len(eof) == parts, f"{topic}: did not reach the end of every partition in {timeout} s"
    return out


def values(records: dict[int, list[tuple[int, bytes]]]) -> dict[int, list[bytes]]:
    """``read_to_end``'s records without their offsets."""
    return {p: [v for _, v in recs] for p, recs in records.items()}


def commit_read(consumer, topic: str, msgs) -> list | None:
    """Commit, synchronously, the position after the last record ``msgs`` holds per
    partition: the committed TopicPartitions, or None when nothing was read or the
    broker did not answer (a broker killed mid-commit has acknowledged nothing)."""
    last: dict[int, int] = {}
    for m in msgs:
        if not m.error():
            last[m.partition()] = m.offset() + 1
    if not last:
        return None
    try:
        return consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in last.items()],
                               asynchronous=False) or []
    except Exception:
        return None



class AckedWriter:
    """A producer thread writing ``rec-N`` round-robin to ``partitions`` of ``topic`` until
    stopped (bounded: 2,000,000 records), with no retries: a record whose acknowledgement
    was lost must not be written twice. ``acked[p]`` gets each value the broker
    acknowledged on partition p, in order (a dict given in keeps what it held)."""

    def __init__(self, bootstrap: str, topic: str, partitions: list[int],
                 acked: dict[int, list[bytes]] | None = None) -> None:
        self.topic, self.partitions = topic, list(partitions)
        self.acked = acked if acked is not None else {p: [] for p in self.partitions}
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
                                   "message.send.max.retries": 0, "enable.idempotence": False,
                                   "message.timeout.ms": 5000})
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        def cb(err, msg):
            if err is None:
                with self.lock:
                    self.acked[msg.partition()].append(msg.value())
        i = 0
        while not self._stop.is_set() and i < 2_000_000:
            try:
                self._producer.produce(self.topic, b"rec-%08d" % i,
                                       partition=self.partitions[i % len(self.partitions)], on_delivery=cb)
                i += 1
            except BufferError:
                self._producer.poll(0.01)
            self._producer.poll(0)
        self._producer.flush(10)

    def written(self) -> int:
        """Acknowledged values on the partitions it writes (those given in included)."""
        with self.lock:
            return sum(len(self.acked[p]) for p in self.partitions)

    def wait_for(self, count: int, timeout: float) -> None:
        """Until ``written()`` reaches count or timeout s pass (the caller checks which)."""
        deadline = time.monotonic() + timeout
        while self.written() < count and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def contoso_broker(directory: Path) -> EmulatedBroker:
    """Namespace contoso (tests/eventhubs/data/multi.toml: SAS policies, hubs orders and
    payments) over Kafka, AMQP and HTTP, data under ``directory``: the broker the fault
    tests set faults on. Unstarted; use it with ``with``."""
    from tests.amqp.conftest import MULTI_TOML
    return EmulatedBroker(directory / "data", config_file=MULTI_TOML, amqp=True, http=True)


def control_api(default_path: str):
    """A requester for one of the broker's HTTP control APIs (``/$faults``, ``/$replicas``):
    ``control(broker, method, path, body, auth=..., raw=...)``. auth "sub" sends the
    subscription's bearer token, None no Authorization header, any other string as it is;
    raw bytes go as the body instead of ``body`` as JSON."""
    def control(broker, method: str, path: str = default_path, body=None, *, auth: str | None = "sub",
                raw: bytes | None = None) -> requests.Response:
        headers = {}
        if auth == "sub":
            headers["Authorization"] = f"Bearer {broker.subscription_token}"
        elif auth is not None:
            headers["Authorization"] = auth
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        return requests.request(method, f"{broker.http_url}{path}", data=data, headers=headers, timeout=30)
    return control


def arm_error(resp: requests.Response, status: int) -> str:
    """The message of an ARM-style error answer (``{"error": {"code", "message"}}`` and
    nothing else) of this status."""
    assert resp.status_code == status, (resp.status_code, resp.text)
    body = resp.json()
    assert set(body) == {"error"} and body["error"]["code"] and body["error"]["message"]
    return body["error"]["message"]
