"""A ``--once`` poll of the log backend's ends (LogBackend.end_offsets) scans each
partition once, and again only the partitions whose ``.batches`` index lags their
``.log``: it scanned the last segment of every partition three times a poll, and
again at each wait for any lagging one (a hub of 1,024 partitions: thousands of
index reads a poll)."""
from __future__ import annotations

import sys
import threading
import time
from collections import Counter
from contextlib import contextmanager

from kafka_wire.log.config import LogConfig
from kafka_wire.log.manager import LogManager
from kafka_wire.log.reader import PartitionReader
from kafka_wire.spark.backend import LogBackend

from ..unit.log.log_helpers import make_batch
from .conftest import produce

NS, HUB, PARTITIONS = "emulatorNs1", "orders", 8

_opened: list[Counter] = []


def _audit(event: str, args) -> None:
    if event == "open" and _opened and str(args[0]).endswith(".batches"):
        _opened[-1][str(args[0]).rsplit("/", 2)[-2]] += 1  # by partition directory


sys.addaudithook(_audit)  # (a hook stays for the process: it counts only inside ``batches_opened``)


@contextmanager
def batches_opened():
    """How often each partition's ``.batches`` is opened inside the block."""
    _opened.append(Counter())
    try:
        yield _opened[-1]
    finally:
        _opened.pop()


def test_a_poll_scans_each_partition_once(broker):
    broker.create_hub(HUB, PARTITIONS)
    acked = produce(broker.bootstrap_servers, HUB, 400, compression="none", partitions=PARTITIONS)
    ends = {(HUB, p): 1 + max(o for q, o in acked if q == p) for p in range(PARTITIONS)}
    deadline = time.monotonic() + 10
    while any(PartitionReader(broker.data_dir / NS / f"{HUB}-{p}").end_offset() != end for (_, p), end in ends.items()):
        assert time.monotonic() < deadline, "the .batches index never listed every event"
        time.sleep(0.02)  # the broker's flusher writes them about once a second
    backend = LogBackend(str(broker.data_dir), NS)
    for _ in range(2):  # a first poll, then one with every header cached
        with batches_opened() as opened:
            assert backend.end_offsets(list(ends)) == ends
        assert opened == {f"{HUB}-{p}": 1 for p in range(PARTITIONS)}


def test_only_a_lagging_partition_is_scanned_again(tmp_path):
    """Partition 3 holds batches its index does not list yet (the broker's flusher
    writes them about once a second): the poll waits for it alone."""
    manager = LogManager(tmp_path / NS, LogConfig())
    try:
        manager.create_topic(HUB, PARTITIONS)
        for p in range(PARTITIONS):
            for i in range(3):
                manager.get_log(HUB, p).append(make_batch(2), now_ms=1_000)
            if p != 3:
                manager.get_log(HUB, p).write_pending_entries()
        keys = [(HUB, p) for p in range(PARTITIONS)]
        backend, got = LogBackend(str(tmp_path), NS), {}
        with batches_opened() as opened:
            poll = threading.Thread(target=lambda: got.update(backend.end_offsets(keys)))
            poll.start()
            deadline = time.monotonic() + 10
            while opened[f"{HUB}-3"] < 3:  # it looked again, more than once
                assert time.monotonic() < deadline and poll.is_alive(), "the poll did not wait for partition 3"
                time.sleep(0.01)
            manager.get_log(HUB, 3).write_pending_entries()  # the flusher's pass
            poll.join(10)
        assert got == {key: 6 for key in keys}
        assert {d: n for d, n in opened.items() if d != f"{HUB}-3"} == {f"{HUB}-{p}": 1 for p in range(PARTITIONS)
                                                                       if p != 3}
    finally:
        manager.close()
