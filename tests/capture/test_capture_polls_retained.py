"""A Capture poll of the log backend (end_offsets, then refs from the checkpoint) reads
what is new, not the retained log: refs' scan from the checkpoint dropped the segments
below it from the partition reader's cache, and the next end_offsets read and
CRC-checked every retained batch again (37 segments, 2.4 MB: 2.17 MB a poll)."""
from __future__ import annotations

import os

from kafka_wire.log.batch import BatchHeader
from kafka_wire.log.config import LogConfig
from kafka_wire.log.manager import LogManager
from kafka_wire.spark.backend import LogBackend

from ..unit.log.log_helpers import make_batch

NS, HUB = "emulatorNs1", "orders"


def test_polls_read_what_is_new_not_the_retained_log(tmp_path, monkeypatch):
    manager = LogManager(tmp_path / NS, LogConfig(segment_bytes=16 * 1024))
    try:
        manager.create_topic(HUB, 2)
        for p in range(2):
            for i in range(300):
                manager.get_log(HUB, p).append(make_batch(5, value_size=40), now_ms=1_000 + i)
            manager.get_log(HUB, p).write_pending_entries()
        keys = [(HUB, 0), (HUB, 1)]
        retained = sum(f.stat().st_size for f in (tmp_path / NS).glob(f"{HUB}-*/*.log"))
        read = [0]
        real = os.pread

        def counting(fd, n, pos):
            data = real(fd, n, pos)
            read[0] += len(data)
            return data

        monkeypatch.setattr(os, "pread", counting)
        backend = LogBackend(str(tmp_path), NS)

        def capture_poll() -> dict:
            ends = backend.end_offsets(keys)
            return {key: backend.refs(*key, end - 3) for key, end in ends.items()}

        capture_poll()  # the first poll reads each log once
        read[0] = 0
        for _ in range(3):
            before = capture_poll()
        assert read[0] < 3 * 2 * 1024, f"{read[0]} bytes read in 3 polls of a {retained}-byte log, nothing new"

        new = make_batch(5, value_size=40)
        manager.get_log(HUB, 1).append(new, now_ms=9_000)
        manager.get_log(HUB, 1).write_pending_entries()
        read[0] = 0
        after = capture_poll()
        assert read[0] < len(new) + 2 * 1024, f"{read[0]} bytes read for one new {len(new)}-byte batch"
        assert after[(HUB, 0)] == before[(HUB, 0)]
        refs, end = after[(HUB, 1)]
        assert end == before[(HUB, 1)][1] + 5 and refs[-1].base_offset == end - 5
    finally:
        manager.close()


def test_a_poll_with_nothing_new_costs_the_same_for_a_longer_log(tmp_path, monkeypatch):
    """end_offsets' ends() walked every retained batch header from the log start in
    Python at each poll (6,000 batches: 8 ms); a poll looks at the headers from its
    checkpoint only, whatever the log retains."""
    looked = {}
    for n in (100, 600):
        manager = LogManager(tmp_path / str(n) / NS, LogConfig(segment_bytes=16 * 1024))
        try:
            manager.create_topic(HUB, 1)
            for i in range(n):
                manager.get_log(HUB, 0).append(make_batch(5, value_size=40), now_ms=1_000 + i)
            manager.get_log(HUB, 0).write_pending_entries()
            backend = LogBackend(str(tmp_path / str(n)), NS)
            key = (HUB, 0)

            def capture_poll() -> tuple:
                end = backend.end_offsets([key])[key]
                return end, backend.refs(HUB, 0, end - 10)

            first = capture_poll()  # the first poll reads the log once
            assert first[0] == 5 * n
            seen = [0]
            real = BatchHeader.is_control

            def counting(header):
                seen[0] += 1
                return real.fget(header)

            monkeypatch.setattr(BatchHeader, "is_control", property(counting))
            assert capture_poll() == first
            monkeypatch.setattr(BatchHeader, "is_control", real)
            looked[n] = seen[0]
        finally:
            manager.close()
    assert looked[100] == looked[600] <= 2, f"batch headers looked at a poll with nothing new: {looked}"
