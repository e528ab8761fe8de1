"""Failing over while a confluent-kafka producer (idempotent) sends without pause and
a consumer group reads (docs/georeplication.md, "Promotion").

Each test counts what was acknowledged, what the new primary holds (read back from
the start), what was lost and what was duplicated, and measures the time from the
promote request to the producer's first acknowledged send from the new primary;
the figures go to test-artifacts/geo-failover.json and are printed.

- planned: nothing acknowledged is lost, nothing is doubled;
- forced (the secondary paused for a while first): only events the secondary had not
  received are lost, every one of them at an offset at or past the secondary's
  end before the promotion; afterwards the group resumes from its replicated
  checkpoint on the new primary, and a consumer positioned past the new end finds
  the log truncated (its reset policy applies).
"""
from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.eventhubs.conftest import confluent_conf
from tests.geo.conftest import geo, geo_broker

ARTIFACT = Path(__file__).resolve().parents[2] / "test-artifacts" / "geo-failover.json"
MAX_EVENTS = 40_000          # a bound on every sender, whatever happens
RUN_LIMIT_S = 60.0


class Sender(threading.Thread):
    """An idempotent producer sending event-<i> round robin over both partitions until
    stopped; records each acknowledgement (partition, offset, monotonic time)."""

    def __init__(self, conf: dict) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({**conf, "enable.idempotence": True, "linger.ms": 2,
                                  "message.timeout.ms": 60000})
        self.stop = threading.Event()
        self.acked: dict[int, tuple[int, int, float]] = {}
        self.failed: dict[int, str] = {}
        self.sent = 0
        self.lock = threading.Lock()

    def _report(self, i: int):
        def report(err, msg):
            now = time.monotonic()
            with self.lock:
                if err is None:
                    self.acked[i] = (msg.partition(), msg.offset(), now)
                else:
                    self.failed[i] = err.str()
        return report

    def run(self) -> None:
        deadline = time.monotonic() + RUN_LIMIT_S
        while not self.stop.is_set() and self.sent < MAX_EVENTS and time.monotonic() < deadline:
            i = self.sent
            try:
                self.producer.produce("orders", f"event-{i}".encode(), partition=i % 2,
                                      on_delivery=self._report(i))
                self.sent += 1
            except BufferError:
                pass
            self.producer.poll(0.001)  # paces the sender (~1000 events/s) and serves callbacks
        self.producer.flush(60)

    def acks(self) -> int:
        with self.lock:
            return len(self.acked)

    def wait_acks(self, n: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.acks() < n:
            assert time.monotonic() < deadline, f"only {self.acks()} of {n} events acknowledged"
            assert self.is_alive(), "the sender stopped"
            time.sleep(0.01)


def read_all(b) -> list[tuple[int, int, bytes]]:
    """Everything the primary holds now, from offset 0 (a consumer without a group)."""
    c = Consumer(confluent_conf(b.bootstrap_servers, b.connection_string(),
                                **{"group.id": "verify", "enable.auto.commit": False}))
    highs = {p: c.get_watermark_offsets(TopicPartition("orders", p), timeout=10)[1] for p in (0, 1)}
    c.assign([TopicPartition("orders", p, 0) for p in (0, 1)])
    out, deadline = [], time.monotonic() + 60
    done = {p: highs[p] == 0 for p in (0, 1)}
    while not all(done.values()) and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        out.append((m.partition(), m.offset(), m.value()))
        if m.offset() + 1 >= highs[m.partition()]:
            done[m.partition()] = True
    c.close()
    assert all(done.values()), f"read {len(out)} events, not up to {highs}"
    return out


def record(kind: str, figures: dict) -> None:
    ARTIFACT.parent.mkdir(exist_ok=True)
    try:
        doc = json.loads(ARTIFACT.read_text())
    except (OSError, ValueError):
        doc = {}
    doc[kind] = figures
    ARTIFACT.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"\ngeo failover ({kind}): {json.dumps(figures)}")


def resume_ms(sender: Sender, requested: float, done: float) -> float:
    """From the promote request to the first acknowledgement after the switch (the
    switch closes every connection: later acknowledgements come from the new primary)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with sender.lock:
            after = [t for _p, _o, t in sender.acked.values() if t > done]
        if after:
            return round((min(after) - requested) * 1000, 1)
        time.sleep(0.005)
    raise AssertionError("no send was acknowledged after the promotion")


def counts(sender: Sender, held: list) -> dict:
    values = Counter(v for _p, _o, v in held)
    acked = {f"event-{i}".encode() for i in sender.acked}
    return {"sent": sender.sent, "acknowledged": len(acked), "failed": len(sender.failed),
            "read": len(values), "lost": len(acked - set(values)),
            "duplicated": sum(n - 1 for n in values.values() if n > 1)}


def test_planned_promotion_while_sending_loses_and_doubles_nothing(tmp_path):
    with geo_broker(tmp_path, max_lag=0) as b:
        sender = Sender(confluent_conf(b.bootstrap_servers, b.connection_string()))
        sender.start()
        try:
            sender.wait_acks(2000)
            requested = time.monotonic()
            promotion = b.call(lambda: geo(b).promote("eastus"))
            done = time.monotonic()
            resumed = resume_ms(sender, requested, done)
            sender.wait_acks(sender.acks() + 2000)
        finally:
            sender.stop.set()
            sender.join(90)
        assert promotion.lost_events == 0 and not promotion.forced
        assert b.call(lambda: geo(b).primary_location) == "eastus"
        held = read_all(b)
        figures = counts(sender, held)
        figures.update(promote_ms=round((done - requested) * 1000, 1), resume_ms=resumed)
        record("planned", figures)
        assert figures["failed"] == 0 and figures["lost"] == 0 and figures["duplicated"] == 0
        assert figures["read"] == figures["acknowledged"] == sender.sent


def test_forced_promotion_loses_only_what_had_not_replicated(tmp_path):
    with geo_broker(tmp_path, max_lag=300) as b:
        conf = confluent_conf(b.bootstrap_servers, b.connection_string())
        group = {"group.id": "billing", "auto.offset.reset": "earliest", "enable.auto.commit": False}
        sender = Sender(conf)
        sender.start()
        try:
            sender.wait_acks(1500)
            # A consumer group commits what it read before the region goes quiet.
            reader = Consumer({**conf, **group})
            reader.subscribe(["orders"])
            seen, position = 0, {0: 0, 1: 0}
            deadline = time.monotonic() + 30
            while seen < 1000 and time.monotonic() < deadline:
                m = reader.poll(0.5)
                if m is not None and not m.error():
                    seen += 1
                    position[m.partition()] = m.offset() + 1
            reader.commit(offsets=[TopicPartition("orders", p, o) for p, o in position.items()],
                          asynchronous=False)
            committed = {tp.partition: tp.offset for tp in reader.committed(
                [TopicPartition("orders", 0), TopicPartition("orders", 1)], timeout=10)}
            reader.close()
            b.call(lambda: geo(b).pause("eastus"))
            paused_at = sender.acks()
            sender.wait_acks(paused_at + 1500)
            requested = time.monotonic()
            promotion = b.call(lambda: geo(b).promote("eastus", forced=True))
            done = time.monotonic()
            resumed = resume_ms(sender, requested, done)
            sender.wait_acks(sender.acks() + 1500)
        finally:
            sender.stop.set()
            sender.join(90)
        held = read_all(b)
        figures = counts(sender, held)
        values = {v for _p, _o, v in held}
        lost_acks = [(i, p, o) for i, (p, o, t) in sender.acked.items()
                     if f"event-{i}".encode() not in values]
        # Only what eastus lacked: every lost event was acknowledged by westus at an
        # offset at or past eastus's end before the promotion, and no more were lost.
        for i, p, o in lost_acks:
            first, end = promotion.lost[("orders", p)]
            assert first <= o < end, (i, p, o, promotion.lost)
        assert 0 < len(lost_acks) <= promotion.lost_events
        assert figures["duplicated"] == 0
        figures.update(lost_at_promotion=promotion.lost_events, promote_ms=round((done - requested) * 1000, 1),
                       resume_ms=resumed, replica_end_before_promotion={
                           str(p): promotion.lost[("orders", p)][0] for p in (0, 1)})

        # The group resumes on the new primary from its checkpoint (replicated before the pause).
        reader = Consumer({**conf, **group})
        assert {tp.partition: tp.offset for tp in reader.committed(
            [TopicPartition("orders", 0), TopicPartition("orders", 1)], timeout=10)} == committed
        reader.subscribe(["orders"])
        highs = {p: reader.get_watermark_offsets(TopicPartition("orders", p), timeout=10)[1] for p in (0, 1)}
        want = sum(highs[p] - committed[p] for p in (0, 1))
        resumed_reads = []
        deadline = time.monotonic() + 60
        errors = []
        while len(resumed_reads) < want and time.monotonic() < deadline:
            m = reader.poll(0.5)
            if m is not None and not m.error():
                resumed_reads.append((m.partition(), m.offset()))
            elif m is not None:
                errors.append(m.error().str())
        reader.close()
        assert not errors
        assert len(resumed_reads) == want == len(set(resumed_reads))
        assert all(o >= committed[p] for p, o in resumed_reads)
        figures["group_resumed_reads"] = want
        record("forced", figures)


def test_a_consumer_past_the_new_end_finds_the_log_truncated_after_a_forced_promotion(tmp_path):
    with geo_broker(tmp_path, max_lag=300) as b:
        conf = confluent_conf(b.bootstrap_servers, b.connection_string())
        p = Producer(conf)
        for i in range(10):
            p.produce("orders", f"a-{i}".encode(), partition=0)
        assert p.flush(30) == 0
        b.call(lambda: geo(b).pause("eastus"))
        for i in range(10):
            p.produce("orders", f"b-{i}".encode(), partition=0)
        assert p.flush(30) == 0
        c = Consumer({**conf, "group.id": "late", "auto.offset.reset": "error"})
        c.assign([TopicPartition("orders", 0, 18)])
        first = None
        deadline = time.monotonic() + 20
        while first is None and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                first = m.value()
        assert first == b"b-8"
        b.call(lambda: geo(b).promote("eastus", forced=True))  # the new end of partition 0 is 10
        error = None
        deadline = time.monotonic() + 30
        while error is None and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is not None:
                error = m.error()
            elif m is not None:  # fetched from westus before the promotion, else a bug
                assert m.value() == b"b-9" and m.offset() == 19, (m.value(), m.offset())
        c.close()
        # librdkafka sees the leader epoch move, checks its position with
        # OffsetForLeaderEpoch (KIP-320) and finds the log truncated below it; its
        # auto.offset.reset then applies ("error" here). A client without leader
        # epochs gets OFFSET_OUT_OF_RANGE from Fetch, with the same reset.
        assert error is not None and error.code() == KafkaError._AUTO_OFFSET_RESET, error
        assert "truncation detected at offset 20" in error.str() and "end offset is 10" in error.str()
