"""The Azure SDKs through a planned and a forced promotion of a geo-replicated
namespace (issue 29 items 3 and 5).

Python: an EventHubProducerClient sends continuously (one event per call, both
partitions) while a processor (EventHubConsumerClient with the blob checkpoint store
on Azurite, checkpointing every event) reads. The namespace is promoted (planned) with
both running; then the new primary's secondary is paused, events are sent and read
there, and that secondary is promoted by force. The test counts what was acknowledged,
read, lost (only in the forced promotion, only what had not replicated) and duplicated,
and records what the application sees: the processor's checkpoints of lost events are
refused with com.microsoft:georeplication:invalid-offset; a new processor resumes on
the new primary from the checkpoints that are still good.

JavaScript: EventHubConsumerClient.subscribe reads through a planned promotion and
resumes. Figures go to test-artifacts/geo-sdk-failover.json (and stdout with -s)."""
from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.eventhub.extensions.checkpointstoreblob import BlobCheckpointStore
from azure.storage.blob import BlobServiceClient
from confluent_kafka import Producer as KafkaProducer

from tests.conftest import JS, node_with
from tests.eventhubs.conftest import confluent_conf
from tests.faults.harness import scaled
from tests.geo.conftest import geo, geo_broker
from tests.geo.management import wait_for

INVALID = "com.microsoft:georeplication:invalid-offset"
PARTITIONS = ("0", "1")
ARTIFACT = Path(__file__).resolve().parents[2] / "test-artifacts" / "geo-sdk-failover.json"
STALE_S = scaled(3, 8)   # how long a processor on refused checkpoints is watched (make soak: 8 s)


def record(name: str, figures: dict) -> None:
    print(f"\n{name}: {json.dumps(figures, sort_keys=True)}")
    ARTIFACT.parent.mkdir(exist_ok=True)
    data = json.loads(ARTIFACT.read_text()) if ARTIFACT.exists() else {}
    data[name] = figures
    ARTIFACT.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


class Producer:
    """Sends ev-0, ev-1, ... one per send_batch, alternating partitions, until stopped
    (at most ``limit``); ``gate`` cleared holds it between sends."""

    def __init__(self, cs: str, limit: int = 20_000) -> None:
        self.client = EventHubProducerClient.from_connection_string(cs, eventhub_name="orders")
        self.acked: list[str] = []
        self.failed: list[tuple[str, str]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.idle = threading.Event()
        self.stop = threading.Event()
        self.limit = limit
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for i in range(self.limit):
            if self.stop.is_set():
                break
            if not self.gate.is_set():
                self.idle.set()
                self.gate.wait()
                self.idle.clear()
            body = f"ev-{i}"
            try:
                self.client.send_batch([EventData(body)], partition_id=PARTITIONS[i % 2])
                self.acked.append(body)
            except Exception as exc:  # the SDK gave up after its retries
                self.failed.append((body, type(exc).__name__))
            time.sleep(0.005)

    def hold(self) -> None:
        self.gate.clear()
        assert self.idle.wait(60), "the producer did not pause"

    def close(self) -> None:
        self.stop.set()
        self.gate.set()
        self.thread.join(120)
        assert not self.thread.is_alive()
        self.client.close()


class Processor:
    """An EventHubConsumerClient with the blob checkpoint store, checkpointing every
    event; records (partition, body, offset) and the errors on_error gets.

    ``backlog=True`` is for reading a backlog of both partitions: events in batches and
    both partitions claimed at once. The sync processor hands ``on_event`` one event per
    partition per round, and a round waits 0.2 s on the socket of a partition that has
    nothing more; with the balanced strategy it claims one partition per load-balancing
    interval. So a partition claimed a second after the other, once the other has been
    read, is read at about 5 events/s: 300 events take a minute (the SDK's own pacing,
    against the service too). The client's default is greedy (azure-eventhub 5.x): named
    here all the same, so that a change of default would not slow this reading."""

    def __init__(self, cs: str, store, checkpoint: bool = True, backlog: bool = False, **kwargs) -> None:
        self.checkpoint = checkpoint
        if backlog:
            kwargs["load_balancing_strategy"] = "greedy"
        self.client = EventHubConsumerClient.from_connection_string(
            cs, consumer_group="$Default", eventhub_name="orders", checkpoint_store=store,
            load_balancing_interval=1, **kwargs)
        self.events: list[tuple[str, str, str]] = []
        self.sequences: list[tuple[str, int, str]] = []
        self.errors: list = []
        self._lock = threading.Lock()
        on_error = lambda _c, e: self.errors.append(e)  # noqa: E731
        if backlog:
            self.thread = threading.Thread(target=self.client.receive_batch, daemon=True, kwargs=dict(
                on_event_batch=self._on_events, on_error=on_error, starting_position="-1",
                max_batch_size=100, max_wait_time=1))
        else:
            self.thread = threading.Thread(target=self.client.receive, daemon=True, kwargs=dict(
                on_event=self._on_event, on_error=on_error, starting_position="-1", max_wait_time=1))
        self.thread.start()

    def _on_event(self, context, event) -> None:
        if event is not None:
            self._on_events(context, [event])

    def _on_events(self, context, events) -> None:
        if not events:
            return
        if self.checkpoint:
            context.update_checkpoint(events[-1])
        with self._lock:
            for event in events:
                self.events.append((context.partition_id, event.body_as_str(), event.offset))
                self.sequences.append((context.partition_id, event.sequence_number, event.offset))

    def bodies(self) -> list[str]:
        with self._lock:
            return [b for _, b, _ in self.events]

    def close(self) -> None:
        self.client.close()
        self.thread.join(30)
        assert not self.thread.is_alive()


def content(cs: str) -> list[tuple[str, str, str]]:
    """Every event the namespace holds now: (partition, body, offset), read from -1."""
    with EventHubConsumerClient.from_connection_string(cs, consumer_group="$Default",
                                                       eventhub_name="orders") as c:
        want = {p: c.get_partition_properties(p) for p in PARTITIONS}
    total = sum(0 if w["is_empty"] else w["last_enqueued_sequence_number"] -
                w["beginning_sequence_number"] + 1 for w in want.values())
    got: list = []
    done = threading.Event()
    client = EventHubConsumerClient.from_connection_string(cs, consumer_group="$Default",
                                                           eventhub_name="orders")

    def on_event(ctx, event):
        if event is not None:
            got.append((ctx.partition_id, event.body_as_str(), event.offset))
            if len(got) >= total:
                done.set()
    thread = threading.Thread(target=client.receive, daemon=True, kwargs=dict(
        on_event=on_event, starting_position="-1", max_wait_time=1))
    thread.start()
    done.wait(60)
    client.close()
    thread.join(30)
    assert len(got) == total, (len(got), total)
    return got


def checkpoints(container) -> dict[str, dict]:
    return {b.name.rsplit("/", 1)[1]: dict(b.metadata)
            for b in container.list_blobs(include=["metadata"]) if "/checkpoint/" in b.name}


def caught_up(b, location: str) -> bool:
    return b.call(lambda: geo(b).replica(location).lag_events) == 0


def test_python_sdk_through_planned_and_forced_promotion(tmp_path, azurite, offset_refusals):
    refusals = offset_refusals   # the broker's invalid-offset refusals (the SDK retries quietly)
    container = BlobServiceClient.from_connection_string(azurite).create_container("geo-ckpt")
    store = BlobCheckpointStore.from_connection_string(azurite, "geo-ckpt")
    figures: dict = {}
    with geo_broker(tmp_path, amqp=True, max_lag=300) as b:
        cs = b.amqp_connection_string()
        g = geo(b)
        producer = Producer(cs)
        p1 = p1b = None
        try:
            # -- planned promotion westus -> eastus, the producer and a processor running
            p1 = Processor(cs, store)
            wait_for(lambda: len(producer.acked) >= 40 and len(p1.events) >= 40, "40 events read")
            t0 = time.monotonic()
            promotion = b.call(lambda: g.promote("eastus"))
            acked_at = len(producer.acked)
            wait_for(lambda: len(producer.acked) > acked_at, "a send acknowledged after promotion")
            figures["planned_resume_s"] = round(time.monotonic() - t0, 3)
            assert promotion.lost_events == 0 and b.call(lambda: g.segment) == 1
            wait_for(lambda: len(producer.acked) >= acked_at + 40, "40 more sends")
            wanted = set(producer.acked)
            wait_for(lambda: wanted <= set(p1.bodies()), "the processor to read through it", 60)
            p1.close()
            # -- a new processor on the new primary resumes from p1's checkpoints
            p1b = Processor(cs, store)
            wanted = set(producer.acked)
            wait_for(lambda: wanted <= set(p1.bodies()) | set(p1b.bodies()), "p1b to catch up", 60)
            figures["planned_reread_by_successor"] = len(set(p1.bodies()) & set(p1b.bodies()))
            assert figures["planned_reread_by_successor"] == 0
            # -- forced promotion eastus -> westus of events westus lacks
            producer.hold()
            wait_for(lambda: caught_up(b, "westus"), "westus to catch up")
            b.call(lambda: g.pause("westus"))
            paused_at = len(producer.acked)
            producer.gate.set()
            wait_for(lambda: len(producer.acked) >= paused_at + 30, "30 sends while westus is paused")
            producer.hold()
            unreplicated = set(producer.acked[paused_at:])
            wait_for(lambda: unreplicated <= set(p1b.bodies()), "p1b to read and checkpoint them")
            p1b.close()   # the application stops with the failed region
            stale = checkpoints(container)
            t0 = time.monotonic()
            forced = b.call(lambda: g.promote("westus", forced=True))
            producer.gate.set()
            acked_at = len(producer.acked)
            wait_for(lambda: len(producer.acked) > acked_at, "a send acknowledged after forcing")
            figures["forced_resume_s"] = round(time.monotonic() - t0, 3)
            wait_for(lambda: len(producer.acked) >= acked_at + 30, "30 sends after forcing")
        finally:
            producer.close()
            for proc in (p1, p1b):
                if proc is not None and proc.thread.is_alive():
                    proc.close()
        final = content(cs)
        bodies = Counter(body for _, body, _ in final)
        lost = set(producer.acked) - set(bodies)
        duplicated = {body: n for body, n in bodies.items() if n > 1}
        figures.update(
            acknowledged=len(producer.acked), failed=len(producer.failed),
            failed_kinds=sorted(Counter(kind for _, kind in producer.failed).items()),
            failed_but_stored=sum(body in bodies for body, _ in producer.failed),
            stored=len(final), lost=len(lost), lost_in_forced_promotion=forced.lost_events,
            acked_while_secondary_paused=len(unreplicated), duplicated=len(duplicated))
        # What is lost is exactly what westus had not received, all of it acknowledged
        # by eastus; nothing else acknowledged is missing (the planned promotion lost none).
        assert lost == unreplicated and forced.lost_events == len(unreplicated), figures
        segments = {seg for _, _, offset in final for seg in [offset.split(":")[0]]}
        assert segments == {"0", "1", "2"}, segments
        # every offset a processor was handed names the segment its event was written in
        # and its sequence number (those of lost events: segment 1, past westus's end)
        from kafka_wire.eventhubs.geo_offsets import format_offset, segment_of
        starts = {pid: b.call(lambda pid=pid: g.segment_starts("orders", int(pid))) for pid in PARTITIONS}
        for proc in (p1, p1b):
            for pid, seq, offset in proc.sequences:
                assert offset == format_offset(segment_of(starts[pid], seq), seq) or \
                    (offset == format_offset(1, seq) and seq >= starts[pid][2][1]), (pid, seq, offset)
        # -- the checkpoints of events westus lacked are refused after the failover
        assert set(stale) == set(PARTITIONS) and all(m["offset"].startswith("1:")
                                                     for m in stale.values()), stale
        refusals.clear()
        p2 = Processor(cs, store)   # default retries: what an application gets
        time.sleep(STALE_S)   # a window to watch (nothing may arrive in it), not an ordering wait
        p2.close()
        figures["stale_default_retries"] = {"seconds": STALE_S, "events": len(p2.events),
                                            "on_error": len(p2.errors), "refused_attaches": len(refusals)}
        assert p2.events == [] and refusals
        p3 = Processor(cs, store, retry_total=0)
        try:
            wait_for(lambda: any(INVALID in str(e) for e in p3.errors), "on_error with the condition")
        finally:
            p3.close()
        refused = [str(e) for e in p3.errors if INVALID in str(e)]
        assert all("The supplied offset '1:" in r for r in refused), p3.errors
        figures["stale_retry_total_0_on_error"] = f"{type(p3.errors[0]).__name__}: " + \
            refused[0].splitlines()[0][:160]
        # -- the application's recovery: drop the refused checkpoints, start from its
        # default position (what .NET's processor does by itself)
        for blob in list(container.list_blobs()):
            if "/checkpoint/" in blob.name:
                container.delete_blob(blob.name)
        p4 = Processor(cs, store, checkpoint=False, backlog=True)   # (a blob write per event is slow)
        try:
            wait_for(lambda: len(p4.events) >= len(final), "the recovered processor to read it all", 60)
        except AssertionError:
            raise AssertionError((len(p4.events), len(final), p4.errors, checkpoints(container)))
        finally:
            p4.close()
        assert p4.errors == [] and sorted(p4.bodies()) == sorted(body for _, body, _ in final)
        figures["recovery_redelivered"] = len(set(p4.bodies()) & (set(p1.bodies()) | set(p1b.bodies())))
        record("python", figures)


class NodeSubscriber:
    """tests/js/geo_subscribe.js subscribe ...: its JSON lines, read as they come."""

    def __init__(self, node: str, *args, retries: int | None = None) -> None:
        env = dict(os.environ) if retries is None else {**os.environ, "GEO_JS_RETRIES": str(retries)}
        self.proc = subprocess.Popen([node, str(JS / "geo_subscribe.js"), "subscribe", *map(str, args)],
                                     cwd=JS, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env)
        self.events: list[dict] = []
        self.errors: list[dict] = []
        self.other: list[dict] = []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        for text in self.proc.stdout:
            item = json.loads(text)
            if "event" in item:
                self.events.append(item["event"])
            elif "error" in item:
                self.errors.append(item["error"])
            else:
                self.other.append(item)

    def bodies(self) -> list[str]:
        return [e["body"] for e in list(self.events)]

    def stop(self) -> None:
        self.proc.terminate()   # by its pid: the process this test started
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.thread.join(10)
        self.proc.stderr.close()


def send(b, bodies: list[str]) -> None:
    """Each body to partitions 0, 1, 0, ... in order, every one acknowledged. Over Kafka:
    the data the JS subscriber reads, not a path under test (a Python SDK producer opens
    a link per partition, ~1.7 s a call)."""
    acks: list = []
    p = KafkaProducer(confluent_conf(b.bootstrap_servers, b.connection_string()))
    for i, body in enumerate(bodies):
        p.produce("orders", body.encode(), partition=int(PARTITIONS[i % 2]),
                  on_delivery=lambda err, _msg: acks.append(err))
    assert p.flush(30) == 0 and acks == [None] * len(bodies), acks


def test_js_sdk_subscribes_through_a_failover_and_resumes(tmp_path, monkeypatch):
    node = node_with("@azure/event-hubs", "GEO JS SDK TEST")
    from kafka_wire.amqp import georeplication

    selectors: list = []   # every receiver's starting position, as the broker saw it
    checked = georeplication.start_offset

    def noting(runtime, hub, partition, plog, selector):
        try:
            start = checked(runtime, hub, partition, plog, selector)
        except Exception as exc:
            selectors.append((partition, selector, type(exc).__name__))
            raise
        selectors.append((partition, selector, start))
        return start
    monkeypatch.setattr(georeplication, "start_offset", noting)
    figures: dict = {}
    with geo_broker(tmp_path, amqp=True, max_lag=300) as b:
        cs = b.amqp_connection_string()
        g = geo(b)
        send(b, [f"a{i}" for i in range(10)])
        res = subprocess.run([node, str(JS / "geo_subscribe.js"), "properties", cs, "orders"], cwd=JS,
                             capture_output=True, text=True, timeout=60)
        props = json.loads(res.stdout.splitlines()[-1])
        assert props["hub"]["isGeoDrEnabled"] is True, res
        assert [p["lastEnqueuedOffset"] for p in props["partitions"]] == ["0:4", "0:4"]
        sub = NodeSubscriber(node, cs, "orders", 120)
        try:
            wait_for(lambda: len(sub.events) >= 10, "the JS subscriber to read a*", 60)
            assert {e["offset"] for e in sub.events} == {f"0:{i}" for i in range(5)}
            # planned: the subscriber is disconnected and resumes on the new primary
            t0 = time.monotonic()
            b.call(lambda: g.promote("eastus"))
            send(b, [f"b{i}" for i in range(10)])
            wait_for(lambda: len(sub.events) >= 20, "the JS subscriber to read b* after the promotion", 60)
            figures["planned_js_resume_s"] = round(time.monotonic() - t0, 3)
            assert sorted(sub.bodies()) == sorted([f"a{i}" for i in range(10)] + [f"b{i}" for i in range(10)])
            assert {e["offset"] for e in sub.events if e["body"].startswith("b")} == \
                {f"1:{i}" for i in range(5, 10)}
            # forced, of a secondary that lacks what the subscriber has read (c*)
            b.call(lambda: g.pause("westus"))
            send(b, [f"c{i}" for i in range(6)])
            wait_for(lambda: len(sub.events) >= 26, "the JS subscriber to read c*", 60)
            b.call(lambda: g.promote("westus", forced=True))
            send(b, [f"d{i}" for i in range(6)])   # sequence numbers 10..12: reused
            send(b, [f"e{i}" for i in range(6)])   # 13..15
            # @azure/event-hubs 6 re-attaches an interrupted receiver by sequence number
            # (partitionReceiver.js: obj.checkpoint = sequenceNumber, then an
            # x-opt-sequence-number filter), not by offset, so it is never refused: it asks
            # for > 12. The new primary wrote d* at the lost c*'s sequence numbers 10..12:
            # re-attached before d* were written it starts at the end (10, a sequence
            # number past the end starts there) and reads them; after, it skips them.
            wait_for(lambda: sum(x.startswith("e") for x in sub.bodies()) == 6,
                     "the JS subscriber to read e* after the forced promotion", 60)
            time.sleep(0.5)
            read = {p: sum(x.startswith(p) for x in sub.bodies()) for p in "abcde"}
            figures["forced_js_read"] = read
            figures["forced_js_errors"] = len(sub.errors)
            assert read in ({"a": 10, "b": 10, "c": 6, "d": 0, "e": 6},
                            {"a": 10, "b": 10, "c": 6, "d": 6, "e": 6}), (read, selectors)
            after = [sel for _, sel, _ in selectors[-2:]]
            assert after == ["amqp.annotation.x-opt-sequence-number > '12'"] * 2, selectors
            assert sub.errors == []
        finally:
            sub.stop()
        # a new subscription resumes on the new primary: a*, b*, then d* (c* was lost)
        again = NodeSubscriber(node, cs, "orders", 120)
        try:
            wait_for(lambda: len(again.events) >= 32, "a new JS subscriber to read everything", 60)
            time.sleep(1)
        finally:
            again.stop()
        assert sorted(again.bodies()) == sorted([f"{p}{i}" for p in "ab" for i in range(10)]
                                                + [f"{p}{i}" for p in "de" for i in range(6)])
        assert {e["offset"] for e in again.events if e["body"][0] in "de"} == \
            {f"2:{i}" for i in range(10, 16)}
        assert again.errors == []
        # an offset of a lost event as a starting position: processError with the condition
        lost = NodeSubscriber(node, cs, "orders", 120, "0", "1:12", retries=1)
        try:
            wait_for(lambda: lost.errors, "processError for a lost offset", 60)
        finally:
            lost.stop()
        first = lost.errors[0]
        assert lost.events == [] and "The supplied offset '1:12' is invalid" in first["message"], \
            lost.errors
        assert ("refused", "amqp.annotation.x-opt-offset > '1:12'") in \
            [("refused", sel) for _, sel, start in selectors if start == "InvalidOffset"]
        figures["lost_offset_js_error"] = {k: first[k] for k in ("name", "code", "condition", "retryable")}
        record("js", figures)


def test_js_sdk_sees_no_geo_replication_on_a_plain_namespace(tmp_path):
    """georeplication_factor is 1 without replicas: isGeoDrEnabled false, plain offsets."""
    from kafka_wire.testing import EmulatedBroker

    node = node_with("@azure/event-hubs", "GEO JS SDK TEST")
    with EmulatedBroker(tmp_path / "plain", amqp=True) as plain:
        plain.create_hub("orders", 2)
        send(plain, ["x0", "x1"])
        res = subprocess.run([node, str(JS / "geo_subscribe.js"), "properties",
                              plain.amqp_connection_string(), "orders"], cwd=JS,
                             capture_output=True, text=True, timeout=60)
        props = json.loads(res.stdout.splitlines()[-1])
        assert props["hub"]["isGeoDrEnabled"] is False, res
        assert all(":" not in p["lastEnqueuedOffset"] for p in props["partitions"]), props
