"""PartitionReader reads each ``.txnindex`` once until it changes: Capture asks a
partition's reader for its stable end and its batches several times a micro-batch
(planning, replanning, reading), and every ask read every segment's file again.
A file that grows (an abort), is rewritten (truncation) or goes with its segment
is read again, and the reader answers as a new one would."""
from __future__ import annotations

import sys
from collections import Counter
from contextlib import contextmanager

from kafka_wire.log.config import LogConfig
from kafka_wire.log.partition_log import PartitionLog
from kafka_wire.log.reader import PartitionReader

from .log_helpers import make_batch

_opened: list[list[str]] = []


def _audit(event: str, args) -> None:
    if event == "open" and _opened and str(args[0]).endswith(".txnindex"):
        _opened[-1].append(str(args[0]).rsplit("/", 1)[-1])


sys.addaudithook(_audit)  # (a hook stays for the process: it records only inside ``opens``)


@contextmanager
def opens():
    """The ``.txnindex`` files opened (io.open and os.open alike) inside the block, by name."""
    _opened.append([])
    try:
        yield _opened[-1]
    finally:
        _opened.pop()


def abort(log: PartitionLog, pid: int, seq: int, now: int = 0) -> None:
    log.append(make_batch(2, producer_id=pid, base_sequence=seq, transactional=True, value_size=200), now_ms=now)
    log.append(make_batch(1, value_size=200), now_ms=now)
    log.append_control(pid, 0, False, 0, now_ms=now)


def micro_batch(reader: PartitionReader) -> tuple[int, list[int]]:
    """What Capture asks of one partition in a micro-batch: ends to plan, the batches
    planned, then again to replan and once more to read them."""
    end = reader.stable_end()
    seen = [b.base_offset for b in reader.batches(0, end, with_data=False)]
    assert [b.base_offset for b in reader.batches(0, with_data=False)] == seen
    assert [b.base_offset for b in reader.batches(0, end)] == seen
    return end, seen


def same_answers(cached: PartitionReader, log: PartitionLog) -> None:
    fresh = PartitionReader(log.directory)
    assert micro_batch(cached) == micro_batch(fresh)
    end = log.log_end_offset
    for pid in (1, 2, 3):
        assert [cached._aborted_index().holds(pid, o) for o in range(end)] == [
            fresh._aborted_index().holds(pid, o) for o in range(end)]


def test_each_txnindex_is_read_once_until_it_changes(tmp_path):
    log = PartitionLog(tmp_path, LogConfig(segment_bytes=2048), now_ms=0)
    try:
        for i in range(12):
            abort(log, 1 + i % 3, 2 * (i // 3))
        log.write_pending_entries()
        files = sorted(p.name for p in tmp_path.glob("*.txnindex"))
        assert len(files) >= 3
        reader = PartitionReader(tmp_path)
        with opens() as opened:
            micro_batch(reader)
        assert Counter(opened) == {name: 1 for name in files}
        with opens() as opened:
            micro_batch(reader)  # the next micro-batch, nothing changed
        assert opened == []

        abort(log, 1, 8)  # grows the active segment's file
        log.write_pending_entries()
        grown = sorted(p.name for p in tmp_path.glob("*.txnindex"))[-1]
        with opens() as opened:
            micro_batch(reader)
        assert opened == [grown]  # only it, once
        same_answers(reader, log)

        # A file rewritten in place (as recovery's rebuild and truncation do) and
        # segments going (DeleteRecords) are seen too.
        rebuilt = log.segments[1].txn_index
        rebuilt.replace(rebuilt.entries[:-1])
        same_answers(reader, log)
        log.delete_records_before(log.segments[2].base_offset)
        same_answers(reader, log)
        abort(log, 2, 8)
        log.write_pending_entries()
        same_answers(reader, log)
    finally:
        log.close()
