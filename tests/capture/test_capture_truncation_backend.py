"""Capture's log backend goes on reading after the log it reads was cut (no Spark).

A capture job keeps one PartitionReader per partition for its whole run. When the broker
cut the active segment (PartitionLog.truncate_to: a geo promotion, a replica truncated to
its leader) the reader kept the cut batches, every read of them raised LogChanged, and
LogBackend.read gave up after five tries: Capture stopped."""

from __future__ import annotations

from kafka_wire.log.config import LogConfig
from kafka_wire.log.partition_log import PartitionLog
from kafka_wire.spark.backend import LogBackend
from tests.unit.log.log_helpers import make_batch

NS, HUB = "emulatorNs1", "cut"


def test_reads_and_ends_follow_a_cut_of_the_active_segment(tmp_path):
    log = PartitionLog(tmp_path / NS / f"{HUB}-0", LogConfig(), now_ms=0)
    try:
        for i in range(10):
            log.append(make_batch(2, value_size=100, tag=i), now_ms=0)
        log.write_pending_entries()
        backend = LogBackend(str(tmp_path), NS)
        assert backend.end_offsets([(HUB, 0)]) == {(HUB, 0): 20}
        assert [b.base_offset for b in backend.read(HUB, 0, 0, 20)] == list(range(0, 20, 2))

        log.truncate_to(14)  # as a promotion or a replica's cut does, then appends go on
        log.append(make_batch(3, value_size=150, tag=99), now_ms=0)
        log.write_pending_entries()

        assert backend.end_offsets([(HUB, 0)]) == {(HUB, 0): 17}
        refs, end = backend.refs(HUB, 0, 10)
        assert end == 17 and [(r.base_offset, r.next_offset) for r in refs] == [(10, 12), (12, 14), (14, 17)]
        read = list(backend.read(HUB, 0, 10, 17))
        assert [(b.base_offset, b.next_offset) for b in read] == [(10, 12), (12, 14), (14, 17)]
        assert all(b.data is not None and len(b.data) == b.size for b in read)
        backend.close()
    finally:
        log.close()
