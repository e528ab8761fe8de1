"""PartitionLog appends, reads, timestamps, positions and retention (log/partition_log.py)."""

from __future__ import annotations

import errno
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire.log import batch as rb
from kafka_wire.log.config import LogConfig
from kafka_wire.log.errors import (
    CorruptRecord,
    LogClosed,
    OffsetOutOfRange,
    RecordTooLarge,
    StorageError,
)
from kafka_wire.log.partition_log import PartitionLog

from .log_helpers import GZIP, batch_spans, decoded_records, make_batch

SMALL = LogConfig(segment_bytes=2048, index_interval_bytes=256, message_timestamp_type="CreateTime")


def fill(log, batches, *, start_ms=1_000, records=3, value_size=40):
    infos = []
    for i in range(batches):
        infos.append(log.append(make_batch(records, value_size=value_size, ts=i * 10, tag=i), now_ms=start_ms + i))
    return infos


def read_all(log):
    """Every batch span from the log start, following segments."""
    spans, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        view = log.read(offset, 1 << 20)
        got = batch_spans(view)
        assert got, f"no progress at {offset}"
        spans += got
        offset = got[-1][1] + 1
    return spans


def test_append_assigns_consecutive_offsets_and_reports_positions(tmp_path):
    log = PartitionLog(tmp_path, SMALL, now_ms=0)
    first = log.append(make_batch(3) + make_batch(2), now_ms=5)
    second = log.append(make_batch(1), now_ms=6)
    assert (first.base_offset, first.last_offset, first.position) == (0, 4, 0)
    assert [h.base_offset for h in first.headers] == [0, 3]
    assert (second.base_offset, second.last_offset) == (5, 5)
    assert second.position == sum(h.size for h in first.headers)
    assert not first.log_append_time and first.append_time_ms == 5
    assert log.log_end_offset == log.high_watermark == 6
    assert [r[0] for r in decoded_records(log.read(0, 1 << 20))] == [0, 1, 2, 3, 4, 5]


def test_invalid_batch_anywhere_in_the_request_writes_nothing(tmp_path):
    log = PartitionLog(tmp_path, SMALL, now_ms=0)
    bad = bytearray(make_batch(2))
    bad[-1] ^= 1
    with pytest.raises(CorruptRecord):
        log.append(make_batch(1) + bytes(bad), now_ms=1)
    assert log.log_end_offset == 0 and log.size_bytes == 0


def test_batches_above_max_message_bytes_are_refused(tmp_path):
    log = PartitionLog(tmp_path, LogConfig(max_message_bytes=200), now_ms=0)
    with pytest.raises(RecordTooLarge, match="max.message.bytes=200"):
        log.append(make_batch(1, value_size=300), now_ms=1)
    assert log.log_end_offset == 0


def test_log_append_time_topics_stamp_batches_with_the_broker_clock(tmp_path):
    log = PartitionLog(tmp_path, LogConfig(), now_ms=0)  # LogAppendTime by default
    info = log.append(make_batch(2, ts=1) + make_batch(1, ts=2, compression=GZIP), now_ms=777)
    assert info.log_append_time and info.append_time_ms == 777
    view = log.read(0, 1 << 20)
    headers = rb.validate_records(bytes(view))  # CRCs valid after patching
    assert all(h.max_timestamp == 777 and h.timestamp_type == rb.LOG_APPEND_TIME for h in headers)
    assert [r[1] for r in decoded_records(view)] == [777, 777, 777]


def test_append_times_never_go_backwards(tmp_path):
    log = PartitionLog(tmp_path, SMALL, now_ms=0)
    log.append(make_batch(1), now_ms=500)
    assert log.append(make_batch(1), now_ms=100).append_time_ms == 500  # clock stepped back


def test_read_returns_whole_batches_from_the_one_holding_the_offset(tmp_path):
    log = PartitionLog(tmp_path, LogConfig(message_timestamp_type="CreateTime"), now_ms=0)
    sizes = [h.size for info in fill(log, 5) for h in info.headers]
    assert batch_spans(log.read(4, 1 << 20)) == [(3, 5), (6, 8), (9, 11), (12, 14)]
    # max_bytes cuts at batch boundaries...
    assert batch_spans(log.read(0, sizes[0] + sizes[1])) == [(0, 2), (3, 5)]
    assert batch_spans(log.read(0, sizes[0] + sizes[1] - 1)) == [(0, 2)]
    # ...but the first batch comes whole even if larger (KIP-74), unless told otherwise.
    assert batch_spans(log.read(0, 1)) == [(0, 2)]
    assert len(log.read(0, 1, min_one_batch=False)) == 0
    # max_offset is an exclusive bound on whole batches.
    assert batch_spans(log.read(0, 1 << 20, max_offset=9)) == [(0, 2), (3, 5), (6, 8)]
    assert batch_spans(log.read(0, 1 << 20, max_offset=8)) == [(0, 2), (3, 5)]
    assert len(log.read(15, 100)) == 0
    with pytest.raises(OffsetOutOfRange):
        log.read(16, 100)
    with pytest.raises(OffsetOutOfRange):
        log.read(-1, 100)


def test_reads_are_zero_copy_views_that_survive_segment_deletion(tmp_path):
    log = PartitionLog(tmp_path, SMALL, now_ms=0)
    fill(log, 40)
    view = log.read(0, 100)
    assert isinstance(view, memoryview) and view.readonly
    expected = bytes(view)
    assert log.delete_records_before(log.log_end_offset) == log.log_end_offset
    assert not (tmp_path / "00000000000000000000.log").exists()
    assert bytes(view) == expected  # a pending socket write keeps its bytes


def test_segments_roll_on_size_and_reads_stop_at_a_segment_end(tmp_path):
    log = PartitionLog(tmp_path, SMALL, now_ms=0)
    fill(log, 40)
    segments = log.segments
    assert len(segments) > 3
    assert all(s.size <= SMALL.segment_bytes for s in segments)
    first = segments[0]
    assert batch_spans(log.read(0, 1 << 20))[-1][1] == first.next_offset - 1
    assert read_all(log) == [(3 * i, 3 * i + 2) for i in range(40)]
    # Sealed segments are trimmed; the active one is preallocated sparse.
    assert os.path.getsize(first.log_path) == first.size
    assert os.path.getsize(log.active_segment.log_path) == SMALL.segment_bytes


def test_segments_roll_on_age(tmp_path):
    log = PartitionLog(tmp_path, LogConfig(segment_ms=100), now_ms=0)
    log.append(make_batch(1), now_ms=1_000)
    log.append(make_batch(1), now_ms=1_099)
    log.append(make_batch(1), now_ms=1_100)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_segments_roll_when_the_index_is_full(tmp_path):
    log = PartitionLog(tmp_path, LogConfig(segment_index_bytes=24, index_interval_bytes=0), now_ms=0)
    fill(log, 10)
    assert len(log.segments) > 2
    assert read_all(log) == [(3 * i, 3 * i + 2) for i in range(10)]


def test_oversized_batch_gets_a_segment_of_its_own(tmp_path):
    log = PartitionLog(tmp_path, LogConfig(segment_bytes=100), now_ms=0)
    log.append(make_batch(1, value_size=500), now_ms=1)
    log.append(make_batch(1, value_size=500), now_ms=2)
    assert [s.base_offset for s in log.segments] == [0, 1]
    assert read_all(log) == [(0, 0), (1, 1)]


def test_explicit_base_offset_may_leave_a_gap(tmp_path):
    log = PartitionLog(tmp_path, SMALL, now_ms=0)
    log.append(make_batch(2), now_ms=1, base_offset=100)
    assert log.segments[0].base_offset == 100 and log.log_end_offset == 102
    log.append(make_batch(1), now_ms=1, base_offset=110)
    assert batch_spans(log.read(105, 1000)) == [(110, 110)]
    with pytest.raises(ValueError):
        log.append(make_batch(1), now_ms=1, base_offset=5)


def test_offset_for_timestamp_finds_the_first_record_at_or_after_it(tmp_path):
    log = PartitionLog(tmp_path, SMALL, now_ms=0)
    fill(log, 40)  # batch i holds offsets 3i..3i+2 with timestamps 10i..10i+2
    assert log.offset_for_timestamp(0) == (0, 0)
    assert log.offset_for_timestamp(2) == (2, 2)
    assert log.offset_for_timestamp(3) == (10, 3)
    assert log.offset_for_timestamp(215) == (220, 66)
    assert log.offset_for_timestamp(391) == (391, 118)
    assert log.offset_for_timestamp(392) == (392, 119)
    assert log.offset_for_timestamp(393) is None
    assert log.max_timestamp() == (392, 119)


def test_offset_for_timestamp_in_compressed_batches_answers_with_the_batch(tmp_path):
    log = PartitionLog(tmp_path, SMALL, now_ms=0)
    log.append(make_batch(3, ts=100, compression=GZIP), now_ms=1)
    assert log.offset_for_timestamp(101) == (102, 0)
    assert log.max_timestamp() == (102, 0)


def test_offset_for_timestamp_ignores_records_below_the_log_start(tmp_path):
    log = PartitionLog(tmp_path, SMALL, now_ms=0)
    fill(log, 3)
    log.delete_records_before(4)
    assert log.offset_for_timestamp(0) == (11, 4)


def test_offset_for_timestamp_with_log_append_time_uses_the_append_time(tmp_path):
    log = PartitionLog(tmp_path, LogConfig(segment_bytes=1024), now_ms=0)
    for i in range(30):
        log.append(make_batch(2, ts=5), now_ms=1_000 + 10 * i)
    assert log.offset_for_timestamp(1_095) == (1_100, 20)
    assert log.max_timestamp() == (1_290, 58)


def test_max_timestamp_of_an_empty_log(tmp_path):
    assert PartitionLog(tmp_path, SMALL, now_ms=0).max_timestamp() == (-1, -1)


def test_batch_positions_increase_across_segments_and_after_deletion(tmp_path):
    log = PartitionLog(tmp_path, SMALL, now_ms=0)
    infos = fill(log, 40)
    positions = [log.batch_position(3 * i + 1) for i in range(40)]
    assert [p[0] for p in positions] == [info.position for info in infos]
    assert [p[1] for p in positions] == [1_000 + i for i in range(40)]
    byte_offsets = [p[0] for p in positions]
    assert byte_offsets == sorted(set(byte_offsets)) and byte_offsets[0] == 0
    # Event Hubs offsets are byte positions in the partition's stream of batches.
    sizes = [h.size for info in infos for h in info.headers]
    assert byte_offsets == [sum(sizes[:i]) for i in range(40)]
    log.delete_records_before(60)
    assert log.batch_position(61) == positions[20] and log.batch_position(0) is None
    after = log.append(make_batch(1), now_ms=5_000)
    assert after.position == sum(sizes)
    log.close()
    reopened = PartitionLog(tmp_path, SMALL, now_ms=0)
    assert reopened.batch_position(61) == positions[20]
    assert reopened.batch_position(after.base_offset) == (sum(sizes), 5_000)


def test_delete_records_before_moves_the_log_start_and_persists_it(tmp_path):
    log = PartitionLog(tmp_path, SMALL, now_ms=0)
    fill(log, 40)
    before = len(log.segments)
    assert log.delete_records_before(50) == 50
    assert log.log_start_offset == 50 and len(log.segments) < before
    assert log.segments[0].base_offset <= 50 < log.segments[0].next_offset
    assert batch_spans(log.read(50, 100))[0] == (48, 50)  # the batch holding 50
    with pytest.raises(OffsetOutOfRange):
        log.read(49, 100)
    with pytest.raises(OffsetOutOfRange):
        log.delete_records_before(1_000)
    assert log.delete_records_before(10) == 50  # never moves back
    log.close()
    assert PartitionLog(tmp_path, SMALL, now_ms=0).log_start_offset == 50


def test_delete_records_up_to_the_end_empties_the_log(tmp_path):
    log = PartitionLog(tmp_path, SMALL, now_ms=0)
    fill(log, 3)
    assert log.delete_records_before(9) == 9
    assert log.size_bytes == 0 and log.log_end_offset == 9
    assert log.append(make_batch(1), now_ms=1).base_offset == 9


def test_time_retention_deletes_whole_expired_segments(tmp_path):
    config = LogConfig(segment_bytes=2048, retention_ms=1_000)
    log = PartitionLog(tmp_path, config, now_ms=0)
    for i in range(40):
        log.append(make_batch(3, value_size=40), now_ms=i * 100)
    segments = log.segments
    # Segments whose last append is older than now - retention go.
    now = 3_000
    expected = [s for s in segments if s.last_append_ms < now - 1_000]
    assert log.enforce_retention(now) == len(expected) > 0
    assert log.log_start_offset == expected[-1].next_offset
    assert log.segments[0] is segments[len(expected)]
    # Everything expired: the active segment is rolled and deleted too.
    assert log.enforce_retention(10_000) > 0
    assert log.size_bytes == 0 and log.log_start_offset == log.log_end_offset == 120


def test_size_retention_keeps_the_newest_segments(tmp_path):
    config = LogConfig(segment_bytes=2048, retention_bytes=4096)
    log = PartitionLog(tmp_path, config, now_ms=0)
    fill(log, 40)
    log.enforce_retention(0)
    assert log.size_bytes <= 4096 + 2048 and log.size_bytes > 4096 - 2048
    assert log.log_start_offset == log.segments[0].base_offset


def test_retention_is_off_for_compacted_topics(tmp_path):
    log = PartitionLog(tmp_path, LogConfig(retention_ms=0, cleanup_policy="compact"), now_ms=0)
    fill(log, 3)
    assert log.enforce_retention(10**9) == 0


def test_truncate_to_drops_the_batch_holding_the_offset_and_after(tmp_path):
    log = PartitionLog(tmp_path, SMALL, now_ms=0)
    fill(log, 40)
    log.truncate_to(31)
    assert log.log_end_offset == 30
    assert read_all(log) == [(3 * i, 3 * i + 2) for i in range(10)]
    info = log.append(make_batch(1), now_ms=9_999)
    assert info.base_offset == 30 and log.batch_position(30) == (info.position, 9_999)
    log.truncate_to(0)
    assert log.log_end_offset == 0 and log.size_bytes == 0


def test_storage_errors_leave_the_log_readable_and_writable(tmp_path, monkeypatch):
    log = PartitionLog(tmp_path, SMALL, now_ms=0)
    fill(log, 5)
    before = bytes(log.read(0, 1 << 20))
    real_pwrite = os.pwrite
    calls = {"n": 0}

    def pwrite_then_enospc(fd, data, offset):
        calls["n"] += 1
        if calls["n"] == 1:
            real_pwrite(fd, bytes(data)[:20], offset)  # a partial write, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_pwrite(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", pwrite_then_enospc)
    with pytest.raises(StorageError) as exc:
        log.append(make_batch(2), now_ms=50)
    assert exc.value.errno == errno.ENOSPC
    assert log.log_end_offset == 15 and bytes(log.read(0, 1 << 20)) == before
    info = log.append(make_batch(2), now_ms=51)
    assert info.base_offset == 15
    assert read_all(log)[-1] == (15, 16)
    # A crash now must not resurrect the failed write.
    log.abandon()
    assert read_all(PartitionLog(tmp_path, SMALL, now_ms=0))[-2:] == [(12, 14), (15, 16)]


def test_storage_error_while_writing_an_index_undoes_the_log_write(tmp_path, monkeypatch):
    log = PartitionLog(tmp_path, SMALL, now_ms=0)
    fill(log, 2)
    real_pwrite = os.pwrite
    calls = {"n": 0}

    def fail_second(fd, data, offset):
        calls["n"] += 1
        if calls["n"] == 2:  # the .batches entry, after the log bytes went in
            raise OSError(errno.EIO, "I/O error")
        return real_pwrite(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", fail_second)
    with pytest.raises(StorageError):
        log.append(make_batch(1), now_ms=5)
    assert log.log_end_offset == 6 and log.size_bytes == log.segments[0].size
    assert log.append(make_batch(1), now_ms=6).base_offset == 6
    assert read_all(log) == [(0, 2), (3, 5), (6, 6)]


def test_flush_messages_fsyncs_every_batch(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    log = PartitionLog(tmp_path, LogConfig(flush_messages=1), now_ms=0)
    synced.clear()
    log.append(make_batch(1), now_ms=1)
    assert synced  # log and indexes
    synced.clear()
    PartitionLog(tmp_path / "other", LogConfig(), now_ms=0).append(make_batch(1), now_ms=1)
    assert not synced  # default: the page cache is enough


def test_closed_log_refuses_work(tmp_path):
    log = PartitionLog(tmp_path, SMALL, now_ms=0)
    log.close()
    with pytest.raises(LogClosed):
        log.append(make_batch(1), now_ms=1)
    with pytest.raises(LogClosed):
        log.read(0, 10)


def test_a_request_with_more_batches_than_index_room_still_appends(tmp_path):
    log = PartitionLog(tmp_path, LogConfig(segment_index_bytes=24, index_interval_bytes=0), now_ms=0)
    info = log.append(b"".join(make_batch(1, tag=i) for i in range(20)), now_ms=1)
    assert (info.base_offset, info.last_offset) == (0, 19)
    assert read_all(log) == [(i, i) for i in range(20)]
    log.close()
    assert read_all(PartitionLog(tmp_path, LogConfig(segment_index_bytes=24), now_ms=0)) == [(i, i) for i in range(20)]


def test_append_accepts_a_memoryview_and_never_modifies_the_callers_bytes(tmp_path):
    log = PartitionLog(tmp_path, LogConfig(), now_ms=0)
    log.append(make_batch(1), now_ms=1)
    request = bytearray(make_batch(2))
    original = bytes(request)
    info = log.append(memoryview(request), now_ms=2)
    assert info.base_offset == 1 and bytes(request) == original


def test_compressed_batches_are_stored_as_sent(tmp_path):
    log = PartitionLog(tmp_path, SMALL, now_ms=0)
    blob = make_batch(50, value_size=200, compression=GZIP)
    log.append(make_batch(1), now_ms=1)
    log.append(blob, now_ms=2)
    view = log.read(1, 1 << 20)
    assert bytes(view)[12:] == blob[12:]  # all but the patched base offset
    assert [r[0] for r in decoded_records(view)] == list(range(1, 51))


def test_views_of_truncated_data_stay_mapped(tmp_path):
    log = PartitionLog(tmp_path, LogConfig(preallocate=False), now_ms=0)
    fill(log, 5)
    tail = log.read(12, 1 << 20)
    log.truncate_to(3)
    assert len(bytes(tail)) == len(tail)  # reading it must not fault (SIGBUS)
    log.close()


def test_flush_ms_fsyncs_once_the_interval_has_passed(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    log = PartitionLog(tmp_path, LogConfig(flush_ms=100), now_ms=0)
    synced.clear()
    log.append(make_batch(1), now_ms=50)
    assert not synced
    log.maybe_flush(99)
    assert not synced
    log.maybe_flush(100)
    assert synced


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(1, 300), st.sampled_from([0, GZIP])), min_size=1, max_size=25))
def test_every_event_has_its_own_event_hubs_offset(tmp_path_factory, batches):
    """Event Hubs offsets: distinct and increasing per event (also in gzip batches
    of many tiny records, which hold more records than bytes), found again from
    the offset inclusive and exclusive, and the same after a restart."""
    directory = tmp_path_factory.mktemp("eh")
    log = PartitionLog(directory, SMALL, now_ms=0)
    for i, (records, codec) in enumerate(batches):
        log.append(make_batch(records, value_size=1, compression=codec, tag=i), now_ms=1_000 + i)
    end = log.log_end_offset
    offsets = [log.event_position(o)[0] for o in range(end)]
    assert offsets == sorted(set(offsets))
    for o, eh in enumerate(offsets):
        assert log.offset_at_event_offset(eh) == o
        assert log.offset_at_event_offset(eh + 1) == o + 1  # exclusive: the next event
    assert log.offset_at_event_offset(offsets[-1] + 10**9) == end
    log.close()
    again = PartitionLog(directory, SMALL, now_ms=0)
    assert [again.event_position(o)[0] for o in range(end)] == offsets
    again.close()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=300)),
                          st.one_of(st.none(), st.binary(max_size=3000)),
                          st.lists(st.tuples(st.text(max_size=20),
                                             st.one_of(st.none(), st.binary(max_size=50))),
                                   max_size=3)),
                min_size=1, max_size=20),
       st.sampled_from([0, GZIP]))
def test_read_events_decodes_what_kafka_python_decodes(records, codec):
    """The AMQP receive path's record reader against kafka-python's, also compressed."""
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

    from kafka_wire.log.records import read_events

    builder = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 24)
    for i, (key, value, headers) in enumerate(records):
        builder.append(i, timestamp=1_000 + i, key=key, value=value, headers=headers)
    data = bytes(builder.build())
    ours = read_events(data, rb.parse_header(data, 0))
    theirs = [(r.offset, r.key, r.value, list(r.headers)) for r in DefaultRecordBatch(data)]
    assert [(d, bytes(k) if k is not None else None, bytes(v) if v is not None else None, h)
            for d, k, v, h in ours] == theirs
