"""log.reader: a kept PartitionReader's ends() and stable_end(), answered from its
segments' summaries (open transactions, markers' producers) kept as batches are first
read, always equal a scan from scratch of what the directory holds: after appends,
transactions committed, aborted or left open across segments, rolls, the cleaner's
swaps, retention's deletions and truncation, with the ``.batches`` index written
after a step or not (an ABORT's ``.txnindex`` entry is, before its marker is listed)."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire.log.cleaner import LogCleaner
from kafka_wire.log.config import LogConfig
from kafka_wire.log.errors import ProducerStateError
from kafka_wire.log.index import TXN_ENTRY
from kafka_wire.log.manager import LogManager
from kafka_wire.log.reader import PartitionReader, StoredBatch

from .log_helpers import keyed_batch

RETENTION_MS = 50_000


def scratch_ends(directory, start: int) -> tuple[int, StoredBatch | None]:
    """ends(start) the long way: every batch a new reader scans from ``start``, each
    transactional data batch resolved by a later marker of its producer or by a
    ``.txnindex`` entry (read here from the files), the first unresolved one ending it."""
    reader = PartitionReader(directory)
    start = max(start, reader.log_start_offset())
    scanned = list(reader.scan(start))
    aborted = []
    for path in directory.glob("*.txnindex"):
        data = path.read_bytes()
        for version, pid, first, last, _ in TXN_ENTRY.iter_unpack(data[: len(data) - len(data) % TXN_ENTRY.size]):
            if version == 0 and first <= last:
                aborted.append((pid, first, last))
    for i, b in enumerate(scanned):
        h = b.header
        if h.is_control or not h.records_count or not h.is_transactional:
            continue
        if any(pid == h.producer_id and first <= b.base_offset <= last for pid, first, last in aborted):
            continue
        if not any(c.header.is_control and c.header.producer_id == h.producer_id for c in scanned[i + 1 :]):
            return b.base_offset, scanned[-1]
    return (scanned[-1].next_offset, scanned[-1]) if scanned else (start, None)


class Partition:
    """One partition of a compacted, retained topic, driven step by step."""

    def __init__(self, directory) -> None:
        self.now = 1_000
        self.manager = LogManager(directory, LogConfig(segment_bytes=1024, cleanup_policy="compact,delete",
                                                       retention_ms=RETENTION_MS), clock=lambda: self.now)
        self.manager.create_topic("t", 1)
        self.log = self.manager.get_log("t", 0)
        self.pids = 0  # producer ids in use: pids + 1 .. pids + 3
        self.sequences: dict[int, int] = {}

    def append(self, key: int, size: int) -> None:
        self.log.append(keyed_batch([(b"k%d" % key, b"v" * size)], ts=self.now), now_ms=self.now)
        self.now += 1

    def txn_data(self, producer: int, key: int, size: int) -> None:
        pid = self.pids + producer
        seq = self.sequences.get(pid, 0)
        batch = keyed_batch([(b"k%d" % key, b"t" * size)] * 2, ts=self.now, producer_id=pid, base_sequence=seq,
                            transactional=True)
        try:
            self.log.append(batch, now_ms=self.now)
        except ProducerStateError:  # the producer's state went with a cut or retention: new producers
            self.pids += 3
            return
        self.sequences[pid] = seq + 2
        self.now += 1

    def marker(self, producer: int, commit: bool) -> None:
        self.log.append_control(self.pids + producer, 0, commit, 0, now_ms=self.now)
        self.now += 1

    def close(self) -> None:
        self.manager.close()


STEPS = st.lists(
    st.tuples(st.one_of(
        st.tuples(st.just("append"), st.integers(1, 6), st.integers(20, 300)),
        st.tuples(st.just("txn"), st.integers(1, 3), st.integers(20, 300)),
        st.tuples(st.just("commit"), st.integers(1, 3), st.just(0)),
        st.tuples(st.just("abort"), st.integers(1, 3), st.just(0)),
        st.tuples(st.sampled_from(["roll", "clean", "retention"]), st.just(0), st.just(0)),
        st.tuples(st.just("truncate"), st.integers(0, 1_000), st.just(0)),
    ), st.booleans()),  # whether the broker's flusher writes the .batches entries it holds, after the step
    min_size=1,
    max_size=25,
)


@settings(max_examples=60, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(STEPS)
def test_a_kept_readers_ends_always_equal_a_scan_from_scratch(tmp_path_factory, steps):
    p = Partition(tmp_path_factory.mktemp("p"))
    try:
        log = p.log
        reader = PartitionReader(log.directory)  # kept across every step, as Capture keeps it
        for (op, arg, size), flush in steps:
            if op == "append":
                for i in range(arg):
                    p.append(i % 4, size)
            elif op == "txn":
                p.txn_data(arg, arg, size)
            elif op in ("commit", "abort"):
                p.marker(arg, op == "commit")
            elif op == "roll":
                log.roll()
            elif op == "clean":
                LogCleaner(p.manager).clean_now("t", 0, now_ms=p.now)  # swaps segments: new inodes
            elif op == "retention":
                p.now += RETENTION_MS + 1
                p.append(0, 20)
                log.enforce_retention(p.now)  # deletes the oldest segments, moves the log start
            elif op == "truncate" and log.log_end_offset > log.log_start_offset:
                log.truncate_to(log.log_start_offset + arg % (log.log_end_offset - log.log_start_offset))
            if flush:  # else the index may not list a marker whose .txnindex entry is written
                log.write_pending_entries()
            end = log.log_end_offset
            for start in sorted({0, log.log_start_offset, (log.log_start_offset + end) // 2, max(end - 3, 0), end}):
                expected = scratch_ends(log.directory, start)
                assert reader.ends(start) == expected, (op, start)
                assert reader.stable_end(start) == expected[0]
                fresh = PartitionReader(log.directory)
                assert ([b.base_offset for b in reader.batches(start, with_data=False)]
                        == [b.base_offset for b in fresh.batches(start, with_data=False)])
    finally:
        p.close()
