"""Transaction markers, the last stable offset and the aborted-transaction
index (``.txnindex``), and how recovery rebuilds them."""

from __future__ import annotations

import shutil
import struct
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from kafka.record.default_records import DefaultRecordBatch

from kafka_wire.log import batch as rb
from kafka_wire.log import records as rec
from kafka_wire.log.config import LogConfig
from kafka_wire.log.errors import InvalidProducerEpoch, TransactionCoordinatorFenced
from kafka_wire.log.partition_log import PartitionLog

from .log_helpers import make_batch, read_all

CONFIG = LogConfig(segment_bytes=2048, message_timestamp_type="CreateTime")


def txn(pid: int, seq: int, n: int = 1, *, epoch: int = 0, tag: int = 0) -> bytes:
    return make_batch(n, producer_id=pid, producer_epoch=epoch, base_sequence=seq, transactional=True,
                      tag=tag, value_size=30)


def open_log(path, config=CONFIG) -> PartitionLog:
    return PartitionLog(path, config, now_ms=0)


def txnindex_entries(path: Path) -> list[tuple]:
    out = []
    for p in sorted(path.glob("*.txnindex")):
        data = p.read_bytes()
        assert len(data) % 34 == 0
        out += [struct.unpack_from(">hqqqq", data, i) for i in range(0, len(data), 34)]
    return out


def test_a_marker_is_a_control_batch_kafka_clients_can_decode(tmp_path):
    log = open_log(tmp_path)
    log.append(txn(1, 0), now_ms=5)
    info = log.append_control(1, 0, True, 7, now_ms=9)
    data = bytes(log.read(info.base_offset, 1 << 20))
    assert rb.validate_records(data)[0].is_control
    batch = DefaultRecordBatch(data)
    assert batch.is_control_batch and batch.is_transactional and batch.producer_id == 1
    assert batch.validate_crc()
    (record,) = list(batch)
    assert record.key == struct.pack(">hh", 0, 1)  # version 0, COMMIT
    assert record.value == struct.pack(">hi", 0, 7)  # version 0, coordinator epoch 7
    assert rec.read_control(data, info.headers[0]) == (rec.CONTROL_COMMIT, 7)


def test_log_append_time_topics_stamp_markers_too(tmp_path):
    log = open_log(tmp_path, LogConfig())
    log.append(txn(1, 0), now_ms=5)
    info = log.append_control(1, 0, False, 0, now_ms=42)
    assert info.headers[0].timestamp_type == rb.LOG_APPEND_TIME and info.headers[0].max_timestamp == 42


def test_open_transactions_hold_back_the_last_stable_offset(tmp_path):
    log = open_log(tmp_path)
    log.append(make_batch(2), now_ms=0)  # 0-1, not transactional
    assert log.last_stable_offset == 2
    log.append(txn(1, 0, 2), now_ms=0)  # 2-3
    log.append(txn(2, 0), now_ms=0)  # 4
    log.append(txn(1, 2), now_ms=0)  # 5
    assert log.last_stable_offset == 2 and log.high_watermark == 6
    log.append_control(1, 0, True, 0, now_ms=0)  # 6
    assert log.last_stable_offset == 4
    log.append_control(2, 0, False, 0, now_ms=0)  # 7
    assert log.last_stable_offset == log.high_watermark == 8


def test_an_abort_is_indexed_in_kafka_format_and_a_commit_is_not(tmp_path):
    log = open_log(tmp_path)
    log.append(txn(1, 0, 2), now_ms=0)  # 0-1
    log.append(txn(2, 0), now_ms=0)  # 2
    log.append_control(1, 0, True, 0, now_ms=0)  # 3: commit
    log.append(txn(1, 2), now_ms=0)  # 4
    log.append_control(1, 0, False, 0, now_ms=0)  # 5: abort while 2's transaction is still open
    log.append_control(2, 0, False, 0, now_ms=0)  # 6
    # version, producer id, first offset, last offset (the marker), LSO after the abort
    assert txnindex_entries(tmp_path) == [(0, 1, 4, 5, 2), (0, 2, 2, 6, 7)]
    assert log.aborted_transactions(0, 7) == [(1, 4), (2, 2)]
    assert log.aborted_transactions(5, 7) == [(1, 4), (2, 2)]
    assert log.aborted_transactions(0, 2) == []


def test_a_marker_for_a_transaction_without_data_here_is_not_indexed(tmp_path):
    log = open_log(tmp_path)
    log.append_control(9, 0, False, 0, now_ms=0)
    assert log.log_end_offset == 1 and txnindex_entries(tmp_path) == []
    assert log.describe_producers()[0].producer_id == 9


def test_stale_markers_are_fenced(tmp_path):
    log = open_log(tmp_path)
    log.append(txn(1, 0, epoch=3), now_ms=0)
    log.append_control(1, 3, True, 5, now_ms=0)
    with pytest.raises(InvalidProducerEpoch):
        log.append_control(1, 2, False, 5, now_ms=0)
    with pytest.raises(TransactionCoordinatorFenced):
        log.append_control(1, 3, False, 4, now_ms=0)
    assert log.log_end_offset == 2


def test_a_marker_with_a_bumped_epoch_resets_the_sequence(tmp_path):
    """The coordinator aborts a timed-out transaction with epoch + 1 (KIP-890):
    the producer's next batch at the new epoch starts again at sequence 0."""
    log = open_log(tmp_path)
    log.append(txn(1, 0, 3), now_ms=0)
    log.append_control(1, 1, False, 0, now_ms=0)
    with pytest.raises(InvalidProducerEpoch):
        log.append(txn(1, 3), now_ms=0)
    log.append(txn(1, 0, epoch=1), now_ms=0)


def test_aborted_transactions_are_found_across_segments(tmp_path):
    log = open_log(tmp_path)
    log.append(txn(1, 0, 3), now_ms=0)
    seq = 0
    for i in range(30):  # a long transaction of producer 2 spans several segments
        log.append(txn(2, seq, 3, tag=i), now_ms=0)
        seq += 3
    log.append_control(1, 0, False, 0, now_ms=0)
    log.append_control(2, 0, False, 0, now_ms=0)
    assert len(log.segments) > 2
    end = log.log_end_offset
    assert log.aborted_transactions(0, end) == [(1, 0), (2, 3)]
    assert log.aborted_transactions(40, end) == [(1, 0), (2, 3)]  # producer 1's marker lies ahead


# -- recovery ------------------------------------------------------------------------


def build_with_aborts(path):
    log = open_log(path)
    for i in range(12):
        pid = 1 + i % 3
        log.append(txn(pid, (i // 3) * 2, 2, tag=i), now_ms=i)
        if i % 3 == 2:
            log.append_control(1, 0, False, 0, now_ms=i)
            log.append_control(2, 0, True, 0, now_ms=i)
            log.append_control(3, 0, False, 0, now_ms=i)
    log.append(txn(1, 8, 2), now_ms=50)  # left open
    return log


@pytest.mark.parametrize("damage", ["delete", "truncate", "garbage"])
def test_recovery_rebuilds_a_damaged_txnindex_from_the_markers(tmp_path, damage):
    log = build_with_aborts(tmp_path)
    expected = txnindex_entries(tmp_path)
    lso, answer = log.last_stable_offset, log.aborted_transactions(0, log.log_end_offset)
    log.close()
    target = sorted(tmp_path.glob("*.txnindex"))[0]
    if damage == "delete":
        target.unlink()
    elif damage == "truncate":
        target.write_bytes(target.read_bytes()[:-5])
    else:
        target.write_bytes(target.read_bytes() + b"\x00\x07junk")
    again = open_log(tmp_path)
    if damage != "delete":  # a missing index of a cleanly closed segment looks like "no aborts"
        assert txnindex_entries(tmp_path) == expected
        assert again.aborted_transactions(0, again.log_end_offset) == answer
    assert again.last_stable_offset == lso


def test_a_crash_keeps_open_transactions_and_rebuilds_the_active_txnindex(tmp_path):
    log = build_with_aborts(tmp_path)
    expected = txnindex_entries(tmp_path)
    lso = log.last_stable_offset
    for p in tmp_path.glob("*.snapshot"):
        p.unlink()  # the rebuild has to read every marker
    active = log.active_segment.txn_index.path
    log.abandon()
    active.unlink(missing_ok=True)
    again = open_log(tmp_path)
    assert txnindex_entries(tmp_path) == expected
    assert again.last_stable_offset == lso < again.log_end_offset
    again.append_control(1, 0, True, 0, now_ms=99)
    assert again.last_stable_offset == again.log_end_offset


def test_an_entry_whose_marker_was_lost_in_a_crash_is_dropped(tmp_path):
    log = open_log(tmp_path)
    log.append(txn(1, 0), now_ms=0)
    info = log.append_control(1, 0, False, 0, now_ms=0)
    seg = log.active_segment
    log.abandon()
    with open(seg.log_path, "r+b") as f:  # the marker's bytes never reached the disk
        f.seek(info.position - seg.base_position)
        f.write(b"\0" * info.headers[0].size)
    again = open_log(tmp_path)
    assert again.log_end_offset == 1 and txnindex_entries(tmp_path) == []
    assert again.last_stable_offset == 0  # the transaction is open again


def test_truncating_before_a_marker_reopens_its_transaction(tmp_path):
    log = open_log(tmp_path)
    log.append(txn(1, 0, 2), now_ms=0)
    log.append_control(1, 0, False, 0, now_ms=0)
    log.append(make_batch(1), now_ms=0)
    assert log.last_stable_offset == 4 and len(txnindex_entries(tmp_path)) == 1
    log.truncate_to(2)
    assert log.last_stable_offset == 0 and txnindex_entries(tmp_path) == []
    log.append_control(1, 0, True, 0, now_ms=0)
    assert log.last_stable_offset == 3


# -- read_committed never sees aborted data ------------------------------------------


def read_committed(log) -> list[tuple[int, bytes]]:
    """(offset, value) a read_committed consumer returns, using the broker's
    LSO and aborted-transaction list the way Kafka's Fetcher does."""
    lso = log.last_stable_offset
    data = read_all(log, upper=lso)
    aborted = sorted(log.aborted_transactions(log.log_start_offset, lso), key=lambda a: a[1])
    aborting: set[int] = set()
    out = []
    for p, header in rb.iter_batches(data):
        while aborted and aborted[0][1] <= header.last_offset:
            aborting.add(aborted.pop(0)[0])
        if header.is_control:
            kind, _ = rec.read_control(data[p : p + header.size], header)
            if kind == rec.CONTROL_ABORT:
                aborting.discard(header.producer_id)
            continue
        if header.is_transactional and header.producer_id in aborting:
            continue
        out += [(r.offset, r.value) for r in DefaultRecordBatch(data[p : p + header.size])]
    return out


class ReadCommittedMachine(RuleBasedStateMachine):
    """Producers write transactional and plain batches, commit or abort; the
    log rolls, crashes and recovers. A read_committed view never holds a
    record of an aborted or open transaction and holds every other record
    below the LSO."""

    PIDS = (1, 2, 3)

    @initialize()
    def setup(self):
        self.dir = Path(tempfile.mkdtemp(prefix="txn-"))
        self.config = LogConfig(segment_bytes=1024, message_timestamp_type="CreateTime")
        self.log = open_log(self.dir, self.config)
        self.seq = {p: 0 for p in self.PIDS}
        self.open: dict[int, list[bytes]] = {}  # producer -> values of its open transaction
        self.fate: dict[bytes, str] = {}  # value -> "committed" / "aborted" / "open" / "plain"
        self.tag = 0

    def teardown(self):
        if hasattr(self, "log"):
            self.log.abandon()
            shutil.rmtree(self.dir, ignore_errors=True)

    @rule(pid=st.sampled_from(PIDS), n=st.integers(1, 3))
    def write_in_transaction(self, pid, n):
        self.tag += 1
        blob = txn(pid, self.seq[pid], n, tag=self.tag)
        self.log.append(blob, now_ms=0)
        self.seq[pid] += n
        values = [f"{self.tag}:{j}:".encode().ljust(30, b"x") for j in range(n)]
        self.open.setdefault(pid, []).extend(values)
        for v in values:
            self.fate[v] = "open"

    @rule(n=st.integers(1, 3))
    def write_plain(self, n):
        self.tag += 1
        self.log.append(make_batch(n, tag=self.tag, value_size=30), now_ms=0)
        for j in range(n):
            self.fate[f"{self.tag}:{j}:".encode().ljust(30, b"x")] = "plain"

    @precondition(lambda self: self.open)
    @rule(data=st.data(), commit=st.booleans())
    def end_transaction(self, data, commit):
        pid = data.draw(st.sampled_from(sorted(self.open)))
        self.log.append_control(pid, 0, commit, 0, now_ms=0)
        for v in self.open.pop(pid):
            self.fate[v] = "committed" if commit else "aborted"

    @rule()
    def roll(self):
        self.log.roll()

    @rule(clean=st.booleans())
    def restart(self, clean):
        if clean:
            self.log.close()
        else:
            self.log.abandon()
        self.log = open_log(self.dir, self.config)

    @invariant()
    def read_committed_sees_exactly_the_committed_records(self):
        seen = [v for _, v in read_committed(self.log)]
        assert len(seen) == len(set(seen))
        assert all(self.fate[v] in ("committed", "plain") for v in seen)
        # Everything committed or plain below the LSO is there.
        lso = self.log.last_stable_offset
        everything = read_all(self.log, upper=lso)
        expected = []
        for p, h in rb.iter_batches(everything):
            if h.is_control:
                continue
            for r in DefaultRecordBatch(everything[p : p + h.size]):
                if self.fate[r.value] in ("committed", "plain"):
                    expected.append(r.value)
        assert seen == expected
        first_open = min((self.log_offsets_of_open()), default=None)
        if first_open is not None:
            assert lso == first_open

    @invariant()
    def hidden_batches_are_exactly_markers_and_aborted_data(self):
        """What the console's explorer skips, batch by batch (PartitionLog.hidden)."""
        data = read_all(self.log, upper=self.log.last_stable_offset)
        for p, h in rb.iter_batches(data):
            if h.is_control:
                expected = True
            else:
                fates = {self.fate[r.value] for r in DefaultRecordBatch(data[p : p + h.size])}
                assert len(fates) == 1
                expected = fates == {"aborted"}
            assert self.log.hidden(h) == expected, h

    def log_offsets_of_open(self):
        data = read_all(self.log)
        for p, h in rb.iter_batches(data):
            if h.is_transactional and not h.is_control and h.producer_id in self.open:
                values = set(self.open[h.producer_id])
                for r in DefaultRecordBatch(data[p : p + h.size]):
                    if r.value in values:
                        yield r.offset
                        break


ReadCommittedMachine.TestCase.settings = settings(
    max_examples=40, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_read_committed_never_returns_aborted_records = ReadCommittedMachine.TestCase
