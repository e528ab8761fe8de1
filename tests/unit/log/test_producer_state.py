"""Idempotent producers: sequence checks, duplicates, epochs, producer-state
snapshots and recovery (log/producer_state.py through PartitionLog)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import kafka.errors as Errors
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kafka_wire.log import batch as rb
from kafka_wire.log.config import LogConfig
from kafka_wire.log.errors import (
    InvalidProducerEpoch,
    InvalidRecord,
    InvalidTxnState,
    OutOfOrderSequence,
    ProducerStateError,
    UnknownProducerId,
)
from kafka_wire.log.partition_log import PartitionLog
from kafka_wire.log.producer_state import SNAPSHOT_SUFFIX, snapshot_path
from kafka_wire.log.records import control_batch

from .log_helpers import make_batch, read_all, records_of

CONFIG = LogConfig(segment_bytes=4096, message_timestamp_type="CreateTime")
PID = 1000
INT32_MAX = 2**31 - 1


def batch(seq: int, n: int = 1, *, epoch: int = 0, pid: int = PID, tag: int | None = None, **kw) -> bytes:
    return make_batch(n, producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                      tag=seq if tag is None else tag, value_size=40, **kw)


def open_log(path, config=CONFIG, now=0) -> PartitionLog:
    return PartitionLog(path, config, now_ms=now)


def test_errors_carry_their_kafka_codes():
    assert OutOfOrderSequence.error_code == Errors.OutOfOrderSequenceNumberError.errno == 45
    assert InvalidProducerEpoch.error_code == Errors.InvalidProducerEpochError.errno
    assert UnknownProducerId.error_code == Errors.UnknownProducerIdError.errno
    assert InvalidTxnState.error_code == Errors.InvalidTxnStateError.errno


def test_a_retried_batch_is_not_written_again_and_gets_its_original_offsets(tmp_path):
    log = open_log(tmp_path)
    first = log.append(batch(0, 3), now_ms=10)
    log.append(batch(3, 2), now_ms=20)
    again = log.append(batch(0, 3), now_ms=30)
    assert again.duplicate and not first.duplicate
    assert (again.base_offset, again.last_offset) == (0, 2)
    assert again.position == first.position and again.append_time_ms == first.append_time_ms
    assert log.log_end_offset == 5
    assert [o for o, _, _ in records_of(read_all(log))] == [0, 1, 2, 3, 4]


def test_only_the_last_five_batches_are_remembered(tmp_path):
    log = open_log(tmp_path)
    for i in range(6):
        log.append(batch(i), now_ms=i)
    for i in range(1, 6):
        assert log.append(batch(i), now_ms=10).duplicate
    with pytest.raises(OutOfOrderSequence):
        log.append(batch(0), now_ms=10)


def test_a_sequence_gap_is_out_of_order_and_writes_nothing(tmp_path):
    log = open_log(tmp_path)
    log.append(batch(0, 2), now_ms=0)
    with pytest.raises(OutOfOrderSequence, match="does not follow the last sequence 1"):
        log.append(batch(3), now_ms=1)
    assert log.log_end_offset == 2
    assert log.append(batch(2), now_ms=2).base_offset == 2


def test_every_batch_of_a_request_is_checked_before_any_is_written(tmp_path):
    log = open_log(tmp_path)
    with pytest.raises(OutOfOrderSequence):
        log.append(batch(0, 2) + batch(5), now_ms=0)
    assert log.log_end_offset == 0 and log.describe_producers() == []
    info = log.append(batch(0, 2) + batch(2, 3), now_ms=0)  # consecutive batches of one request are fine
    assert (info.base_offset, info.last_offset) == (0, 4)


def test_an_older_epoch_is_fenced_and_a_newer_one_restarts_at_zero(tmp_path):
    log = open_log(tmp_path)
    log.append(batch(0, epoch=3), now_ms=0)
    with pytest.raises(InvalidProducerEpoch) as info:
        log.append(batch(1, epoch=2), now_ms=1)
    assert info.value.error_code == Errors.InvalidProducerEpochError.errno
    with pytest.raises(OutOfOrderSequence, match="must start at sequence 0"):
        log.append(batch(1, epoch=4), now_ms=1)
    log.append(batch(0, epoch=4), now_ms=2)
    assert log.describe_producers()[0][:3] == (PID, 4, 0)


def test_sequences_wrap_at_int32_max(tmp_path):
    log = open_log(tmp_path)
    # An unknown producer must start at 0, so reach the top in steps a real producer would take.
    log.append(batch(0), now_ms=0)
    state = log._producers.producers[PID]
    state.batches[-1] = state.batches[-1]._replace(last_seq=INT32_MAX - 2)
    log.append(batch(INT32_MAX - 1, 3), now_ms=1)  # sequences MAX-1, MAX, 0
    assert log.describe_producers()[0].last_sequence == 0
    log.append(batch(1), now_ms=2)
    with pytest.raises(OutOfOrderSequence):
        log.append(batch(5), now_ms=3)


def test_an_unknown_producer_must_start_at_sequence_zero(tmp_path):
    log = open_log(tmp_path)
    with pytest.raises(OutOfOrderSequence, match="new to this partition"):
        log.append(batch(7), now_ms=0)
    log.append(batch(0), now_ms=0)


def test_an_expired_producer_that_continues_gets_unknown_producer_id(tmp_path):
    cfg = LogConfig(segment_bytes=4096, producer_id_expiration_ms=1_000)
    log = open_log(tmp_path, cfg)
    log.append(batch(0), now_ms=0)
    log.append(batch(0, pid=2), now_ms=900)
    assert log.expire_producers(1_000) == 1
    assert [p.producer_id for p in log.describe_producers()] == [2]
    with pytest.raises(UnknownProducerId) as info:
        log.append(batch(1), now_ms=1_001)
    assert info.value.error_code == Errors.UnknownProducerIdError.errno
    log.append(batch(0), now_ms=1_002)  # after resetting its sequence it is known again


def test_a_producer_with_an_open_transaction_does_not_expire(tmp_path):
    cfg = LogConfig(segment_bytes=4096, producer_id_expiration_ms=1_000)
    log = open_log(tmp_path, cfg)
    log.append(batch(0, transactional=True), now_ms=0)
    assert log.expire_producers(10_000) == 0
    log.append_control(PID, 0, True, 0, now_ms=10_000)
    assert log.expire_producers(20_000) == 1


def test_a_non_transactional_batch_inside_a_transaction_is_refused(tmp_path):
    log = open_log(tmp_path)
    log.append(batch(0, transactional=True), now_ms=0)
    with pytest.raises(InvalidTxnState):
        log.append(batch(1), now_ms=1)
    assert log.append(batch(1, transactional=True), now_ms=1).base_offset == 1


def test_clients_may_not_write_control_batches(tmp_path):
    log = open_log(tmp_path)
    marker = control_batch(base_offset=0, producer_id=PID, producer_epoch=0, commit=True,
                           coordinator_epoch=0, timestamp=5)
    with pytest.raises(InvalidRecord, match="control"):
        log.append(bytes(marker), now_ms=0)


def test_non_idempotent_batches_are_not_tracked(tmp_path):
    log = open_log(tmp_path)
    log.append(make_batch(2), now_ms=0)
    log.append(make_batch(2), now_ms=0)  # same bytes, no producer id: both written
    assert log.log_end_offset == 4 and log.describe_producers() == []


def test_describe_producers_lists_epoch_sequence_timestamp_and_open_transaction(tmp_path):
    log = open_log(tmp_path)
    log.append(batch(0, 3, epoch=2, ts=5_000), now_ms=0)
    log.append(batch(0, pid=7, transactional=True, ts=6_000), now_ms=0)
    log.append_control(7, 0, True, 4, now_ms=10)
    log.append(batch(1, pid=7, transactional=True, ts=7_000), now_ms=20)
    rows = {p.producer_id: p for p in log.describe_producers()}
    assert rows[PID] == (PID, 2, 2, 5_002, -1, -1)
    assert rows[7].producer_epoch == 0 and rows[7].last_sequence == 1
    assert rows[7].coordinator_epoch == 4 and rows[7].current_txn_start_offset == 5


# -- snapshots and recovery ----------------------------------------------------------


def state(log):
    return sorted(log.describe_producers())


def test_a_clean_close_snapshots_the_state_at_the_log_end(tmp_path):
    log = open_log(tmp_path)
    for i in range(4):
        log.append(batch(i * 2, 2), now_ms=i)
    before = state(log)
    log.close()
    assert snapshot_path(tmp_path, 8).exists()
    again = open_log(tmp_path)
    assert state(again) == before
    assert again.append(batch(4, 2), now_ms=9).duplicate  # the cached batches survived
    again.append(batch(8), now_ms=9)


@pytest.mark.parametrize("lose_snapshots", [False, True])
def test_a_crash_rebuilds_the_state_from_the_latest_snapshot_and_the_log(tmp_path, lose_snapshots):
    log = open_log(tmp_path)
    seq = 0
    for i in range(80):  # several segments (4 KiB each)
        log.append(batch(seq, 3), now_ms=i)
        seq += 3
    assert len(log.segments) > 2
    assert sorted(p.name for p in tmp_path.glob(f"*{SNAPSHOT_SUFFIX}"))  # one per roll
    before = state(log)
    log.abandon()
    if lose_snapshots:
        for p in tmp_path.glob(f"*{SNAPSHOT_SUFFIX}"):
            p.unlink()
    again = open_log(tmp_path)
    assert state(again) == before
    with pytest.raises(OutOfOrderSequence):
        again.append(batch(seq + 1), now_ms=99)
    assert again.append(batch(seq - 3, 3), now_ms=99).duplicate
    again.append(batch(seq), now_ms=99)


def test_a_torn_snapshot_is_ignored_in_favour_of_an_older_one(tmp_path, caplog):
    log = open_log(tmp_path)
    for i in range(30):
        log.append(batch(i * 2, 2), now_ms=i)
    before = state(log)
    log.close()
    newest = snapshot_path(tmp_path, log.log_end_offset)
    newest.write_bytes(newest.read_bytes()[:-3])
    again = open_log(tmp_path)
    assert state(again) == before
    assert "unusable" in caplog.text and not newest.exists()


def test_snapshots_below_the_first_segment_are_deleted(tmp_path):
    cfg = LogConfig(segment_bytes=1024, message_timestamp_type="CreateTime", retention_bytes=2048)
    log = open_log(tmp_path, cfg)
    for i in range(60):
        log.append(batch(i), now_ms=i)
        log.enforce_retention(i)
    first = log.segments[0].base_offset
    offsets = sorted(int(p.name[:20]) for p in tmp_path.glob(f"*{SNAPSHOT_SUFFIX}"))
    assert offsets and min(offsets) >= first
    # The producer is kept although its early data is gone (Kafka 3.x): its sequence continues.
    log.append(batch(60), now_ms=61)


def test_truncation_rolls_the_producer_state_back(tmp_path):
    log = open_log(tmp_path)
    for i in range(30):
        log.append(batch(i * 2, 2), now_ms=i)
    log.truncate_to(20)
    assert log.log_end_offset == 20
    assert log.describe_producers()[0].last_sequence == 19
    log.append(batch(20, 2), now_ms=50)
    log.truncate_to(0)
    assert log.describe_producers() == []


def test_the_snapshot_format_is_crc_then_msgpack(tmp_path):
    import struct

    import msgpack
    from crc32c import crc32c

    log = open_log(tmp_path)
    log.append(batch(0, 2, transactional=True), now_ms=7)
    log.close()
    data = snapshot_path(tmp_path, 2).read_bytes()
    assert struct.unpack(">I", data[:4])[0] == crc32c(data[4:])
    body = msgpack.unpackb(data[4:])
    assert body["version"] == 1 and body["offset"] == 2
    pid, epoch, coordinator_epoch, txn_first, _, last_update, batches = body["producers"][0]
    assert (pid, epoch, coordinator_epoch, txn_first, last_update) == (PID, 0, -1, 0, 7)
    assert batches == [[0, 1, 0, 1, batches[0][4]]]


# -- the idempotence property ---------------------------------------------------------

WINDOW = 5  # max.in.flight.requests.per.connection


@st.composite
def deliveries(draw):
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=25))
    # Each step: which in-flight batch the network delivers, and whether its answer is lost.
    steps = draw(st.lists(st.tuples(st.integers(0, WINDOW - 1), st.booleans(), st.integers(0, 20)), max_size=120))
    return sizes, steps


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(deliveries())
def test_retries_duplicates_and_reordering_write_every_record_exactly_once_in_order(case):
    """An idempotent producer with five requests in flight: the network
    delivers any of them in any order, repeats them and loses answers; the
    broker sometimes crashes. Whatever happens, once every batch is
    acknowledged the log holds each record once, in send order."""
    sizes, steps = case
    directory = Path(tempfile.mkdtemp(prefix="idem-"))
    cfg = LogConfig(segment_bytes=1024, message_timestamp_type="CreateTime")
    try:
        log = open_log(directory, cfg)
        seqs, seq = [], 0
        for n in sizes:
            seqs.append(seq)
            seq += n
        blobs = [batch(s, n, tag=i) for i, (s, n) in enumerate(zip(seqs, sizes))]
        acked = [False] * len(blobs)
        now = 0

        def send(i, lose_answer):
            nonlocal log
            try:
                info = log.append(blobs[i], now_ms=now)
            except OutOfOrderSequence:
                event("out of order")
                return  # the producer retries this batch later
            if info.duplicate:
                event("duplicate")
            if not lose_answer:
                acked[i] = True

        for pick, lose, crash in steps:
            now += 1
            if all(acked):
                break
            if crash == 0:
                event("crash")
                log.abandon()
                log = open_log(directory, cfg)
                continue
            first = acked.index(False)
            i = first + pick
            if i < len(blobs) and not acked[i]:
                send(i, lose)
        while not all(acked):  # the producer keeps retrying the oldest in-flight batch
            send(acked.index(False), False)
        values = [v for _, _, v in records_of(read_all(log))]
        expected = [f"{i}:{j}:".encode().ljust(40, b"x") for i, n in enumerate(sizes) for j in range(n)]
        assert values == expected
        assert [o for o, _, _ in records_of(read_all(log))] == list(range(len(expected)))
        log.abandon()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_producer_state_errors_are_log_errors():
    assert issubclass(OutOfOrderSequence, ProducerStateError)
    assert rb.last_sequence(rb.parse_header(batch(INT32_MAX, 2))) == 0
