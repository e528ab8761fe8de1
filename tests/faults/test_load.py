"""Load: 1,000 concurrent connections against the broker process.

Pins: with ~960 idle connections (each did ApiVersions), 20 producers and 20
consumers for 30 s (10 minutes under ``make soak``), there are no delivery or consume errors, every
acknowledged record is consumed, every idle connection still answers, and
the broker's peak RSS stays bounded; end-to-end latency (timestamp in the
payload) is reported as p50/p99. A client that pipelines Fetch requests and
never reads the responses does not grow broker memory without bound.
"""
from __future__ import annotations

import os
import random
import resource
import socket
import struct
import threading
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kafka_wire import codec
from tests.faults.harness import broker_process, percentile, proc_memory_kib, record_figures, scaled
from tests.rawclient import RawClient

CONNECTIONS = 1000
PRODUCERS = 20
CONSUMERS = 20
RATE_PER_PRODUCER = 25          # records/s; 500/s in all
DURATION_S = 30             # make soak: 600
RSS_LIMIT_KIB = 768 * 1024
LATENCY_P99_LIMIT_S = 1.0


def _raise_fd_limit(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(need, soft)), hard))


def _create_topic(bootstrap: str, name: str, partitions: int) -> None:
    ct = codec.request_class(codec.ApiKey.CreateTopics)
    with RawClient(bootstrap) as c:
        resp = c.request(codec.ApiKey.CreateTopics, 4, topics=[ct.CreatableTopic(
            name=name, num_partitions=partitions, replication_factor=1, assignments=[],
            configs=[])], timeout_ms=5000, validate_only=False)
        assert resp.topics[0].error_code == 0, resp


def _api_versions_frame(corr: int) -> bytes:
    return struct.pack(">ihhih", 10, codec.ApiKey.ApiVersions, 0, corr, -1)


def _read_frame(sock: socket.socket) -> bytes:
    def exact(n):
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by broker")
            buf += chunk
        return buf
    (size,) = struct.unpack(">i", exact(4))
    return exact(size)


def _socket_count(pid: int) -> int:
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                n += 1
        except OSError:
            pass
    return n


def test_thousand_connections_no_errors_bounded_memory_and_latency(tmp_path):
    duration = scaled(DURATION_S, 600)
    idle_count = CONNECTIONS - PRODUCERS - CONSUMERS
    _raise_fd_limit(CONNECTIONS * 2 + 512)
    proc = broker_process(tmp_path / "data")
    pid, bootstrap = proc.proc.pid, proc.bootstrap_servers
    idle: list[socket.socket] = []
    errors: list[str] = []
    latencies: list[list[float]] = [[] for _ in range(CONSUMERS)]
    acked = [0] * PRODUCERS
    consumed = [0] * CONSUMERS
    stop = threading.Event()
    producers_done = threading.Event()
    samples = {"peak_rss_kib": 0, "peak_sockets": 0}
    try:
        _create_topic(bootstrap, "load", PRODUCERS)
        for i in range(idle_count):
            s = socket.create_connection(("127.0.0.1", proc.port), timeout=10)
            s.sendall(_api_versions_frame(i))
            idle.append(s)
        for i, s in enumerate(idle):
            # ApiVersions v0 answer: correlation id, then error code 0
            assert struct.unpack_from(">ih", _read_frame(s)) == (i, 0)
        start_rss = proc_memory_kib(pid)["VmRSS"]

        def produce(n: int) -> None:
            p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
                          "client.id": f"load-p{n}"})

            def cb(err, msg):
                if err is not None:
                    errors.append(f"producer {n}: {err}")
                else:
                    acked[n] += 1
            seq, next_at = 0, time.monotonic()
            while not stop.is_set():
                p.produce("load", struct.pack(">qq", time.time_ns(), seq) + b"x" * 84,
                          partition=n, on_delivery=cb)
                seq += 1
                next_at += 1.0 / RATE_PER_PRODUCER
                while (wait := next_at - time.monotonic()) > 0 and not stop.is_set():
                    p.poll(wait)   # returns early when a delivery report arrives
            if p.flush(30):
                errors.append(f"producer {n}: records left unflushed")

        def consume(n: int) -> None:
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"load-c{n}",
                          "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                          "client.id": f"load-c{n}"})
            c.assign([TopicPartition("load", n, 0)])
            while not (producers_done.is_set() and consumed[n] >= acked[n]):
                if producers_done.is_set() and time.monotonic() > drain_deadline[0]:
                    break
                m = c.poll(0.2)   # (consume(n, t) would wait for n messages: added latency)
                if m is not None:
                    if m.error():
                        if m.error().code() != KafkaError._PARTITION_EOF:
                            errors.append(f"consumer {n}: {m.error()}")
                        continue
                    sent_ns = struct.unpack_from(">q", m.value())[0]
                    latencies[n].append((time.time_ns() - sent_ns) / 1e9)
                    consumed[n] += 1
            c.close()

        def monitor() -> None:
            while not stop.is_set() or not producers_done.is_set():
                try:
                    mem = proc_memory_kib(pid)
                    samples["peak_rss_kib"] = max(samples["peak_rss_kib"], mem["VmHWM"])
                    samples["peak_sockets"] = max(samples["peak_sockets"], _socket_count(pid))
                except OSError:
                    return
                producers_done.wait(1)   # a sample a second; none to sit out at the end

        drain_deadline = [float("inf")]
        threads = ([threading.Thread(target=produce, args=(n,), daemon=True) for n in range(PRODUCERS)]
                   + [threading.Thread(target=consume, args=(n,), daemon=True) for n in range(CONSUMERS)])
        mon = threading.Thread(target=monitor, daemon=True)
        started = time.monotonic()
        for t in threads:
            t.start()
        mon.start()
        time.sleep(duration)
        stop.set()
        for t in threads[:PRODUCERS]:
            t.join(60)
        drain_deadline[0] = time.monotonic() + 30
        producers_done.set()
        for t in threads[PRODUCERS:]:
            t.join(60)
        mon.join(5)
        elapsed = time.monotonic() - started
        # Every idle connection is still open and answers (all asked, then all read).
        dead = 0
        asked = []
        for i, s in enumerate(idle):
            try:
                s.sendall(_api_versions_frame(100_000 + i))
                asked.append((i, s))
            except OSError:
                dead += 1
        for i, s in asked:
            try:
                if struct.unpack_from(">i", _read_frame(s))[0] != 100_000 + i:
                    dead += 1  # answered, but not this request
            except OSError:
                dead += 1
        mem = proc_memory_kib(pid)
        assert proc.proc.poll() is None, "broker died under load"
    finally:
        for s in idle:
            s.close()
        proc.kill()
    all_lat = [x for lat in latencies for x in lat]
    figures = {
        "connections": CONNECTIONS, "idle_connections": idle_count, "producers": PRODUCERS,
        "consumers": CONSUMERS, "duration_s": round(elapsed, 1),
        "records_acked": sum(acked), "records_consumed": sum(consumed),
        "throughput_records_per_s": round(sum(acked) / elapsed, 1),
        "latency_p50_ms": round(percentile(all_lat, 0.50) * 1000, 1),
        "latency_p99_ms": round(percentile(all_lat, 0.99) * 1000, 1),
        "latency_max_ms": round(max(all_lat, default=float("nan")) * 1000, 1),
        "broker_rss_after_connect_kib": start_rss, "broker_peak_rss_kib": mem["VmHWM"],
        "broker_rss_anon_at_end_kib": mem.get("RssAnon"),
        "broker_rss_file_at_end_kib": mem.get("RssFile"),
        "broker_peak_open_sockets": samples["peak_sockets"], "errors": len(errors),
        "idle_connections_dead": dead,
        "command": "make test PYTEST_ARGS='tests/faults/test_load.py'",
    }
    record_figures("load", figures)
    assert not errors, errors[:10]
    assert dead == 0, f"{dead} idle connections were dropped"
    assert sum(acked) > PRODUCERS * RATE_PER_PRODUCER * duration * 0.5, "producers too slow"
    assert consumed == acked, "acknowledged records not consumed"
    assert samples["peak_sockets"] >= CONNECTIONS, samples
    assert mem["VmHWM"] < RSS_LIMIT_KIB, f"broker peak RSS {mem['VmHWM']} KiB"
    assert figures["latency_p99_ms"] < LATENCY_P99_LIMIT_S * 1000


def _fetch_frame(corr: int, topic: str) -> bytes:
    req = codec.request_class(codec.ApiKey.Fetch)
    body = bytes(req(version=4, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                     isolation_level=0, topics=[req.FetchTopic(topic=topic, partitions=[
                         req.FetchTopic.FetchPartition(partition=0, fetch_offset=0,
                                                       partition_max_bytes=1 << 20)])])
                 .encode(version=4))
    payload = struct.pack(">hhih", codec.ApiKey.Fetch, 4, corr, 4) + b"slow" + body
    return struct.pack(">i", len(payload)) + payload


def test_client_that_never_reads_fetch_responses_does_not_grow_broker_memory(tmp_path):
    proc = broker_process(tmp_path / "data")
    pid, bootstrap = proc.proc.pid, proc.bootstrap_servers
    try:
        _create_topic(bootstrap, "slow", 1)
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20})
        rng = random.Random(228)  # incompressible values, the same every run
        for i in range(400):   # ~4 MB: every Fetch answer is ~1 MB
            p.produce("slow", rng.randbytes(10_000), partition=0)
        assert p.flush(30) == 0
        before = proc_memory_kib(pid)["VmRSS"]
        sockets_before = _socket_count(pid)
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
        s.connect(("127.0.0.1", proc.port))
        s.settimeout(3)
        sent_bytes = requests = 0
        chunk = b"".join(_fetch_frame(i, "slow") for i in range(1000))
        deadline = time.monotonic() + scaled(20, 120)
        blocked = False
        while time.monotonic() < deadline and sent_bytes < 64 * 1024 * 1024:
            try:
                s.sendall(chunk)
            except socket.timeout:
                blocked = True   # the broker stopped reading us: back-pressure reached the socket
                break
            sent_bytes += len(chunk)
            requests += 1000
        peak_during = proc_memory_kib(pid)
        # Another client is served meanwhile.
        with RawClient(bootstrap) as c:
            assert c.request(codec.ApiKey.ApiVersions, 0).error_code == 0
        s.close()
        # The figure after the close: once the broker has let go of the slow connection.
        closed_by = time.monotonic() + 10
        while _socket_count(pid) > sockets_before and time.monotonic() < closed_by:
            time.sleep(0.02)
        assert proc.proc.poll() is None
        after = proc_memory_kib(pid)
    finally:
        proc.kill()
    growth = peak_during["VmHWM"] - before
    record_figures("slow_consumer", {
        "fetch_requests_sent_unread": requests, "request_bytes_sent": sent_bytes,
        "response_bytes_if_all_answered": requests * 1_000_000, "sender_blocked": blocked,
        "broker_rss_before_kib": before, "broker_peak_rss_kib": peak_during["VmHWM"],
        "broker_rss_growth_kib": growth, "broker_rss_after_close_kib": after["VmRSS"],
        "command": "make test PYTEST_ARGS='tests/faults/test_load.py'",
    })
    assert blocked, "the broker kept reading requests from a client that never reads"
    # The connection's request queue (16 MiB) plus one response in flight, with slack.
    assert growth < 128 * 1024, f"broker RSS grew by {growth} KiB for one slow consumer"


def test_fetch_long_poll_wakes_for_an_append_handled_in_the_same_loop_iteration(broker):
    """A Fetch that finds nothing and a Produce handled right after it, before the
    Fetch's long poll has started waiting, must still wake the Fetch (it once
    slept out max_wait_ms: p99 latency under load was fetch.wait.max.ms)."""
    from kafka.record.memory_records import MemoryRecordsBuilder

    broker.create_hub("wake")
    pr = codec.request_class(codec.ApiKey.Produce)
    b = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 16)
    b.append(timestamp=None, key=None, value=b"wake-up", headers=[])
    b.close()
    produce_body = bytes(pr(version=9, transactional_id=None, acks=1, timeout_ms=5000,
                            topic_data=[pr.TopicProduceData(name="wake", partition_data=[
                                pr.TopicProduceData.PartitionProduceData(
                                    index=0, records=bytes(b.buffer()))])]).encode(version=9))
    fr = codec.request_class(codec.ApiKey.Fetch)
    fetch_body = bytes(fr(version=4, replica_id=-1, max_wait_ms=3000, min_bytes=1,
                          max_bytes=1 << 20, isolation_level=0, topics=[fr.FetchTopic(
                              topic="wake", partitions=[fr.FetchTopic.FetchPartition(
                                  partition=0, fetch_offset=0, partition_max_bytes=1 << 20)])])
                       .encode(version=4))
    waits = []
    for attempt in range(5):
        with RawClient(broker.bootstrap_servers) as fetcher, \
                RawClient(broker.bootstrap_servers) as producer:
            fetcher.request(codec.ApiKey.ApiVersions, 0)
            producer.request(codec.ApiKey.ApiVersions, 0)
            # Hold the event loop so both requests are read in one iteration, Fetch first.
            hold = threading.Thread(target=broker.call, args=(time.sleep, 0.3))
            hold.start()
            time.sleep(0.05)
            fetcher.send_raw(fetcher.frame(codec.ApiKey.Fetch, 4, fetch_body))
            time.sleep(0.02)
            producer.send_raw(producer.frame(codec.ApiKey.Produce, 9, produce_body))
            hold.join()
            t0 = time.monotonic()
            resp = fetcher.read_response(codec.ApiKey.Fetch, 4)
            waits.append(time.monotonic() - t0)
            producer.read_response(codec.ApiKey.Produce, 9)
        part = resp.responses[0].partitions[0]
        assert part.error_code == 0 and part.high_watermark == attempt + 1
        # The next round fetches from the new end.
        fetch_body = bytes(fr(version=4, replica_id=-1, max_wait_ms=3000, min_bytes=1,
                              max_bytes=1 << 20, isolation_level=0, topics=[fr.FetchTopic(
                                  topic="wake", partitions=[fr.FetchTopic.FetchPartition(
                                      partition=0, fetch_offset=attempt + 1,
                                      partition_max_bytes=1 << 20)])]).encode(version=4))
    assert max(waits) < 1.5, f"Fetch slept through an append: waits {waits}"
