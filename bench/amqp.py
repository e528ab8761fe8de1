"""AMQP next to Kafka on one broker: 1 KiB events sent with ``azure-eventhub``
(create_batch/send_batch) and received (receive_batch), then the same events
produced and consumed with confluent-kafka, each phase timed with the broker's
and the client's CPU.

A program, not a test: starts ``kafka-wire serve`` as a subprocess (Kafka and
AMQP on ephemeral ports, no HTTP) and reads its CPU before and after each
phase: the run time of each of its threads from /proc/PID/task/*/schedstat,
in nanoseconds (utime + stime from /proc/PID/stat, as bench/run.py reads
them, count 10 ms ticks, too coarse for a Kafka phase; the JSON keeps them
as a cross-check). The client's CPU is this process's (the SDK's threads,
librdkafka's). Per round, two fresh hubs of ``--partitions`` partitions: one
written and read over AMQP, one over Kafka. Prints events/s, broker and
client CPU seconds per 100,000 events and their ratio, median (min-max) of
``--repeat`` rounds after a warm-up round, and the issue's targets:

- the broker is never the bottleneck: broker CPU <= 10% of the client's at the
  client's maximum rate (AMQP send and receive);
- an AMQP event costs the broker no more than 3x a Kafka record (send against
  produce, receive against consume).

Every phase checks that what was acknowledged is what is read back: per
partition, the sequence numbers (offsets) 0..n-1 in order, once each, with
n the events acknowledged to that partition. Writes JSON to bench/results/.

    python -m bench.amqp [--quick] [--events N] [--size 1024] [--spread 0.5] [--partitions 2]
                         [--receivers 2] [--repeat 3] [--receive-only | --send-only]

``--spread`` sends events of sizes drawn within ``--size`` ± that fraction (1,000 seeded
bodies in turn), as applications' events differ: the broker's send path has a shortcut
for a batch of events all of one size, which the default (one body) takes.

``--receivers N`` (2-5) adds a phase after the receive: N clients read the same partitions
at once (``$Default``, no owner level), under one meter, each checked as above; its broker
CPU is per event delivered (N x events), printed beside one receiver's of the same round,
as receivers of one partition share each batch's encoded messages (amqp/outgoing.SharedEvents).

``--receive-only`` measures the AMQP receive alone, for before/after figures of the receive
path with less noise and time: one hub is written once (untimed), then read from ``-1`` by a
new client (new connection) once untimed as a warm-up and ``--repeat`` times timed; it prints
the broker's and the SDK's CPU per event received and their ratio, median (min-max), each
read checked as above. ``--receivers`` does not apply.

``--send-only`` measures the send path alone: after a warm-up, ``--repeat`` rounds of an AMQP
send and a Kafka produce of the same events, each to new hubs, printing the broker's and the
SDK's CPU per event, their ratio and the ratio to a Kafka record, median (min-max); every
acknowledgement is checked, nothing is read back.

``--receive-only --profile`` also samples the broker with py-spy (``record --native --rate 500
--format raw``, as root or with ptrace rights; ``pip install -e '.[bench]'`` brings it) during
each timed read only, and prints the samples' count and their shares by slice of the receive
path: reading and encoding events, the padder, proton's deliveries, proton writing frames, join
and socket write, the rest of the connection, freeing, on_flow's Python, other (see
bench/amqp_profile.py). Without py-spy, or when it cannot attach, it says why and exits 2. The
CPU figures of a profiled run are raised by the sampling: compare them only with another's.
``--stacks DIR`` keeps the raw stacks (``readN.txt``), for a closer look than the slices.

``--in-process`` starts no broker: it times ``kafka_wire.amqp.outgoing.batch_events`` (a stored
batch to the messages a receiver sends) over 40 batches of 950 events of ``--size`` bytes (fewer
past 1 MiB), stored as the send path stores them, one length and then mixed lengths
(``--spread``, else ±50%), read in turn until ``--events`` events, ``--repeat`` times, and
prints ns per event, median (min-max).
"""
from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from bench import amqp_profile
from bench.run import BrokerProc
from bench.run import create_topic as create_hub  # a hub is a topic to the Kafka front end
from kafka_wire.testing.ports import free_port
from kafka_wire.eventhubs import connection_string

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PER = 100_000                    # figures are CPU seconds per this many events
SEED = 30                        # of the event bodies (--spread)
BROKER_SHARE_TARGET = 0.10       # broker CPU / client CPU, AMQP (issue 30)
AMQP_KAFKA_TARGET = 3.0          # AMQP broker CPU per event / Kafka broker CPU per record (issue 30)
TIMEOUT_S = 300.0


def client_cpu_s() -> float:
    """CPU seconds of this process, every thread (the SDK's, librdkafka's)."""
    return time.process_time()


@dataclass
class Broker(BrokerProc):
    """bench.run's broker process (its CPU in ticks, stop), with the AMQP or HTTP port."""
    amqp_port: int = 0
    http_port: int = 0

    def cpu_ns_by_thread(self) -> dict[int, int]:
        """Nanoseconds each thread has run (the scheduler's own sum, exact)."""
        out = {}
        for task in Path(f"/proc/{self.proc.pid}/task").iterdir():
            try:
                out[int(task.name)] = int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):  # the thread ended meanwhile
                pass
        return out

    def threads(self) -> int:
        return self._status("Threads:")

    def minor_faults(self) -> int:
        """Minor page faults so far, every thread (/proc/PID/stat's minflt): memory the
        allocator takes from and gives back to the kernel shows here."""
        try:
            stat = Path(f"/proc/{self.proc.pid}/stat").read_text()
            return int(stat[stat.rindex(")") + 2:].split()[7])
        except (OSError, ValueError, IndexError):
            return 0

    def heap_mb(self) -> float:
        """The broker's anonymous resident memory now, MB (its heap: the log files it maps,
        which readers touch, are resident too but the kernel's to drop)."""
        return self._status("RssAnon:") / 1024

    def _status(self, field: str) -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1])
        return 0

    def amqp_cs(self) -> str:
        # The default namespace of a broker without a config file has no SAS
        # policies: any key is taken (as EmulatedBroker.connection_string says).
        return connection_string.build(f"127.0.0.1:{self.amqp_port}", key_name="RootManageSharedAccessKey",
                                       key="any-key-works", emulator=True)


def _wait_listening(proc: subprocess.Popen, port: int, log: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"broker exited: {log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"broker did not listen on {port} within {timeout} s")


def start_broker(work: Path, second: str = "amqp") -> Broker:
    """``kafka-wire serve`` with Kafka and one more front end, ``second`` ("amqp" or
    "http", the other off), both listening; its port is ``amqp_port`` or ``http_port``."""
    port, other = free_port(), free_port()
    off = {"amqp": "--no-http", "http": "--no-amqp"}[second]
    log = work / "broker.log"
    proc = subprocess.Popen([sys.executable, "-m", "kafka_wire.cli", "--log-level", "WARNING", "serve",
                             "--data-dir", str(work / "data"), "--listen", f"127.0.0.1:{port}",
                             f"--{second}-listen", f"127.0.0.1:{other}", off],
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT, cwd=ROOT)
    b = Broker("kafka-wire", proc, f"127.0.0.1:{port}", work, **{f"{second}_port": other})
    try:
        _wait_listening(proc, port, log)
        _wait_listening(proc, other, log)
    except BaseException:
        b.stop()
        raise
    return b


class Meter:
    """Wall time, broker CPU and client CPU over one phase."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def __enter__(self) -> "Meter":
        self.ticks0, self.threads0 = self.broker.cpu_seconds(), self.broker.cpu_ns_by_thread()
        self.faults0 = self.broker.minor_faults()
        self.t0, self.c0 = time.perf_counter(), client_cpu_s()
        return self

    def stop(self) -> None:
        """End of the measured part (before clients are closed)."""
        self.seconds = time.perf_counter() - self.t0
        self.client_cpu = client_cpu_s() - self.c0
        after = self.broker.cpu_ns_by_thread()
        self.broker_cpu_ticks = self.broker.cpu_seconds() - self.ticks0
        self.broker_faults = self.broker.minor_faults() - self.faults0
        # Per thread, so a broker thread that started meanwhile counts from zero.
        self.broker_cpu = sum(ns - self.threads0.get(tid, 0) for tid, ns in after.items()) / 1e9
        if not after:  # no schedstat: the ticks it is
            self.broker_cpu = self.broker_cpu_ticks

    def __exit__(self, *exc) -> None:
        if not hasattr(self, "seconds"):
            self.stop()

    def figures(self, events: int) -> dict:
        return {"events": events, "seconds": self.seconds,
                "events_per_s": events / self.seconds if self.seconds else float("nan"),
                "broker_cpu_s": self.broker_cpu, "broker_cpu_s_from_ticks": self.broker_cpu_ticks,
                "client_cpu_s": self.client_cpu, "broker_minor_faults": self.broker_faults,
                "broker_minor_faults_per_100k": self.broker_faults / events * PER if events else float("nan"),
                "broker_cpu_s_per_100k": self.broker_cpu / events * PER if events else float("nan"),
                "client_cpu_s_per_100k": self.client_cpu / events * PER if events else float("nan"),
                "broker_over_client": self.broker_cpu / self.client_cpu if self.client_cpu else float("nan"),
                "broker_cpu_util": self.broker_cpu / self.seconds if self.seconds else float("nan"),
                "client_cpu_util": self.client_cpu / self.seconds if self.seconds else float("nan")}


class Contiguity:
    """Per partition: the next sequence number (offset) expected; whether every
    one arrived in order, once."""

    def __init__(self, partitions: int) -> None:
        self.next = [0] * partitions
        self.ok = True
        self.count = 0

    def run(self, partition: int, first: int, last: int, n: int) -> None:
        """``n`` events of ``partition`` with sequence numbers first..last."""
        if first != self.next[partition] or last - first + 1 != n:
            self.ok = False
        self.next[partition] = last + 1
        self.count += n

    def one(self, partition: int, seq: int) -> None:
        if seq != self.next[partition]:
            self.ok = False
        self.next[partition] = seq + 1
        self.count += 1


# -- AMQP ---------------------------------------------------------------------------------
def event_bodies(size: int, spread: float) -> list[bytes]:
    """The bodies the phases send, in turn: one of ``size`` bytes, or with ``spread`` (a
    fraction) 1,000 of sizes drawn evenly within ``size`` ± that much (seeded: the same
    on every run), so no two events in a row are alike as applications' events are not."""
    rng = random.Random(SEED)
    if not spread:
        return [rng.randbytes(size)]
    low, high = size_range(size, spread)
    return [rng.randbytes(rng.randint(low, high)) for _ in range(1000)]


def size_range(size: int, spread: float) -> tuple[int, int]:
    return max(0, int(size * (1 - spread))), int(size * (1 + spread))


def amqp_send(b: Broker, hub: str, count: int, size: int, partitions: int, spread: float = 0.0) -> dict:
    """``count`` events of ``size`` bytes (± ``spread``) in full batches, to the partitions in turn."""
    pool = event_bodies(size, spread)
    bodies = itertools.cycle(pool)  # (the one a full batch refused is skipped)
    acked = [0] * partitions
    producer = EventHubProducerClient.from_connection_string(b.amqp_cs(), eventhub_name=hub)
    try:
        producer.get_partition_ids()  # connected and authorized before the clock starts
        with Meter(b) as m:
            sent = batches = 0
            p = 0
            while sent < count:
                batch = producer.create_batch(partition_id=str(p))
                n = 0
                while sent + n < count:
                    try:
                        batch.add(EventData(next(bodies)))
                    except ValueError:  # the batch is full
                        break
                    n += 1
                producer.send_batch(batch)  # returns once the broker settled it accepted
                acked[p] += n
                sent += n
                batches += 1
                p = (p + 1) % partitions
            m.stop()
    finally:
        producer.close()
    out = m.figures(count)
    out.update(mb_per_s=count * size / m.seconds / 1e6, acked_per_partition=acked, acked=sum(acked),
               batches=batches, events_per_batch=count / batches)
    return out


def amqp_receive(b: Broker, hub: str, count: int, size: int, partitions: int, prefetch: int = 3000,
                 batch_size: int = 1000, spread: float = 0.0, receivers: int = 1,
                 around: contextlib.AbstractContextManager | None = None) -> dict:
    """receive_batch from ``-1`` on every partition until ``count`` events arrived, by
    ``receivers`` clients at once (each its own connection in ``$Default``, no owner level,
    no checkpoint store: each reads every partition), under one meter; the figures are per
    event delivered (``receivers`` x ``count``), and each receiver's events are checked.
    ``around``: entered just before the meter starts, left just after it stops (a profiler)."""
    seens = [Contiguity(partitions) for _ in range(receivers)]
    low, high = size_range(size, spread)
    lock = threading.Lock()
    done = [threading.Event() for _ in range(receivers)]
    errors: list = []
    bad_bodies = [0]

    def on_batch_of(i: int):
        seen = seens[i]

        def on_batch(context, events):
            if not events:
                return
            p = int(context.partition_id)
            first, last = events[0], events[-1]
            body = next(iter(first.body), b"")  # one body per batch: the client's cost stays the SDK's
            with lock:
                if not low <= len(body) <= high:
                    bad_bodies[0] += 1
                seen.run(p, first.sequence_number, last.sequence_number, len(events))
                if seen.count >= count:
                    done[i].set()
        return on_batch

    clients = [EventHubConsumerClient.from_connection_string(
        b.amqp_cs(), consumer_group="$Default", eventhub_name=hub,
        load_balancing_interval=1)  # its loop sleeps one interval before it notices close()
        for _ in range(receivers)]
    threads = [threading.Thread(target=client.receive_batch, kwargs=dict(
        on_event_batch=on_batch_of(i), on_error=lambda ctx, err: errors.append(err), max_batch_size=batch_size,
        max_wait_time=None, prefetch=prefetch, starting_position="-1"), daemon=True)
        for i, client in enumerate(clients)]
    with around or contextlib.nullcontext(), Meter(b) as m:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + TIMEOUT_S
        for d, thread in zip(done, threads):
            while not d.wait(0.2) and thread.is_alive() and time.monotonic() < deadline:
                pass
        m.stop()
    for client in clients:
        client.close()
    for thread in threads:
        thread.join(30)
    read = sum(seen.count for seen in seens)
    if read < count * receivers and errors:
        raise RuntimeError(f"AMQP receive failed after {read} events: {errors[0]!r}")
    out = m.figures(read)
    out.update(mb_per_s=read * size / m.seconds / 1e6, read=read, receivers=receivers,
               read_per_partition=[list(seen.next) for seen in seens] if receivers > 1 else list(seens[0].next),
               in_order=all(seen.ok for seen in seens) and not bad_bodies[0],
               errors=[repr(e) for e in errors[:3]])
    return out


# -- Kafka --------------------------------------------------------------------------------
def kafka_produce(b: Broker, hub: str, count: int, size: int, partitions: int, spread: float = 0.0) -> dict:
    pool = event_bodies(size, spread)
    acked_offsets: list[list[int]] = [[] for _ in range(partitions)]
    errors: list = []

    def cb(err, msg):
        if err is not None:
            errors.append(err)
        else:
            acked_offsets[msg.partition()].append(msg.offset())

    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "linger.ms": 5,
                  "batch.size": 1_000_000, "queue.buffering.max.messages": 1_000_000,
                  "queue.buffering.max.kbytes": 1_048_576, "compression.type": "none",
                  "enable.idempotence": False})
    p.list_topics(hub, timeout=10)  # connected before the clock starts
    with Meter(b) as m:
        for i in range(count):
            while True:
                try:
                    p.produce(hub, pool[i % len(pool)], partition=i % partitions, on_delivery=cb)
                    break
                except BufferError:
                    p.poll(0.005)
        left = p.flush(TIMEOUT_S)
        m.stop()
    if errors or left:
        raise RuntimeError(f"produce failed: {len(errors)} errors, {left} unflushed: {errors[:3]}")
    acked = [len(o) for o in acked_offsets]
    out = m.figures(count)
    out.update(mb_per_s=count * size / m.seconds / 1e6, acked_per_partition=acked, acked=sum(acked),
               offsets_ok=all(sorted(o) == list(range(len(o))) for o in acked_offsets))
    return out


def kafka_consume(b: Broker, hub: str, count: int, size: int, partitions: int, spread: float = 0.0) -> dict:
    """By assignment, every partition from offset 0; every record's partition
    and offset are checked (contiguous, in order, once)."""
    seen = Contiguity(partitions)
    low, high = size_range(size, spread)
    bad_bodies = 0
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "bench-amqp", "enable.auto.commit": False,
                  "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 10_485_760,
                  "queued.max.messages.kbytes": 262_144})
    try:
        with Meter(b) as m:
            c.assign([TopicPartition(hub, p, 0) for p in range(partitions)])
            deadline = time.perf_counter() + TIMEOUT_S
            while seen.count < count and time.perf_counter() < deadline:
                msgs = c.consume(1000, 1.0)
                if not msgs:
                    continue
                bad_bodies += not low <= len(msgs[0].value() or b"") <= high
                for msg in msgs:
                    if msg.error():
                        if msg.error().code() != KafkaError._PARTITION_EOF:
                            raise RuntimeError(msg.error())
                        continue
                    seen.one(msg.partition(), msg.offset())
            m.stop()
    finally:
        c.close()
    out = m.figures(seen.count)
    out.update(mb_per_s=seen.count * size / m.seconds / 1e6, read=seen.count,
               read_per_partition=list(seen.next), in_order=seen.ok and not bad_bodies)
    return out


# -- a round, and the report --------------------------------------------------------------
def run_round(b: Broker, i: int, count: int, size: int, partitions: int, spread: float = 0.0,
              receivers: int = 1) -> dict:
    out: dict = {}
    amqp_hub, kafka_hub = f"amqp-{i}", f"kafka-{i}"
    create_hub(b.bootstrap, amqp_hub, partitions)
    create_hub(b.bootstrap, kafka_hub, partitions)
    out["amqp_send"] = amqp_send(b, amqp_hub, count, size, partitions, spread)
    out["amqp_receive"] = amqp_receive(b, amqp_hub, count, size, partitions, spread=spread)
    # After the receiver's connection closed: what the broker still holds for it shows as growth
    # from round to round (each round reads a new hub on a new connection).
    out["amqp_receive"]["broker_heap_mb_after"] = b.heap_mb()
    if receivers > 1:  # the same events again, by several receivers at once (outgoing.SharedEvents)
        out["amqp_receive_n"] = amqp_receive(b, amqp_hub, count, size, partitions, spread=spread,
                                             receivers=receivers)
        out["amqp_receive_n"]["broker_heap_mb_after"] = b.heap_mb()
    out["kafka_produce"] = kafka_produce(b, kafka_hub, count, size, partitions, spread)
    out["kafka_consume"] = kafka_consume(b, kafka_hub, count, size, partitions, spread)
    s, r = out["amqp_send"], out["amqp_receive"]
    kp, kc = out["kafka_produce"], out["kafka_consume"]
    out["verified"] = {
        "amqp": s["acked"] == count and r["read"] == count and r["in_order"]
        and r["read_per_partition"] == s["acked_per_partition"]
        and ("amqp_receive_n" not in out or (out["amqp_receive_n"]["read"] == count * receivers
                                              and out["amqp_receive_n"]["in_order"]
                                              and all(seen == s["acked_per_partition"]
                                                      for seen in out["amqp_receive_n"]["read_per_partition"]))),
        "kafka": kp["acked"] == count and kp["offsets_ok"] and kc["read"] == count and kc["in_order"]
        and kc["read_per_partition"] == kp["acked_per_partition"],
    }
    return out


def idle_cpu_util(b: Broker, seconds: float = 2.0) -> float:
    c0 = b.cpu_seconds()
    time.sleep(seconds)
    return (b.cpu_seconds() - c0) / seconds


def loadavg() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except OSError:
        return float("nan")


def _line(label: str, vals: list, fmt: str) -> str:
    """A figure's median (min-max) of the rounds, for --receive-only and --send-only."""
    return (f"{label:36}{format(statistics.median(vals), fmt):>10} "
            f"({format(min(vals), fmt)}-{format(max(vals), fmt)})")


def receive_only(count: int, size: int, partitions: int, spread: float, repeat: int,
                 profile: bool = False, keep_stacks: Path | None = None) -> int:
    """``--receive-only``: one hub written once, then read ``repeat`` times after a warm-up read
    (``profile``: each timed read sampled with py-spy, see bench/amqp_profile.py; its raw
    stacks kept in ``keep_stacks`` if given)."""
    py_spy = amqp_profile.find_py_spy() if profile else None  # (before the broker: a missing one fails fast)
    work = Path(tempfile.mkdtemp(prefix="bench-amqp-"))
    stacks = (keep_stacks or Path(tempfile.mkdtemp(prefix="bench-amqp-stacks-"))) if profile else None
    if stacks is not None:
        stacks.mkdir(parents=True, exist_ok=True)
    load_before = loadavg()
    b = start_broker(work)
    rounds: list[dict] = []
    shares: Counter = Counter()
    try:
        create_hub(b.bootstrap, "receive", partitions)
        sent = amqp_send(b, "receive", count, size, partitions, spread)
        amqp_receive(b, "receive", count, size, partitions, spread=spread)  # warm-up
        for i in range(1, repeat + 1):
            sampler = (amqp_profile.Sampler(py_spy, b.proc.pid, stacks / f"read{i}.txt")
                       if profile else None)
            r = amqp_receive(b, "receive", count, size, partitions, spread=spread, around=sampler)
            if sampler is not None:
                with open(sampler.path) as f:
                    shares += amqp_profile.classify(f)
            r["verified"] = (r["read"] == count and r["in_order"]
                             and r["read_per_partition"] == sent["acked_per_partition"])
            print(f"receive {i}/{repeat}: broker {r['broker_cpu_s_per_100k'] * 1e6 / PER:.3f} us/event, "
                  f"client {r['client_cpu_s_per_100k'] * 1e6 / PER:.3f} us/event, "
                  f"{r['broker_over_client']:.1%}, {r['events_per_s']:,.0f} events/s", flush=True)
            rounds.append(r)
    finally:
        b.stop()
        if stacks is not None and keep_stacks is None:
            shutil.rmtree(stacks, ignore_errors=True)
    load_after = loadavg()

    print(f"\nAMQP receive only: {count:,} events x {size} B, {partitions} partitions, median (min-max) of "
          f"{repeat} read(s); load average {load_before:.2f} before, {load_after:.2f} after")
    print(_line("broker CPU us per event", [r["broker_cpu_s_per_100k"] * 1e6 / PER for r in rounds], ".3f"))
    print(_line("client CPU us per event", [r["client_cpu_s_per_100k"] * 1e6 / PER for r in rounds], ".3f"))
    print(_line("broker / client CPU", [r["broker_over_client"] for r in rounds], ".1%"))
    print(_line("events/s", [r["events_per_s"] for r in rounds], ",.0f"))
    if profile:
        print("(profiled: py-spy's sampling pauses the broker, which raises its CPU figures above)")
        amqp_profile.print_shares(shares, repeat)
    verified = all(r["verified"] for r in rounds)
    print("\nacknowledged == read back (per partition, sequence numbers 0..n-1 in order):", verified)
    return 0 if verified else 1


def send_only(count: int, size: int, partitions: int, spread: float, repeat: int) -> int:
    """``--send-only``: after a warm-up, ``repeat`` rounds of an AMQP send and a Kafka produce of
    the same events, each to a new hub (the acknowledgements checked, nothing read back)."""
    work = Path(tempfile.mkdtemp(prefix="bench-amqp-"))
    load_before = loadavg()
    b = start_broker(work)
    rounds: list[tuple[dict, dict]] = []
    try:
        create_hub(b.bootstrap, "warm", partitions)
        amqp_send(b, "warm", min(count, 20_000), size, partitions, spread)
        kafka_produce(b, "warm", min(count, 20_000), size, partitions, spread)
        for i in range(1, repeat + 1):
            create_hub(b.bootstrap, f"amqp-{i}", partitions)
            create_hub(b.bootstrap, f"kafka-{i}", partitions)
            s = amqp_send(b, f"amqp-{i}", count, size, partitions, spread)
            k = kafka_produce(b, f"kafka-{i}", count, size, partitions, spread)
            s["verified"] = s["acked"] == count and k["acked"] == count and k["offsets_ok"]
            rounds.append((s, k))
            print(f"send {i}/{repeat}: broker {s['broker_cpu_s_per_100k'] * 1e6 / PER:.3f} us/event, "
                  f"client {s['client_cpu_s_per_100k'] * 1e6 / PER:.3f} us/event, "
                  f"{s['broker_over_client']:.1%}; Kafka produce {k['broker_cpu_s_per_100k'] * 1e6 / PER:.3f} "
                  f"us/record", flush=True)
    finally:
        b.stop()
    load_after = loadavg()

    print(f"\nAMQP send only: {count:,} events x {size} B (spread {spread:g}), {partitions} partitions, "
          f"median (min-max) of {repeat} round(s); load average {load_before:.2f} before, {load_after:.2f} after")
    print(_line("broker CPU us per event", [s["broker_cpu_s_per_100k"] * 1e6 / PER for s, _ in rounds], ".3f"))
    print(_line("client CPU us per event", [s["client_cpu_s_per_100k"] * 1e6 / PER for s, _ in rounds], ".3f"))
    print(_line("broker / client CPU", [s["broker_over_client"] for s, _ in rounds], ".1%"))
    print(_line("Kafka produce broker us per record", [k["broker_cpu_s_per_100k"] * 1e6 / PER for _, k in rounds],
                ".3f"))
    print(_line("AMQP send / Kafka produce (broker)",
                [s["broker_cpu_s_per_100k"] / k["broker_cpu_s_per_100k"] for s, k in rounds], ".2f"))
    verified = all(s["verified"] for s, _ in rounds)
    print("\nevery event acknowledged (AMQP), every record acknowledged at offsets 0..n-1 (Kafka):", verified)
    return 0 if verified else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.amqp", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="20,000 events per phase instead of 100,000")
    ap.add_argument("--events", type=int, help="events per phase (default 100,000; --quick 20,000)")
    ap.add_argument("--size", type=int, default=1024, help="event body bytes (default 1024)")
    ap.add_argument("--spread", type=float, default=0.0,
                    help="event sizes drawn evenly within size ± this fraction, e.g. 0.5 (default 0: all one size)")
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--receivers", type=int, default=1, choices=range(1, 6), metavar="N",
                    help="also receive with N receivers at once, 1-5 (the broker's receivers per partition "
                         "in one consumer group); figures per event delivered (default 1: not run)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds (default 3); figures are medians")
    ap.add_argument("--no-json", action="store_true", help="do not write bench/results/")
    ap.add_argument("--receive-only", action="store_true",
                    help="write one hub once, then time only its AMQP receive, --repeat times")
    ap.add_argument("--profile", action="store_true",
                    help="with --receive-only: sample the broker with py-spy during the timed reads and "
                         "print the samples' shares by slice of the receive path")
    ap.add_argument("--stacks", type=Path, metavar="DIR",
                    help="with --profile: keep py-spy's raw stacks of each timed read in DIR (readN.txt)")
    ap.add_argument("--send-only", action="store_true",
                    help="AMQP send and Kafka produce only, each round to new hubs (see above)")
    ap.add_argument("--in-process", action="store_true",
                    help="no broker: time outgoing.batch_events per event, one-length and mixed-length batches")
    args = ap.parse_args(argv)
    count = args.events or (20_000 if args.quick else 100_000)
    if args.profile and not args.receive_only:
        ap.error("--profile goes with --receive-only")
    if args.in_process:
        return amqp_profile.in_process(args.size, args.spread, count, args.repeat, event_bodies)
    if args.send_only:
        return send_only(count, args.size, args.partitions, args.spread, args.repeat)
    if args.receive_only:
        try:
            return receive_only(count, args.size, args.partitions, args.spread, args.repeat, args.profile,
                                args.stacks)
        except amqp_profile.ProfileError as exc:
            print(f"\n*** --profile FAILED: {exc} ***", file=sys.stderr, flush=True)
            return 2

    work = Path(tempfile.mkdtemp(prefix="bench-amqp-"))
    rounds: list[dict] = []
    load_before = loadavg()
    b = start_broker(work)
    try:
        idle = idle_cpu_util(b)
        # Warm-up: first-use costs (imports, SDK and broker code paths) are not what we measure.
        run_round(b, 0, min(count, 2_000), args.size, args.partitions, args.spread, args.receivers)
        for i in range(1, args.repeat + 1):
            print(f"round {i}/{args.repeat}: {count:,} events x {args.size} B, {args.partitions} partitions ...",
                  flush=True)
            rounds.append(run_round(b, i, count, args.size, args.partitions, args.spread, args.receivers))
        threads = b.threads()
    finally:
        b.stop()  # removes the work directory too
    load_after = loadavg()

    def med(phase: str, key: str) -> float:
        return statistics.median(r[phase][key] for r in rounds)

    def spread(phase: str, key: str, fmt: str) -> str:
        vals = [r[phase][key] for r in rounds]
        return f"{format(min(vals), fmt)}-{format(max(vals), fmt)}"

    phases = [("AMQP send (send_batch)", "amqp_send"), ("AMQP receive (receive_batch)", "amqp_receive"),
              ("Kafka produce", "kafka_produce"), ("Kafka consume", "kafka_consume")]
    if args.receivers > 1:
        phases.insert(2, (f"AMQP receive, {args.receivers} receivers", "amqp_receive_n"))
    cols = [("events/s", "events_per_s", ",.0f"), ("broker CPU s/100k", "broker_cpu_s_per_100k", ".2f"),
            ("client CPU s/100k", "client_cpu_s_per_100k", ".2f"), ("broker/client %", "broker_over_client", ".0%"),
            ("broker CPU util", "broker_cpu_util", ".0%"),
            ("broker faults/100k", "broker_minor_faults_per_100k", ",.0f")]
    print(f"\n{count:,} events x {args.size} B, {args.partitions} partitions, median of {args.repeat} "
          f"round(s) (min-max below); {os.cpu_count()} CPUs, load average {load_before:.2f} before, "
          f"{load_after:.2f} after; broker idle CPU {idle:.1%}")
    print(f"{'path':30}" + "".join(f"{label:>20}" for label, _, _ in cols))
    summary: dict = {}
    for label, phase in phases:
        print(f"{label:30}" + "".join(f"{format(med(phase, key), fmt):>20}" for _, key, fmt in cols))
        print(f"{'':30}" + "".join(f"{spread(phase, key, fmt):>20}" for _, key, fmt in cols))
        summary[phase] = {key: med(phase, key) for _, key, _ in cols}

    # Targets, per round then the median: the ratio of two noisy figures is
    # steadier taken within a round (the same machine load) than across medians.
    def ratio(r, a, k):
        kafka = r[k]["broker_cpu_s_per_100k"]
        return r[a]["broker_cpu_s_per_100k"] / kafka if kafka > 0 else float("inf")

    checks = [
        ("AMQP send: broker CPU / client CPU", [r["amqp_send"]["broker_over_client"] for r in rounds],
         BROKER_SHARE_TARGET, ".0%"),
        ("AMQP receive: broker CPU / client CPU", [r["amqp_receive"]["broker_over_client"] for r in rounds],
         BROKER_SHARE_TARGET, ".0%"),
        ("broker cost AMQP send / Kafka produce", [ratio(r, "amqp_send", "kafka_produce") for r in rounds],
         AMQP_KAFKA_TARGET, ".2f"),
        ("broker cost AMQP receive / Kafka consume", [ratio(r, "amqp_receive", "kafka_consume") for r in rounds],
         AMQP_KAFKA_TARGET, ".2f"),
    ]
    print(f"\n{'target':44}{'median':>10}{'min-max':>16}{'target':>10}")
    targets: dict = {}
    for label, vals, limit, fmt in checks:
        m = statistics.median(vals)
        verdict = "PASS" if m <= limit else "MISS"
        targets[label] = {"median": m, "per_round": vals, "target_max": limit, "verdict": verdict}
        print(f"{label:44}{format(m, fmt):>10}{format(min(vals), fmt) + '-' + format(max(vals), fmt):>16}"
              f"{'<= ' + format(limit, fmt):>10}  {verdict}")

    if args.receivers > 1:
        # Per event delivered, beside one receiver's in the same rounds: what sharing a batch's
        # encoded messages between the receivers of a partition saves.
        many = [r["amqp_receive_n"]["broker_cpu_s_per_100k"] / r["amqp_receive"]["broker_cpu_s_per_100k"]
                for r in rounds]
        print(f"\nAMQP receive, broker CPU per event delivered: 1 receiver "
              f"{med('amqp_receive', 'broker_cpu_s_per_100k') * 1e6 / PER:.2f} us, {args.receivers} receivers "
              f"{med('amqp_receive_n', 'broker_cpu_s_per_100k') * 1e6 / PER:.2f} us; ratio per round, median "
              f"{statistics.median(many):.2f} ({min(many):.2f}-{max(many):.2f})")
        summary["receivers_n_over_1"] = {"median": statistics.median(many), "per_round": many}
    print("\nbroker anonymous RSS after each round's AMQP receive (MB): "
          + ", ".join(f"{r['amqp_receive']['broker_heap_mb_after']:.0f}" for r in rounds)
          + ("" if args.receivers == 1 else f"; after the {args.receivers} receivers': "
             + ", ".join(f"{r['amqp_receive_n']['broker_heap_mb_after']:.0f}" for r in rounds)))
    verified = {path: all(r["verified"][path] for r in rounds) for path in ("amqp", "kafka")}
    print("\nacknowledged == read back (per partition, sequence numbers 0..n-1 in order):", verified)
    if not args.no_json:
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"amqp-{time.strftime('%Y%m%d-%H%M%S')}.json"
        path.write_text(json.dumps({
            "benchmark": "amqp", "events": count, "event_bytes": args.size, "size_spread": args.spread,
            "partitions": args.partitions, "receivers": args.receivers,
            "repeat": args.repeat, "broker_idle_cpu_util": idle, "broker_threads": threads,
            "loadavg_before": load_before, "loadavg_after": load_after,
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                        "platform": platform.platform()},
            "summary": summary, "targets": targets, "verified": verified, "rounds": rounds,
            "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        }, indent=2))
        print(f"wrote {path.relative_to(ROOT)}")
    return 0 if all(verified.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
