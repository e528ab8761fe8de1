"""Disk full: the data directory is a small tmpfs that we fill up.

Pins: a Produce that cannot be written answers KAFKA_STORAGE_ERROR (56) for
each partition, the broker stays up, records written before are intact and
readable, and once space returns the same partitions accept writes again —
also across a SIGKILL and restart on the once-full disk.
Needs root (mount -t tmpfs); skips loudly with the reason otherwise.
"""
from __future__ import annotations

import os
import random
import subprocess
import time
import warnings

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from kafka_wire import codec
from tests.faults.harness import broker_process, record_figures
from tests.rawclient import RawClient

TOPIC = "diskfull"
PARTITIONS = 2
RECORD = 16 * 1024   # bigger than a page, so a write needs fresh tmpfs pages
_RNG = random.Random(26)  # incompressible values, the same every run


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "disk"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        reason = (f"DISK-FULL TEST SKIPPED: cannot mount an 8 MiB tmpfs at {mnt} "
                  f"(needs root / CAP_SYS_ADMIN): {res.stderr.strip() or res.returncode}")
        warnings.warn(reason)
        print(reason)
        pytest.skip(reason)
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill(path) -> int:
    """Write a filler file until ENOSPC; returns its size."""
    written = 0
    with open(path, "wb", buffering=0) as f:
        for block in (65536, 4096, 512, 1):
            chunk = b"\xaa" * block
            while True:
                try:
                    f.write(chunk)
                    written += block
                except OSError:
                    break
        try:
            os.fsync(f.fileno())
        except OSError:
            pass
    return written


def _produce_one_each(bootstrap: str, tag: bytes) -> dict[int, KafkaError | None]:
    results: dict[int, KafkaError | None] = {}
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False,
                  "message.send.max.retries": 0, "message.timeout.ms": 10000,
                  "compression.type": "none"})

    def cb(err, msg):
        results[msg.partition()] = err
    for part in range(PARTITIONS):
        p.produce(TOPIC, tag + _RNG.randbytes(RECORD), partition=part, on_delivery=cb)
    p.flush(20)
    return results


def _read(bootstrap: str) -> dict[int, list[bytes]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "diskfull-verify",
                  "enable.partition.eof": True, "check.crcs": True, "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    out: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    eof: set[int] = set()
    deadline = time.monotonic() + 30
    while len(eof) < PARTITIONS and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
            eof.add(m.partition())
            continue
        eof.discard(m.partition())
        out[m.partition()].append(m.value())
    c.close()
    return out


def test_full_disk_answers_storage_error_keeps_data_and_recovers_when_space_returns(
        small_disk, tmp_path):
    data = small_disk / "data"
    proc = broker_process(data, log_path=tmp_path / "broker-diskfull.log")  # not on the small disk
    try:
        ct = codec.request_class(codec.ApiKey.CreateTopics)
        with RawClient(proc.bootstrap_servers) as c:
            resp = c.request(codec.ApiKey.CreateTopics, 4, topics=[ct.CreatableTopic(
                name=TOPIC, num_partitions=PARTITIONS, replication_factor=1, assignments=[],
                configs=[])], timeout_ms=5000, validate_only=False)
            assert resp.topics[0].error_code == 0
        before: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        for i in range(20):
            tag = b"before-%03d:" % i
            res = _produce_one_each(proc.bootstrap_servers, tag)
            assert all(err is None for err in res.values()), res
        stored = _read(proc.bootstrap_servers)
        for p in range(PARTITIONS):
            before[p] = stored[p]
            assert len(before[p]) == 20

        filler = small_disk / "filler"
        filled = _fill(filler)
        res = _produce_one_each(proc.bootstrap_servers, b"while-full:")
        codes = {p: (err.code() if err else 0) for p, err in res.items()}
        assert proc.proc.poll() is None, f"broker died on a full disk:\n{proc.output()[-3000:]}"
        assert codes == {p: KafkaError.KAFKA_STORAGE_ERROR for p in range(PARTITIONS)}, codes

        assert _read(proc.bootstrap_servers) == before, "data written before the disk filled changed"

        filler.unlink()
        res = _produce_one_each(proc.bootstrap_servers, b"after-free:")
        assert all(err is None for err in res.values()), \
            f"no recovery once space returned: {res}\n{proc.output()[-2000:]}"
        stored = _read(proc.bootstrap_servers)
        for p in range(PARTITIONS):
            assert stored[p][:20] == before[p]
            assert [v[:11] for v in stored[p][20:]] == [b"after-free:"], stored[p][20:]

        proc.kill()
        proc = broker_process(data, port=proc.port, log_path=tmp_path / "broker-diskfull-2.log")
        assert _read(proc.bootstrap_servers) == stored, "recovery after SIGKILL changed the data"
        res = _produce_one_each(proc.bootstrap_servers, b"after-kill:")
        assert all(err is None for err in res.values()), res
    finally:
        proc.kill()
    record_figures("disk_full", {
        "tmpfs_bytes": 8 * 1024 * 1024, "filler_bytes": filled, "partitions": PARTITIONS,
        "storage_error_codes": codes,
        "command": "make test PYTEST_ARGS='tests/faults/test_disk_full.py'",
    })
