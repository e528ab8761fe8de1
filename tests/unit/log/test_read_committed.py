"""CommittedFilter: the batches a read_committed reader skips, decided once per read
(one aborted-transaction search) as Kafka's consumer does. Checked against a model of
the transactions written and against the log's own per-batch answer, over reads that
start anywhere and end anywhere."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kafka_wire.log import batch as rb
from kafka_wire.log.config import LogConfig
from kafka_wire.log.partition_log import PartitionLog
from kafka_wire.log.read_committed import CommittedFilter

from .log_helpers import make_batch

CONFIG = LogConfig(segment_bytes=1024, message_timestamp_type="CreateTime")
PRODUCERS = 3

# One step: a producer sends a transactional batch, commits, aborts, or a plain batch is sent.
steps = st.lists(st.tuples(st.sampled_from(["data", "commit", "abort", "plain"]),
                           st.integers(0, PRODUCERS - 1)), max_size=60)


def _write(log: PartitionLog, plan) -> dict[int, bool]:
    """Write ``plan``; the offsets of its batches, each True when a read_committed
    reader skips it. Transactions still open at the end are aborted."""
    hidden: dict[int, bool] = {}
    open_batches: dict[int, list[int]] = {}
    sequence = [0] * PRODUCERS

    def end(pid: int, commit: bool) -> None:
        info = log.append_control(pid + 1, 0, commit, 0, now_ms=0)
        hidden[info.base_offset] = True
        for offset in open_batches.pop(pid, []):
            hidden[offset] = not commit

    for kind, pid in plan:
        if kind == "plain":
            hidden[log.append(make_batch(1, value_size=20), now_ms=0).base_offset] = False
        elif kind == "data":
            info = log.append(make_batch(2, producer_id=pid + 1, base_sequence=sequence[pid],
                                         transactional=True, value_size=20), now_ms=0)
            sequence[pid] += 2
            open_batches.setdefault(pid, []).append(info.base_offset)
        elif pid in open_batches:
            end(pid, kind == "commit")
    for pid in list(open_batches):
        end(pid, False)
    return hidden


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@example(plan=[("data", 0), ("abort", 0), ("data", 0), ("commit", 0)], start=0, read_bytes=2000)
@example(plan=[("data", 0), ("abort", 0), ("data", 0), ("commit", 0)], start=2, read_bytes=2000)  # from the marker
@given(plan=steps, start=st.integers(0, 1000), read_bytes=st.integers(1, 2000))
def test_the_filter_hides_what_the_model_and_the_log_hide(tmp_path_factory, plan, start, read_bytes):
    log = PartitionLog(tmp_path_factory.mktemp("log"), CONFIG, now_ms=0)
    try:
        expected = _write(log, plan)
        offset = start % (log.log_end_offset + 1)
        while offset < log.last_stable_offset:  # read by read, as a receiver does
            batches = log.stored_batches(offset, read_bytes)
            assert batches
            headers = [rb.parse_header(data, 0) for _, _, data in batches]
            committed = CommittedFilter(log, offset, headers[-1].last_offset + 1)
            for header in headers:
                assert committed.hidden(header) == expected[header.base_offset] == log.hidden(header)
            offset = headers[-1].last_offset + 1
    finally:
        log.close()


def test_one_aborted_transaction_search_a_read(tmp_path):
    """A read over many aborted transactions searches the index once, not once per batch
    (20,000 such transactions held every client of the broker for seconds a read)."""
    log = PartitionLog(tmp_path, LogConfig(), now_ms=0)
    try:
        for pid in range(1, 201):
            log.append(make_batch(1, producer_id=pid, transactional=True), now_ms=0)
            log.append_control(pid, 0, False, 0, now_ms=0)
            log.append(make_batch(1), now_ms=0)
        searches = []
        search = log.aborted_transactions
        log.aborted_transactions = lambda *bounds: searches.append(bounds) or search(*bounds)
        batches = log.stored_batches(0, 1 << 20)
        headers = [rb.parse_header(data, 0) for _, _, data in batches]
        committed = CommittedFilter(log, 0, headers[-1].last_offset + 1)
        shown = [h.base_offset for h in headers if not committed.hidden(h)]
        assert shown == list(range(2, 600, 3)) and len(searches) == 1
    finally:
        log.close()
