"""Chaos soak: `kafka-wire serve --chaos SEED` (a broker process of its own, ephemeral
ports) under a confluent-kafka idempotent producer, a Kafka consumer group of two
members, an azure-eventhub producer and EventHubConsumerClient, and (when node and
@azure/event-hubs are there) the JavaScript SDK's producer and consumer, all on one
hub at once. The history checker (kafka_wire/testing/history.py) then holds every
acknowledged event to "read exactly once per consumer group, in order per partition".

Counts (acknowledged, read, lost, duplicated, faults fired by kind) go to
test-artifacts/chaos-soak.json and are printed. `make test` runs a short soak (about half a
minute); `make soak` (KAFKA_WIRE_SOAK=1) a long one (minutes, bounded). The seed is
$KAFKA_WIRE_SEED, else 28.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_wire.eventhubs import connection_string
from kafka_wire.testing.history import History
from tests.conftest import JS, BrokerProcess

ROOT = Path(__file__).resolve().parents[2]
ARTIFACT = ROOT / "test-artifacts" / "chaos-soak.json"
SOAK = os.environ.get("KAFKA_WIRE_SOAK", "") not in ("", "0")
SEED = int(os.environ.get("KAFKA_WIRE_SEED", "28"))
HUB = "chaos"
PARTITIONS = 3
# (Kafka events, Python SDK events, JS SDK events, seconds the producers may take)
SIZE = (20_000, 6_000, 3_000, 420) if SOAK else (2_000, 600, 400, 30)
DRAIN_S = 90 if SOAK else 45   # after the producers: for the consumers to read everything


def _start_broker(tmp_path: Path) -> tuple[BrokerProcess, int, int]:
    proc = BrokerProcess(tmp_path / "data", 0, ["--chaos", str(SEED), "--amqp-listen", "127.0.0.1:0",
                                                "--http-listen", "127.0.0.1:0",
                                                "--num-partitions", str(PARTITIONS)])
    proc.start()
    deadline = time.monotonic() + 20
    amqp = http = None
    while time.monotonic() < deadline and (amqp is None or http is None):
        text = proc.output()
        m = re.search(r"AMQP listener on 127\.0\.0\.1:(\d+)", text)
        amqp = int(m.group(1)) if m else None
        m = re.search(r"console and metrics on http://127\.0\.0\.1:(\d+)/", text)
        http = int(m.group(1)) if m else None
        time.sleep(0.05)
    assert amqp and http, proc.output()
    assert f"chaos mode, seed {SEED}" in proc.output()
    return proc, amqp, http


def _faults_fired(http: int) -> dict[str, int]:
    text = urllib.request.urlopen(f"http://127.0.0.1:{http}/metrics", timeout=10).read().decode()
    fired: dict[str, int] = {}
    for m in re.finditer(r'^kafkawire_faults_fired_total\{kind="([^"]+)",namespace="[^"]*"\} (\d+)',
                         text, re.M):
        fired[m.group(1)] = fired.get(m.group(1), 0) + int(m.group(2))
    return fired


class Soak:
    def __init__(self, bootstrap: str, cs: str) -> None:
        self.bootstrap, self.cs = bootstrap, cs
        self.history = History()
        self.stop_reading = threading.Event()
        self.errors: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def note(self, who: str, what) -> None:
        with self._lock:
            self.errors.setdefault(who, [])
            if len(self.errors[who]) < 50:
                self.errors[who].append(str(what)[:300])

    # -- Kafka -------------------------------------------------------------------------
    def kafka_producer(self, count: int, until: float) -> None:
        h = self.history
        p = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True,
                      "acks": "all", "linger.ms": 5, "message.timeout.ms": 120_000,
                      "client.id": "soak-kafka-producer"})

        def delivered(err, msg):
            if err is not None:
                self.note("kafka-producer", err)
            else:
                h.acked(msg.value().decode(), HUB, msg.partition(), msg.offset())
        started = time.monotonic()
        interval = 0.75 * (until - started) / count  # spread over three quarters of the time
        for i in range(count):
            if time.monotonic() > until:
                break
            payload = f"k-{i:06d}"
            h.sent("kafka", payload)
            p.produce(HUB, payload.encode(), partition=i % PARTITIONS, on_delivery=delivered)
            p.poll(0)
            due = started + (i + 1) * interval
            while time.monotonic() < due:  # pacing: serves delivery reports meanwhile
                p.poll(max(due - time.monotonic(), 0))
        left = p.flush(120)
        if left:
            self.note("kafka-producer", f"{left} not delivered after flush")

    def kafka_member(self, name: str) -> None:
        c = Consumer({"bootstrap.servers": self.bootstrap, "group.id": "soak-kafka",
                      "client.id": name, "auto.offset.reset": "earliest",
                      "enable.auto.commit": True, "auto.commit.interval.ms": 500,
                      "session.timeout.ms": 10_000, "heartbeat.interval.ms": 1_000})
        c.subscribe([HUB])
        try:
            while not self.stop_reading.is_set():
                m = c.poll(0.2)
                if m is None:
                    continue
                if m.error():
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        self.note(name, m.error())
                    continue
                self.history.read("kafka-group", HUB, m.partition(), m.offset(),
                                  m.value().decode())
        finally:
            c.close()

    # -- azure-eventhub (Python) -------------------------------------------------------
    def sdk_producer(self, count: int, until: float) -> None:
        h = self.history
        producer = EventHubProducerClient.from_connection_string(self.cs, eventhub_name=HUB,
                                                                 retry_total=3)
        pace = _pace(count, until)
        with producer:
            for i in range(0, count, 5):
                pace.wait()
                ids = [f"p-{j:06d}" for j in range(i, min(i + 5, count))]
                partition = (i // 5) % PARTITIONS
                for _attempt in range(30):
                    if time.monotonic() > until:
                        return
                    for payload in ids:
                        h.sent("python", payload)
                    try:
                        batch = producer.create_batch(partition_id=str(partition))
                        for payload in ids:
                            batch.add(EventData(payload))
                        producer.send_batch(batch)
                    except Exception as exc:  # server-busy is not retried by the SDK: send again
                        self.note("python-producer", f"{type(exc).__name__}: {exc}")
                        time.sleep(0.2)  # back off before sending again (not for ordering)
                        continue
                    for payload in ids:
                        h.acked(payload, HUB, partition)
                    break

    def sdk_consumer(self) -> None:
        client = EventHubConsumerClient.from_connection_string(
            self.cs, consumer_group="$Default", eventhub_name=HUB, retry_total=10)

        def on_event(context, event):
            if event is not None:
                self.history.read("python-sdk", HUB, int(context.partition_id),
                                  event.sequence_number, event.body_as_str())

        def on_error(context, error):
            self.note("python-consumer", f"{type(error).__name__}: {error}")

        closer = threading.Thread(target=lambda: (self.stop_reading.wait(), client.close()),
                                  daemon=True)
        closer.start()
        client.receive(on_event=on_event, on_error=on_error, starting_position="-1",
                       max_wait_time=1)

    # -- @azure/event-hubs (JavaScript) ------------------------------------------------
    def js_client(self, node: str, count: int, seconds: int) -> None:
        proc = subprocess.Popen([node, str(Path(__file__).with_name("chaos_js.js")), self.cs, HUB,
                                 str(PARTITIONS), str(count), str(seconds)], cwd=JS,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                env={**os.environ, "NODE_PATH": str(JS / "node_modules")})
        self.js_proc = proc
        threading.Thread(target=lambda: (self.stop_reading.wait(), proc.stdin.close()),
                         daemon=True).start()
        h = self.history
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                self.note("js", f"not JSON: {line[:200]}")
                continue
            if "sent" in msg:
                for payload in msg["sent"]:
                    h.sent("js", payload)
            elif "acked" in msg:
                for payload in msg["acked"]:
                    h.acked(payload, HUB, msg["partition"])
            elif "read" in msg:
                for partition, seq, body in msg["read"]:
                    h.read("js-sdk", HUB, partition, seq, body)
            elif "failed" in msg or "error" in msg:
                self.note("js", msg.get("error"))
            elif "producer" in msg:
                self.js_producer_done = True
        if proc.wait(30) != 0:
            self.note("js", f"node exited with {proc.returncode}")
        self.js_producer_done = True  # or it never will be


class _pace:
    """Spread batches of 5 over three quarters of the time left (a soak, not a burst)."""

    def __init__(self, count: int, until: float) -> None:
        self.interval = 0.75 * (until - time.monotonic()) / max(count / 5, 1)
        self.next = time.monotonic()

    def wait(self) -> None:
        self.next += self.interval
        left = self.next - time.monotonic()
        if left > 0:
            threading.Event().wait(left)


def _node() -> str | None:
    node = shutil.which("node")
    if node is None or not (JS / "node_modules" / "@azure" / "event-hubs" / "package.json").is_file():
        print("\nchaos soak: JavaScript SDK part SKIPPED (needs `node` and @azure/event-hubs in "
              "tests/js: `npm install --prefix tests/js`)")
        return None
    return node


def test_chaos_soak_every_acknowledged_event_read_once_per_group_in_order(tmp_path):
    kafka_n, python_n, js_n, produce_s = SIZE
    started = time.monotonic()
    proc, amqp, http = _start_broker(tmp_path)
    try:
        admin = AdminClient({"bootstrap.servers": proc.bootstrap_servers})
        for future in admin.create_topics([NewTopic(HUB, PARTITIONS, 1)]).values():
            future.result(30)
        del admin  # its connections would log refusals once the broker is gone
        cs = connection_string.build(f"127.0.0.1:{amqp}", key_name="RootManageSharedAccessKey",
                                     key="SAS_KEY_VALUE", emulator=True)
        soak = Soak(proc.bootstrap_servers, cs)
        until = time.monotonic() + produce_s
        readers = [threading.Thread(target=soak.kafka_member, args=(f"soak-member-{i}",), daemon=True)
                   for i in (1, 2)] + [threading.Thread(target=soak.sdk_consumer, daemon=True)]
        producers = [threading.Thread(target=soak.kafka_producer, args=(kafka_n, until), daemon=True),
                     threading.Thread(target=soak.sdk_producer, args=(python_n, until), daemon=True)]
        node = _node()
        groups = ["kafka-group", "python-sdk"]
        js = None
        if node is not None:
            js = threading.Thread(target=soak.js_client, args=(node, js_n, produce_s), daemon=True)
            groups.append("js-sdk")
        for t in readers + producers + ([js] if js else []):
            t.start()
        for t in producers:
            t.join(produce_s + 180)
        # The JS producer is done when it says so; then every group reads what was acknowledged.
        deadline = time.monotonic() + produce_s + 60
        while js is not None and not getattr(soak, "js_producer_done", False) \
                and time.monotonic() < deadline:
            time.sleep(0.2)
        acked = soak.history.acknowledged_ids()
        deadline = time.monotonic() + DRAIN_S
        while time.monotonic() < deadline:
            if all(acked <= soak.history.read_ids(g) for g in groups):
                break
            time.sleep(0.25)
        time.sleep(1.0)  # a last redelivery or double would show up here: count it too
        soak.stop_reading.set()
        for t in readers + ([js] if js else []):
            t.join(60)
        fired = _faults_fired(http)
    finally:
        proc.kill()
    verdict = soak.history.check()
    counts = verdict.counts()
    figures = {"seed": SEED, "soak": SOAK, "seconds": round(time.monotonic() - started, 1),
               "groups": groups, **counts,
               "duplicated": {"stored_twice": counts["stored_twice"],
                              "resent_copies": counts["resent_copies"],
                              "redelivered": counts["redelivered"]},
               "faults_fired": fired, "faults_fired_total": sum(fired.values()),
               "client_errors": {k: len(v) for k, v in soak.errors.items()},
               "client_error_examples": {k: v[:3] for k, v in soak.errors.items()},
               "command": ("KAFKA_WIRE_SOAK=1 " if SOAK else "")
               + f"KAFKA_WIRE_SEED={SEED} .venv/bin/python -m pytest -q -p no:cacheprovider "
               "tests/soak/test_chaos_soak.py"}
    ARTIFACT.parent.mkdir(exist_ok=True)
    ARTIFACT.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    print(f"\n[chaos-soak] {json.dumps(figures, sort_keys=True)}")
    # Producers are bounded by time too: on a loaded machine they may not send everything,
    # but each must get most of its events acknowledged through the faults.
    wanted = {"kafka": kafka_n, "python": python_n, **({"js": js_n} if js else {})}
    for producer, n in wanted.items():
        assert verdict.acknowledged_by.get(producer, 0) >= n // 2, (producer, verdict.explain(),
                                                                     soak.errors)
    assert all(verdict.read.get(g) for g in groups), verdict.read
    assert verdict.ok, (verdict.explain(), soak.errors)
    assert sum(fired.values()) > 0, "chaos mode fired no fault"
