"""kill -9 of a broker holding many partitions, some of them being written: at the
next start no partition is recovered (start-up reads no segment), each one the
crash left unclean is recovered when it is first read, and every acknowledged
record is there, once, in order. Partitions closed cleanly before keep their
clean-shutdown marker until they are used."""
from __future__ import annotations

import re
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.faults.harness import AckedWriter

PARTITIONS = 600
WRITTEN = range(0, 200)  # written when the broker is killed
CAP = ["--log-max-open-files", "64"]  # below what 200 active partitions hold: files close and reopen


def read_all(bootstrap: str, topic: str, partitions, timeout: float = 60) -> dict[int, list[bytes]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "verify", "enable.partition.eof": True})
    c.assign([TopicPartition(topic, p, 0) for p in partitions])
    out: dict[int, list[bytes]] = {p: [] for p in partitions}
    eof: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while len(eof) < len(out) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                eof.add(m.partition())
                continue
            eof.discard(m.partition())
            out[m.partition()].append(m.value())
    finally:
        c.close()
    assert len(eof) == len(out), f"only {len(eof)} of {len(out)} partitions read to their end in {timeout} s"
    return out


def batches_file(data_dir, topic: str, partition: int) -> tuple[int, int, int]:
    """Which file and how modified: opening a partition resizes it, recovery replaces it."""
    (path,) = data_dir.glob(f"*/{topic}-{partition}/00000000000000000000.batches")
    st = path.stat()
    return st.st_ino, st.st_mtime_ns, st.st_size


def recovered(output: str, topic: str) -> set[int]:
    """Partitions whose active segment this broker recovered (its INFO log line)."""
    found = re.findall(rf"/{topic}-(\d+)/\d+\.log: rebuilt indexes \(unclean shutdown\)", output)
    return {int(p) for p in found}


def marker(data_dir, topic: str, partition: int) -> bool:
    (path,) = data_dir.glob(f"*/{topic}-{partition}")
    return (path / "clean-shutdown").exists()


def test_kill_9_with_600_partitions_recovers_each_on_first_use_and_keeps_every_ack(broker_process):
    topic = "wide"
    proc = broker_process(extra=CAP)
    admin = AdminClient({"bootstrap.servers": proc.bootstrap_servers})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    acked: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    p = Producer({"bootstrap.servers": proc.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for part in range(PARTITIONS):  # every partition gets data, then a clean shutdown
        p.produce(topic, b"first-%d" % part, partition=part)
    assert p.flush(60) == 0
    for part in range(PARTITIONS):
        acked[part].append(b"first-%d" % part)
    del p
    assert proc.terminate() == 0
    assert all(marker(proc.data_dir, topic, part) for part in range(PARTITIONS))

    proc = broker_process(port=proc.port, extra=CAP)
    p = Producer({"bootstrap.servers": proc.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for part in WRITTEN:  # each opened (so unclean from here) before the load below
        p.produce(topic, b"second-%d" % part, partition=part)
    assert p.flush(60) == 0
    for part in WRITTEN:
        acked[part].append(b"second-%d" % part)
    del p
    writer = AckedWriter(proc.bootstrap_servers, topic, WRITTEN, acked)
    writer.wait_for(22 * len(WRITTEN), 30)
    proc.kill()  # records in flight: some acknowledged, some not
    writer.stop()
    assert writer.written() >= 7 * len(WRITTEN), "too little written before the kill"
    # Those written since the start were opened, which took their marker: unclean now.
    unclean = [part for part in range(PARTITIONS) if not marker(proc.data_dir, topic, part)]
    assert set(WRITTEN) <= set(unclean)
    # Not written since the clean shutdown: still marked clean (but for the few a retention
    # pass, at most 64 every 30 s, may have opened meanwhile).
    untouched = {part for part in range(len(WRITTEN), PARTITIONS) if marker(proc.data_dir, topic, part)}
    assert len(untouched) >= PARTITIONS - len(WRITTEN) - 64
    before = {part: batches_file(proc.data_dir, topic, part) for part in unclean}

    proc = broker_process(port=proc.port, extra=CAP)
    # Started and serving, and no partition recovered or even opened: opening resizes the
    # .batches file (recovery replaces it) and removes the marker.
    assert {part: batches_file(proc.data_dir, topic, part) for part in unclean} == before
    assert recovered(proc.output(), topic) == set()
    opened = [part for part in untouched if not marker(proc.data_dir, topic, part)]
    assert not opened, f"start-up opened partitions {opened}"

    stored = read_all(proc.bootstrap_servers, topic, range(PARTITIONS))
    # Read, so recovered: each unclean partition on this first use, no other.
    assert recovered(proc.output(), topic) == set(unclean)
    for part in range(PARTITIONS):
        got = stored[part]
        assert len(got) == len(set(got)), f"partition {part}: duplicate records after recovery"
        positions = {v: i for i, v in enumerate(got)}
        missing = [v for v in acked[part] if v not in positions]
        assert not missing, f"partition {part}: {len(missing)} acknowledged records lost"
        idx = [positions[v] for v in acked[part]]
        assert idx == sorted(idx), f"partition {part}: acknowledged records out of order"

    # Recovered partitions take appends where their log ends.
    p = Producer({"bootstrap.servers": proc.bootstrap_servers, "acks": "all"})
    for part in (WRITTEN[0], WRITTEN[-1], PARTITIONS - 1):
        p.produce(topic, b"after-%d" % part, partition=part)
    assert p.flush(30) == 0
    again = read_all(proc.bootstrap_servers, topic, [WRITTEN[0], WRITTEN[-1], PARTITIONS - 1])
    for part, got in again.items():
        assert got == stored[part] + [b"after-%d" % part]
    assert proc.terminate() == 0
