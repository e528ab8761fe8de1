"""Traffic for the console tests: produce with confluent-kafka, consume, commit."""
from __future__ import annotations

import os
import shutil
import time
import urllib.request
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition


def produce(bootstrap: str, hub: str, per_partition: dict[int, int], size: int = 100) -> int:
    """Produce ``per_partition[p]`` events of ``size`` bytes to each partition; returns the total."""
    errors = []
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    for partition, n in per_partition.items():
        for i in range(n):
            p.produce(hub, value=b"x" * size, key=f"k{i}".encode(), partition=partition,
                      on_delivery=lambda err, _m: err and errors.append(err))
            p.poll(0)
    assert p.flush(30) == 0, "producer did not deliver within 30 s"
    assert not errors, errors
    return sum(per_partition.values())


def consume_all(bootstrap: str, hub: str, partitions: int, expected: int, group: str,
                timeout: float = 30) -> int:
    """Read every event of ``hub`` once from the start (assigned, no commits)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "enable.partition.eof": False})
    c.assign([TopicPartition(hub, p, 0) for p in range(partitions)])
    got = 0
    deadline = time.monotonic() + timeout
    try:
        while got < expected and time.monotonic() < deadline:
            msg = c.poll(0.5)
            if msg is not None and not msg.error():
                got += 1
    finally:
        c.close()
    assert got == expected, f"consumed {got} of {expected} events within {timeout} s"
    return got


def commit(bootstrap: str, hub: str, group: str, offsets: dict[int, int]) -> None:
    """Commit a checkpoint for ``group`` without consuming (a group that lags)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(hub, p, o) for p, o in offsets.items()],
                 asynchronous=False)
    finally:
        c.close()


def http_get(url: str, timeout: float = 10) -> tuple[int, str, str]:
    """(status, content type, body) of a GET; error statuses are returned, not raised."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read().decode()


ROOT = Path(__file__).resolve().parents[2]


def screenshot(driver, name: str, max_height: int = 1600) -> Path:
    """The whole page, 1366 px wide, into test-artifacts/``name`` (and, with
    KAFKA_WIRE_UPDATE_DOCS=1, docs/``name`` for the README: tests don't rewrite
    tracked files unless asked)."""
    height, frame = driver.execute_script(
        "return [document.documentElement.scrollHeight, window.outerHeight - window.innerHeight]")
    driver.set_window_size(1366, min(int(height), max_height) + int(frame))
    driver.execute_script("window.scrollTo(0, 0)")
    time.sleep(0.5)  # a layout pass and a chart redraw after the resize
    out = ROOT / "test-artifacts" / name
    out.parent.mkdir(exist_ok=True)
    assert driver.save_screenshot(str(out)), "Chromium did not save the screenshot"
    if os.environ.get("KAFKA_WIRE_UPDATE_DOCS"):
        docs = ROOT / "docs"
        docs.mkdir(exist_ok=True)
        shutil.copyfile(out, docs / name)
    return out
