"""Hostile input: a structure-aware fuzzer over every advertised (api, version).

Hypothesis builds valid requests from Kafka's schemas (the generator of
tests/unit/kafka_wire/test_codec.py); each is sent as is and as byte-level
mutants (flipped, inserted, deleted and duplicated bytes; length prefixes,
string lengths, array counts and compact varints rewritten to huge or
negative values), pipelined over several connections, reconnecting when the
broker closes one (allowed). Pins: the broker process never dies, its peak
RSS stays bounded although frames claim up to 2 GiB, and a confluent-kafka
producer and consumer keep working throughout with nothing lost.
20,000 frames under ``make test``, 1,000,000 under ``make soak``.

Also here: topic names with path tricks are refused everywhere a name
enters (CreateTopics, auto-creation by Metadata, Produce) and no file
appears outside the data directory.
"""
from __future__ import annotations

import queue
import random
import re
import socket
import struct
import threading
import time

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from kafka_wire import codec
from tests.faults.harness import Traffic, broker_process, proc_memory_kib, record_figures, run_seed, scaled
from tests.rawclient import RawClient
from tests.unit.kafka_wire.test_codec import CASES, _request

MAX_REQUEST = 1024 * 1024
CONNECTIONS = 6
RSS_LIMIT_KIB = 512 * 1024
HUGE = [2**31 - 1, 2**31 - 2, -2, -2**31, 0x7FFFFFF0, 65535, 32767, -1, 0]


def _frame(api_key: int, version: int, body: bytes, corr: int) -> bytes:
    header = struct.pack(">hhih", api_key, version, corr, 4) + b"fuzz"
    if codec.is_flexible(api_key, version):
        header += b"\x00"
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def _mutate(frame: bytes, rng: random.Random) -> tuple[bytes, bool]:
    """One to three byte-level mutations of a length-prefixed frame. Returns
    the mutant and whether its length prefix claims more bytes than follow
    (then the sender closes the connection after it: a torn frame)."""
    body = bytearray(frame[4:])
    rewrite_prefix = False
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(9)
        n = len(body)
        pos = rng.randrange(n) if n else 0
        if op == 0 and n:                       # bit flip
            body[pos] ^= 1 << rng.randrange(8)
        elif op == 1:                           # insert random bytes
            body[pos:pos] = rng.randbytes(rng.randint(1, 8))
        elif op == 2 and n:                     # delete a run
            del body[pos:pos + rng.randint(1, 8)]
        elif op == 3 and n:                     # duplicate a run
            run = body[pos:pos + rng.randint(1, 32)]
            body[pos:pos] = run
        elif op == 4 and n >= 4:                # an int32 (array count, bytes length) → huge
            p = rng.randrange(max(1, n - 3))
            body[p:p + 4] = struct.pack(">i", rng.choice(HUGE))
        elif op == 5 and n >= 2:                # an int16 (string length) → huge/negative
            p = rng.randrange(max(1, n - 1))
            body[p:p + 2] = struct.pack(">h", rng.choice([32767, -2, -32768, 1000]))
        elif op == 6 and n:                     # a compact varint → huge / overlong / zero
            body[pos:pos + 1] = rng.choice([b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\x07",
                                            b"\x80\x80\x80\x80\x80\x01", b"\x00"])
        elif op == 7:                           # truncate
            del body[pos:]
        elif op == 8:                           # lie in the length prefix
            rewrite_prefix = True
    size = len(body)
    if rewrite_prefix:
        size = rng.choice([len(body) + rng.randint(1, 64), max(0, len(body) - rng.randint(1, 8)),
                           MAX_REQUEST + 1, 2**31 - 1, -1, 0])
    return struct.pack(">i", size) + body, size > len(body)


_PROBE_BASE = 0x70000000
PROBE_WAIT = 0.25   # seconds to wait for a probe's answer before giving up on a connection


class _Conn:
    """A fuzzing connection. Each mutant is pipelined with an ApiVersions
    probe; the probe's answer (or the broker closing the connection) shows
    that the broker has dealt with the mutant."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.sock.settimeout(PROBE_WAIT)
        self.buf = b""
        self.probe = _PROBE_BASE

    def send_with_probe(self, frame: bytes) -> str:
        """'answered', 'closed' (by the broker) or 'stalled' (no answer in time)."""
        self.probe += 1
        probe = struct.pack(">ihhih", 10, codec.ApiKey.ApiVersions, 0, self.probe, -1)
        try:
            self.sock.sendall(frame + probe)
            while True:
                while len(self.buf) >= 8:
                    size, corr = struct.unpack_from(">ii", self.buf)
                    if len(self.buf) < 4 + size:
                        break
                    self.buf = self.buf[4 + size:]
                    if corr == self.probe:
                        return "answered"
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    return "closed"
                self.buf += chunk
        except socket.timeout:
            return "stalled"
        except OSError:
            return "closed"

    def send_torn(self, frame: bytes) -> None:
        try:
            self.sock.sendall(frame)
        except OSError:
            pass

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


def test_fuzzed_frames_never_kill_broker_nor_exceed_memory_and_traffic_continues(tmp_path):
    target = scaled(20_000, 1_000_000)
    fuzz_seed = run_seed("fuzz", 142)
    proc = broker_process(tmp_path / "data", extra=["--max-request-bytes", str(MAX_REQUEST)])
    pid, port = proc.proc.pid, proc.port
    stats = {"frames": 0, "valid_frames": 0, "mutants": 0, "torn_frames": 0, "answered": 0,
             "closed_by_broker": 0, "stalled": 0}
    lock = threading.Lock()
    jobs: queue.Queue = queue.Queue(maxsize=4 * CONNECTIONS)
    deadline = time.monotonic() + scaled(150, 8 * 3600)
    mutants_per_example = 24
    examples = target // (mutants_per_example + 1) + 1
    started = time.monotonic()
    baseline = proc_memory_kib(pid)["VmRSS"]
    corr = [0]
    stop = threading.Event()

    def worker(n: int) -> None:
        rng = random.Random(fuzz_seed * 1000 + n)
        conn = _Conn(port)
        try:
            while not stop.is_set():
                try:
                    frame = jobs.get(timeout=0.2)
                except queue.Empty:
                    continue
                outcomes = []
                outcomes.append(conn.send_with_probe(frame))
                if outcomes[-1] != "answered":
                    conn.close()
                    conn = _Conn(port)
                for _ in range(mutants_per_example):
                    mutant, torn = _mutate(frame, rng)
                    if torn:
                        conn.send_torn(mutant)
                        outcome = "torn"
                    else:
                        outcome = conn.send_with_probe(mutant)
                    outcomes.append(outcome)
                    if outcome != "answered":
                        conn.close()
                        conn = _Conn(port)
                with lock:
                    stats["valid_frames"] += 1
                    stats["mutants"] += mutants_per_example
                    stats["frames"] += 1 + mutants_per_example
                    stats["torn_frames"] += outcomes.count("torn")
                    stats["answered"] += outcomes.count("answered")
                    stats["closed_by_broker"] += outcomes.count("closed")
                    stats["stalled"] += outcomes.count("stalled")
        finally:
            conn.close()

    @seed(fuzz_seed)
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(CASES), st.data())
    def fuzz(case, data):
        api_key, version = case
        body = bytes(_request(api_key, version, data.draw).encode(version=version))
        if stats["frames"] + jobs.qsize() * (mutants_per_example + 1) >= target \
                or time.monotonic() > deadline:
            return  # (after drawing: hypothesis wants the same draws on a replay)
        corr[0] += 1
        jobs.put(_frame(api_key, version, body, corr[0]), timeout=60)
        assert proc.proc.poll() is None, f"broker died (seed {fuzz_seed}):\n{proc.output()[-3000:]}"

    steady = codec.request_class(codec.ApiKey.CreateTopics)
    with RawClient(proc.bootstrap_servers) as admin:
        admin.request(codec.ApiKey.CreateTopics, 4, topics=[steady.CreatableTopic(
            name="steady", num_partitions=1, replication_factor=1, assignments=[], configs=[])],
            timeout_ms=5000, validate_only=False)
    workers = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(CONNECTIONS)]
    peak_seen = baseline
    try:
        with Traffic(proc.bootstrap_servers, "steady", rate_per_s=100) as traffic:
            for w in workers:
                w.start()
            while stats["frames"] < target and time.monotonic() < deadline:
                fuzz()
                peak_seen = max(peak_seen, proc_memory_kib(pid)["VmRSS"])
            while not jobs.empty() and time.monotonic() < deadline:
                time.sleep(0.05)
            stop.set()
            for w in workers:
                w.join(10)
        assert proc.proc.poll() is None, f"broker died (seed {fuzz_seed}):\n{proc.output()[-3000:]}"
        mem = proc_memory_kib(pid)
        with RawClient(proc.bootstrap_servers) as c:  # still serving a fresh connection
            assert c.request(codec.ApiKey.ApiVersions, 0).error_code == 0
    finally:
        stop.set()
        proc.kill()
    handler_failures = sorted(set(re.findall(r"handler for api key (\d+ v\d+) failed", proc.output())))
    assert stats["frames"] >= target, f"sent only {stats['frames']} frames before the time limit"
    # Each connection may hold at most one frame of max_request_bytes; the rest is slack
    # for the log, the steady traffic and Python's allocator.
    bound = baseline + (CONNECTIONS * MAX_REQUEST + 96 * 1024 * 1024) // 1024
    assert mem["VmHWM"] < min(bound, RSS_LIMIT_KIB), \
        f"broker peak RSS {mem['VmHWM']} KiB (started at {baseline}, bound {bound})"
    assert not traffic.errors, traffic.errors[:5]
    assert traffic.acked, "the steady producer made no progress"
    assert not traffic.missing(), f"{len(traffic.missing())} acknowledged records not consumed"
    record_figures("fuzz", {
        "seed": fuzz_seed, **stats, "connections": CONNECTIONS,
        "api_versions_covered": len(CASES), "max_request_bytes": MAX_REQUEST,
        "broker_rss_start_kib": baseline, "broker_peak_rss_kib": mem["VmHWM"],
        "steady_records_acked": len(traffic.acked),
        "handler_exceptions": handler_failures,
        "duration_s": round(time.monotonic() - started, 1),
        "command": "make test PYTEST_ARGS='tests/faults/test_fuzz_frames.py'",
    })


def _one_record() -> bytes:
    from kafka.record.memory_records import MemoryRecordsBuilder
    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 16)
    b.append(timestamp=None, key=None, value=b"x", headers=[])
    b.close()
    return bytes(b.buffer())


BAD_NAMES = ["..", ".", "../escape", "a/b", "/abs", "a\x00b", "x" * 300, "a\\b", "", "ab c"]


def test_topic_names_with_path_tricks_are_refused_everywhere(tmp_path):
    proc = broker_process(tmp_path / "data")
    data_dir = tmp_path / "data"
    before = {p for p in tmp_path.rglob("*")}
    ct = codec.request_class(codec.ApiKey.CreateTopics)
    with RawClient(proc.bootstrap_servers) as c:
        for name in BAD_NAMES:
            resp = c.request(codec.ApiKey.CreateTopics, 4, topics=[ct.CreatableTopic(
                name=name, num_partitions=1, replication_factor=1, assignments=[], configs=[])],
                timeout_ms=5000, validate_only=False)
            code = resp.topics[0].error_code
            assert code == 17, f"CreateTopics {name[:40]!r}: error {code}, expected INVALID_TOPIC_EXCEPTION"
            md = codec.request_class(codec.ApiKey.Metadata)
            resp = c.request(codec.ApiKey.Metadata, 9, topics=[md.MetadataRequestTopic(name=name)],
                             allow_auto_topic_creation=True, include_cluster_authorized_operations=False,
                             include_topic_authorized_operations=False)
            code = resp.topics[0].error_code
            assert code in (17, 3), f"Metadata auto-create {name[:40]!r}: error {code}"
            pr = codec.request_class(codec.ApiKey.Produce)
            resp = c.request(codec.ApiKey.Produce, 9, transactional_id=None, acks=-1,
                             timeout_ms=5000, topic_data=[pr.TopicProduceData(
                                 name=name, partition_data=[pr.TopicProduceData.PartitionProduceData(
                                     index=0, records=_one_record())])])
            code = resp.responses[0].partition_responses[0].error_code
            assert code in (17, 3), f"Produce to {name[:40]!r}: error {code}"
    created = {p for p in tmp_path.rglob("*")} - before
    outside = [p for p in created if data_dir not in p.parents and p != data_dir
               and not p.name.startswith("broker-")]
    assert not outside, f"files created outside the data dir: {outside}"
    for p in created:
        rel = p.relative_to(data_dir) if data_dir in p.parents else p
        assert ".." not in rel.parts and "escape" not in str(rel), p
    assert proc.proc.poll() is None
