"""PartitionReader reads a transaction marker's record once per segment file, as it
checks its header once: each of Capture's asks (stable end, batches; several a
micro-batch) read every marker of the partition again, a file open and a read
each (a partition of 20,000 aborted transactions: 20,000 opens an ask)."""
from __future__ import annotations

import sys
from collections import Counter
from contextlib import contextmanager

from kafka_wire.log.config import LogConfig
from kafka_wire.log.partition_log import PartitionLog
from kafka_wire.log.reader import PartitionReader

from .log_helpers import make_batch

_opened: list[Counter] = []


def _audit(event: str, args) -> None:
    if event == "open" and _opened and str(args[0]).endswith(".log"):
        _opened[-1][str(args[0]).rsplit("/", 1)[-1]] += 1


sys.addaudithook(_audit)  # (a hook stays for the process: it counts only inside ``log_opens``)


@contextmanager
def log_opens():
    """How often each segment's ``.log`` is opened inside the block."""
    _opened.append(Counter())
    try:
        yield _opened[-1]
    finally:
        _opened.pop()


def test_markers_are_read_once_then_only_each_segment_is_looked_at(tmp_path):
    log = PartitionLog(tmp_path, LogConfig(segment_bytes=2048), now_ms=0)
    try:
        seq = [0, 0, 0]
        for i in range(30):  # transactions of 3 producers, every other one aborted, over several segments
            pid = i % 3
            log.append(make_batch(2, producer_id=pid + 1, base_sequence=seq[pid], transactional=True,
                                  value_size=100), now_ms=0)
            seq[pid] += 2
            log.append(make_batch(1, value_size=100), now_ms=0)
            log.append_control(pid + 1, 0, i % 2 == 1, 0, now_ms=0)
        log.write_pending_entries()
        segments = sorted(p.name for p in tmp_path.glob("*.log"))
        assert len(segments) >= 3
        reader = PartitionReader(tmp_path)
        kept = [b.base_offset for b in reader.batches(0, with_data=False)]
        assert len(kept) == 30 + 15 and reader.stable_end() == log.log_end_offset
        with log_opens() as opened:  # the next asks (three passes): each segment file opened once a pass
            assert reader.stable_end() == log.log_end_offset
            assert [b.base_offset for b in reader.batches(0, with_data=False)] == kept
        assert opened == {name: 3 for name in segments}  # (is it the same file?)
    finally:
        log.close()
