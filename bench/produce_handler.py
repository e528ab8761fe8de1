"""CPU of the Produce handler alone (issue 30, small requests and many partitions): an
in-process broker, a real request captured from a client, then the handler called on it
again and again, timed with the calling thread's CPU clock (the machine's other load
moves it far less than wall time or the broker's CPU in a whole-broker bench).

Three kinds of Produce request: ``small``, one 100 B record to one partition (what librdkafka sends
with linger.ms=0, one partition a request), ``multi``, one 1 KiB record to each of 958
partitions of a Dedicated hub in one request (what kafka-python and the Java producer
send when many partitions are ready), and ``spread``, every request librdkafka (client
defaults) sends for 30,000 × 1 KiB records round robin over 1,000 partitions, as in
bench.partitions (one partition a request, tens of records each), the handler called on
each in turn. Every call appends for real, to the log on disk.

And one Fetch mode, ``fetch``: the Fetch requests a confluent-kafka consumer sends to
read 2,000 one-record batches with max.partition.fetch.bytes=1 (bench.small_requests'
consumer: one batch, so one record, per request), captured as frames and fed, in order
and again and again, through a Kafka connection with a transport that only counts
what it is given: framing, header, decoding, the handler, its log read, encoding and
the connection's glue, per request, without the socket, librdkafka or the event loop.

    python -m bench.produce_handler [--repeat 5] [--modes fetch] [--against /path/to/other/tree]

BENCH_PROFILE=1 in the environment adds, per mode and tree, one pass under cProfile: its
top functions by own time, to stderr.

``--against`` runs the same measurement on another checkout (for example
``git worktree add /tmp/before <commit>``) in alternation, and prints the ratio.
"""
from __future__ import annotations

import argparse
from functools import partial
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CALLS = {"small": 20_000, "multi": 60, "spread": 1,  # spread, fetch: passes over the captured requests
         "fetch": 10}
FETCH_RECORDS = 2000
SPREAD_RECORDS, SPREAD_PARTITIONS = 30_000, 1000
CONFIG = """default_namespace = "handlerbench"
[namespaces.handlerbench]
tier = "Dedicated"
capacity_units = 1
[namespaces.handlerbench.eventhubs.wide]
partitions = 1024
[namespaces.handlerbench.eventhubs.one]
partitions = 1
"""


class _CountingTransport:
    """What a KafkaConnection writes to, counted and dropped."""

    def __init__(self) -> None:
        self.written = 0
        self.aborted = False

    def write(self, data) -> None:
        self.written += len(data)

    def writelines(self, chunks) -> None:
        for c in chunks:
            self.written += len(c)

    def get_extra_info(self, name, default=None):
        return ("127.0.0.1", 1) if name == "peername" else default

    def pause_reading(self) -> None:
        pass

    resume_reading = pause_reading

    def is_closing(self) -> bool:
        return False

    def abort(self) -> None:
        self.aborted = True

    close = abort


def _profiling() -> bool:
    """BENCH_PROFILE=1 (not 0, not empty) asks for the extra pass under cProfile."""
    return os.environ.get("BENCH_PROFILE", "0").strip().lower() not in ("", "0", "false", "no")


def fetch_child(calls: int) -> None:
    """Print the median µs per Fetch request (5 rounds of ``calls`` passes); with
    BENCH_PROFILE=1 in the environment, one more pass under cProfile, its top
    functions by own time to stderr."""
    import gc
    import struct
    import tempfile
    import time

    from confluent_kafka import Consumer, Producer, TopicPartition

    from kafka_wire import codec
    from kafka_wire.server import KafkaConnection
    from kafka_wire.testing import EmulatedBroker

    work = Path(tempfile.mkdtemp(prefix="bench-handler-"))
    frames, conns = [], []
    handle = KafkaConnection._handle

    def grab(self, frame):
        if frame[0:2] == b"\x00\x01":  # api key 1: Fetch
            frames.append(bytes(frame))  # (the scratch buffer is reused)
            conns.append(self)
        return handle(self, frame)

    with EmulatedBroker(work / "data") as b:  # the default namespace, as `serve` runs it
        b.create_hub("small")
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 0,
                      "batch.num.messages": 1, "enable.idempotence": False})
        for _ in range(FETCH_RECORDS):
            while True:
                try:
                    p.produce("small", b"x" * 100, partition=0)
                    break
                except BufferError:
                    p.poll(0.005)
        if p.flush(60):
            raise RuntimeError("the producer did not finish")
        KafkaConnection._handle = grab
        try:
            c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "small",
                          "enable.auto.commit": False, "max.partition.fetch.bytes": 1,
                          "fetch.wait.max.ms": 100})
            c.assign([TopicPartition("small", 0, 0)])
            got, deadline = 0, time.monotonic() + 120
            while got < FETCH_RECORDS and time.monotonic() < deadline:
                got += sum(m.error() is None for m in c.consume(10_000, 0.5))
            c.close()
        finally:
            KafkaConnection._handle = handle
        if got < FETCH_RECORDS:
            raise RuntimeError(f"the consumer read {got} of {FETCH_RECORDS}")
        # Only the requests that find their record (not the long polls at the end).
        reads = []
        for frame, conn in zip(frames, conns):
            header = codec.parse_request_header(memoryview(frame))
            request = codec.decode_request(header, memoryview(frame))
            if all(p.fetch_offset < FETCH_RECORDS for t in request.topics for p in t.partitions):
                reads.append(struct.pack(">i", len(frame)) + frame)
        if len(reads) < FETCH_RECORDS // 2:
            raise RuntimeError(f"only {len(reads)} Fetch requests were captured")
        conn = KafkaConnection(conns[0].server)
        transport = _CountingTransport()
        conn.connection_made(transport)
        conn.state = conns[0].state  # the consumer's authenticated connection
        clock = time.thread_time
        rounds = []
        gc.disable()
        for _ in range(5):
            t0 = clock()
            for _ in range(calls):
                for data in reads:
                    buf = conn.get_buffer(-1)
                    buf[:len(data)] = data
                    conn.buffer_updated(len(data))
            rounds.append((clock() - t0) / (calls * len(reads)) * 1e6)
        gc.enable()
        if _profiling():
            import cProfile
            import pstats
            prof = cProfile.Profile()
            prof.enable()
            for data in reads:
                buf = conn.get_buffer(-1)
                buf[:len(data)] = data
                conn.buffer_updated(len(data))
            prof.disable()
            pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(45)
        conn.connection_lost(None)
        if transport.aborted or transport.written < calls * len(reads) * 100:
            raise RuntimeError("the connection was closed, or its answers carried no records")
    shutil.rmtree(work, ignore_errors=True)
    print(f"{statistics.median(rounds)} 1")


def child(mode: str, calls: int) -> None:
    """In the tree on sys.path: print the handler's median µs per call over 5 rounds."""
    import dataclasses
    import gc
    import tempfile
    import time

    from kafka_wire.apis import registry
    from kafka_wire.testing import EmulatedBroker

    work = Path(tempfile.mkdtemp(prefix="bench-handler-"))
    (work / "ns.toml").write_text(CONFIG)
    captured = []
    with EmulatedBroker(work / "data", config_file=work / "ns.toml") as b:
        registry.load_all()
        reg = registry.lookup(0)

        def grab(request, ctx, handler=reg.handler):
            parts = sum(len(t.partition_data) for t in request.topic_data)
            if mode == "spread" and parts and request.topic_data[0].name == "wide" or \
                    mode != "spread" and not captured and parts >= (1 if mode == "small" else 900):
                for t in request.topic_data:  # the frame's buffer is reused: keep copies
                    for pd in t.partition_data:
                        pd.records = bytearray(pd.records)
                captured.append((request, ctx, parts))
            return handler(request, ctx)

        registry._REGISTRY[0] = dataclasses.replace(reg, handler=grab)
        if mode == "small":
            from confluent_kafka import Producer
            p = Producer({"bootstrap.servers": b.bootstrap_servers, "linger.ms": 0,
                          "batch.num.messages": 1, "enable.idempotence": False})
            for _ in range(10):
                p.produce("one", b"x" * 100)
            if p.flush(30):
                raise RuntimeError("the producer did not finish")
        elif mode == "spread":
            from confluent_kafka import Producer
            p = Producer({"bootstrap.servers": b.bootstrap_servers})  # client defaults, as a user has them
            p.list_topics(timeout=30)
            value = os.urandom(1024)
            for i in range(SPREAD_RECORDS):
                while True:
                    try:
                        p.produce("wide", value, partition=i % SPREAD_PARTITIONS)
                        break
                    except BufferError:
                        p.poll(0.005)
            if p.flush(60):
                raise RuntimeError("the producer did not finish")
        else:
            from kafka import KafkaProducer
            # Not idempotent: kafka-python 3 is by default, and then every replay after the
            # first is a duplicate the log answers without appending (what was measured before).
            p = KafkaProducer(bootstrap_servers=b.bootstrap_servers, linger_ms=60_000, batch_size=1 << 20,
                              enable_idempotence=False)
            p.partitions_for("wide")
            for i in range(958):
                p.send("wide", os.urandom(1024), partition=i)
            p.flush(60)
            p.close()
        registry._REGISTRY[0] = reg
        if not captured:
            raise RuntimeError(f"no {mode} request was captured")
        handler, clock = reg.handler, time.thread_time
        rounds = []
        gc.disable()
        if mode == "spread":  # µs per request, each request one partition
            parts = 1
            for _ in range(5):
                t0 = clock()
                for _ in range(calls):
                    for request, ctx, _parts in captured:
                        handler(request, ctx)
                rounds.append((clock() - t0) / (calls * len(captured)) * 1e6)
        else:
            request, ctx, parts = captured[0]
            for _ in range(5):
                t0 = clock()
                for _ in range(calls):
                    handler(request, ctx)
                rounds.append((clock() - t0) / calls * 1e6)
        gc.enable()
        if _profiling():  # as fetch_child: one more pass under cProfile
            import cProfile
            import pstats
            prof = cProfile.Profile()
            prof.enable()
            for _ in range(calls):
                for request, ctx, _parts in captured:
                    handler(request, ctx)
            prof.disable()
            pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(30)
    shutil.rmtree(work, ignore_errors=True)  # the spread runs write hundreds of MB
    print(f"{statistics.median(rounds)} {parts}")


def measure(tree: Path, mode: str) -> tuple[float, int]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", mode], cwd=tree, env=env,
                         capture_output=True, text=True, timeout=600)
    if out.returncode:
        raise RuntimeError(f"{tree}: {out.stderr[-2000:]}")
    if _profiling():  # (the child's profile: captured with its output)
        sys.stderr.write(f"=== {mode} in {tree}\n{out.stderr}")
    us, parts = out.stdout.split()[-2:]
    return float(us), int(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="alternating rounds (each a median of 5)")
    ap.add_argument("--against", type=Path, help="another checkout, measured in alternation")
    ap.add_argument("--modes", default=",".join(CALLS), help="which requests, of " + ",".join(CALLS))
    ap.add_argument("--child", choices=sorted(CALLS), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        (fetch_child if args.child == "fetch" else partial(child, args.child))(CALLS[args.child])
        return 0
    modes = [m for m in args.modes.split(",") if m in CALLS]
    trees = [ROOT] + ([args.against.resolve()] if args.against else [])
    results: dict = {}
    for _ in range(args.repeat):
        for tree in trees:
            for mode in modes:
                results.setdefault((tree, mode), []).append(measure(tree, mode))
    print(f"Produce and Fetch handler CPU (thread time), medians of {args.repeat} alternating rounds")
    print(f"{'request':<40} {'this tree':>12} {'--against':>12} {'ratio':>7}")
    for mode in modes:
        parts = results[(ROOT, mode)][0][1]
        here = statistics.median(us for us, _ in results[(ROOT, mode)]) / parts
        label = f"{mode}: µs per " + ("request" if mode == "fetch" else f"partition ({parts}/request)")
        if args.against:
            there = statistics.median(us for us, _ in results[(trees[1], mode)]) / parts
            print(f"{label:<40} {here:>12.2f} {there:>12.2f} {here / there:>7.2f}")
        else:
            print(f"{label:<40} {here:>12.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
