"""Finding aborted transactions: ``TransactionIndex.collect`` (Kafka's collectAbortedTxns)
against a simple model, and what ``PartitionLog.hidden`` and ``aborted_transactions``
answer against what was aborted.

``PartitionLog.hidden`` asks, for one transactional batch, whether it belongs to an
aborted transaction (the console's explorer asks it of every such batch it reads). Each
question used to copy and scan the segment's whole ``.txnindex``: a partition with n
aborted transactions cost O(n²) to read.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.log import batch as rb
from kafka_wire.log.config import LogConfig
from kafka_wire.log.index import AbortedTxn, TransactionIndex
from kafka_wire.log.partition_log import PartitionLog

from .log_helpers import make_batch, read_all


def model_collect(entries: list[AbortedTxn], fetch_offset: int, upper_offset: int) -> tuple[list, bool]:
    """Kafka's TransactionIndex.collectAbortedTxns, entry by entry."""
    out = []
    for entry in entries:
        if entry.last_offset >= fetch_offset and entry.first_offset < upper_offset:
            out.append(entry)
        if entry.last_stable_offset >= upper_offset:
            return out, True
    return out, False


@st.composite
def txn_entries(draw) -> list[AbortedTxn]:
    """Entries in marker order: last offsets strictly increase; first offsets and last
    stable offsets are anything a damaged or merged index might hold too."""
    entries, last = [], draw(st.integers(0, 5))
    for _ in range(draw(st.integers(0, 25))):
        last += draw(st.integers(1, 6))
        first = last - draw(st.integers(0, 12))
        lso = draw(st.one_of(st.integers(0, last + 1), st.integers(0, 200)))
        entries.append(AbortedTxn(draw(st.integers(0, 4)), max(first, 0), last, lso))
    return entries


@settings(max_examples=400, deadline=None)
@given(entries=txn_entries(), fetch=st.integers(0, 180), span=st.integers(0, 60), appended=st.booleans(),
       reload=st.booleans())
def test_collect_finds_what_kafkas_scan_finds(entries, fetch, span, appended, reload):
    with tempfile.TemporaryDirectory() as tmp:
        index = TransactionIndex(Path(tmp) / "x.txnindex", new=True)
        if appended:
            for entry in entries:
                index.append(entry)
        else:
            index.replace(entries)
        if reload:
            index = TransactionIndex(index.path)
        assert index.entries == entries
        out: list[AbortedTxn] = ["before"]  # type: ignore[list-item]  (appended to, never cleared)
        done = index.collect(fetch, fetch + span, out)
        expected, expected_done = model_collect(entries, fetch, fetch + span)
        assert (out[1:], done) == (expected, expected_done)
        if entries:  # and after dropping the last entry (an ABORT whose marker could not be written)
            index.remove_last()
            out = []
            done = index.collect(fetch, fetch + span, out)
            assert (out, done) == model_collect(entries[:-1], fetch, fetch + span)


def aborting_log(path: Path, transactions: int, *, seed: int) -> tuple[PartitionLog, set[int]]:
    """Three producers writing interleaved transactions, most of them aborted, with
    plain batches and rolls between; returns the log and the offsets of aborted data."""
    rng = random.Random(seed)
    log = PartitionLog(path, LogConfig(segment_bytes=4096, message_timestamp_type="CreateTime"), now_ms=0)
    seq = {1: 0, 2: 0, 3: 0}
    open_: dict[int, list[int]] = {}
    aborted: set[int] = set()
    ended = 0
    while ended < transactions:
        pid = rng.choice((1, 2, 3))
        roll = rng.random()
        if pid in open_ and roll < 0.3:
            commit = rng.random() < 0.2
            log.append_control(pid, 0, commit, 0, now_ms=0)
            if not commit:
                aborted.update(open_[pid])
            del open_[pid]
            ended += 1
        elif roll < 0.8:
            n = rng.randint(1, 3)
            info = log.append(make_batch(n, producer_id=pid, base_sequence=seq[pid], transactional=True,
                                         value_size=20), now_ms=0)
            seq[pid] += n
            open_.setdefault(pid, []).append(info.base_offset)
        else:
            log.append(make_batch(1, value_size=20), now_ms=0)
    for pid in list(open_):
        log.append_control(pid, 0, False, 0, now_ms=0)
        aborted.update(open_.pop(pid))
    return log, aborted


def test_hidden_and_aborted_transactions_answer_what_was_aborted(tmp_path):
    log, aborted = aborting_log(tmp_path, 300, seed=46)
    assert len(log.segments) > 5
    data = read_all(log)
    headers = [h for _, h in rb.iter_batches(data)]
    truth = [h.is_control or h.base_offset in aborted for h in headers]
    assert sum(truth) > 300 and not all(truth)
    assert [log.hidden(h) for h in headers] == truth
    # A read_committed Fetch of a few batches gets (producer id, first offset) of each aborted
    # transaction with data in them: Kafka's consumer then skips exactly the aborted batches.
    first_of = {}  # offset of an aborted batch -> (producer id, first offset of its transaction)
    started: dict[int, int] = {}
    for h, hidden in zip(headers, truth):
        if h.is_control:
            started.pop(h.producer_id, None)
        elif h.is_transactional:
            first = started.setdefault(h.producer_id, h.base_offset)
            if hidden:
                first_of[h.base_offset] = (h.producer_id, first)
    rng = random.Random(7)
    i = 0
    while i < len(headers):
        j = min(len(headers), i + rng.randint(1, 12))
        got = set(log.aborted_transactions(headers[i].base_offset, headers[j - 1].last_offset + 1))
        assert {first_of[h.base_offset] for h in headers[i:j] if h.base_offset in first_of} <= got
        # ... and only aborted transactions begun before the read's end.
        assert got <= set(first_of.values()) and all(first <= headers[j - 1].last_offset for _, first in got)
        i = j
    log.close()


def test_a_lookup_costs_what_it_finds_not_the_aborted_transactions_before_it(tmp_path):
    # 200,000 aborted transactions, one after another: each lookup of one batch finds one.
    n = 200_000
    index = TransactionIndex(tmp_path / "x.txnindex", new=True)
    index.replace([AbortedTxn(i % 50, 3 * i, 3 * i + 1, 3 * i + 2) for i in range(n)])
    rng = random.Random(3)
    offsets = [3 * rng.randrange(n) for _ in range(2_000)]
    start = time.process_time()
    for offset in offsets:
        out: list[AbortedTxn] = []
        assert index.collect(offset, offset + 1, out) and len(out) == 1
    # A scan from the first entry took ~3 ms a lookup here (6 s in all); bisection ~5 µs.
    assert time.process_time() - start < 1.0
