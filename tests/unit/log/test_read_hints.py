"""Reads of PartitionLog against a model of its batches: the read path's
shortcuts (the remembered batch index of a reader's next offset, the checks
that skip binary searches) must answer what the plain rules say, whatever
appends, truncations and reads come in between (log/segment.py ``read``)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire.log.config import LogConfig
from kafka_wire.log.partition_log import PartitionLog

from .log_helpers import batch_spans, make_batch

CONFIG = LogConfig(segment_bytes=1500, index_interval_bytes=200, message_timestamp_type="CreateTime")


def expected(batches, segments, offset, max_bytes, upper, min_one_batch):
    """What a read answers, from (base, last, size) of every batch and the
    segments' (base offset, next offset): whole batches of one segment, from the
    one holding ``offset``, within ``max_bytes`` (the first whole if
    ``min_one_batch``), each ending below ``upper``."""
    seg = next((s for s in segments if s[0] <= offset < s[1]), None)
    if seg is None:
        return []
    mine = [b for b in batches if seg[0] <= b[0] < seg[1] and b[1] >= offset]
    if not mine or mine[0][1] >= upper:
        return []
    out, used = [], 0
    for base, last, size in mine:
        if last >= upper or (used + size > max_bytes and (out or not min_one_batch)):
            break
        out.append((base, last))
        used += size
    return out


steps = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(1, 4), st.integers(10, 300)),
    # (offset: the reader's next / a batch's base / any; pick, max_bytes, upper - offset, min_one_batch)
    st.tuples(st.just("read"), st.sampled_from(["next", "base", "any"]), st.integers(0, 60), st.integers(0, 1200),
              st.one_of(st.integers(-1, 6), st.integers(7, 60)), st.booleans()),
    st.tuples(st.just("truncate"), st.integers(1, 3)),  # drop the last 1-3 batches
), min_size=1, max_size=60)


@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(10, 300)), min_size=1, max_size=25), steps)
def test_reads_answer_what_the_batches_say(tmp_path_factory, initial, script):
    log = PartitionLog(tmp_path_factory.mktemp("log"), CONFIG, now_ms=0)
    batches: list[tuple[int, int, int]] = []  # (base, last, size) as appended

    def append(records, size):
        data = make_batch(records, value_size=size, tag=len(batches))
        info = log.append(data, now_ms=1)
        batches.append((info.base_offset, info.last_offset, len(data)))

    for records, size in initial:
        append(records, size)
    reader = log.log_start_offset  # a consumer reading on from where it stopped
    for step in script:
        if step[0] == "append":
            append(step[1], step[2])
        elif step[0] == "truncate":
            if len(batches) <= step[1]:
                continue
            to = batches[-step[1]][0]
            log.truncate_to(to)
            batches = [b for b in batches if b[0] < to]
            reader = min(reader, to)
        else:
            _, mode, pick, max_bytes, ahead, min_one = step
            follow = mode == "next"
            if follow:
                offset = reader
            elif mode == "base" and batches:
                offset = batches[pick % len(batches)][0]
            else:
                offset = min(pick, log.log_end_offset)
            upper = max(0, min(offset + ahead, log.log_end_offset))
            segments = [(s.base_offset, s.next_offset) for s in log.segments]
            got = batch_spans(log.read(offset, max_bytes, max_offset=upper, min_one_batch=min_one))
            assert got == expected(batches, segments, offset, max_bytes, upper, min_one)
            if follow and got:
                reader = got[-1][1] + 1
    log.close()


def test_a_reader_position_remembered_before_a_truncation_is_not_trusted_after_it(tmp_path):
    log = PartitionLog(tmp_path, CONFIG, now_ms=0)
    for _ in range(3):
        log.append(make_batch(4, value_size=10), now_ms=1)  # offsets 0-3, 4-7, 8-11
    assert batch_spans(log.read(0, 1)) == [(0, 3)]  # the next read would start at 4, batch 1
    log.truncate_to(1)  # drops the batch holding 1 and all after it, in the same segment
    assert log.log_end_offset == 0
    for _ in range(6):
        log.append(make_batch(1, value_size=10), now_ms=1)  # offsets 0..5, one a batch
    assert batch_spans(log.read(4, 1)) == [(4, 4)]  # batch 4 now, not batch 1
    log.close()
