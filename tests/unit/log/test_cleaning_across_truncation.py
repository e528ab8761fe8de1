"""A cleaning that overlaps a truncation never brings the truncated records back.

The cleaner copies sealed segments on its own thread and swaps the copies in under the
partition lock. Truncation (a geo-replica following its primary, the old primary after a
promotion, ``truncate_to``) cuts a segment in place; a compacted segment it cuts is then
sealed again (it takes no appends) and stays in the log as the same object. The swap must
see that the log was cut since its copy was made and abandon the round, else the copy,
made before the cut, puts the records past the cut back: offsets the log hands out again.

The interleavings are fixed: the truncation runs in a hook between the cleaner's copy and
its swap (``PartitionLog.swap_cleaned``), on the cleaner's own call.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kafka_wire.log.cleaner import LogCleaner
from kafka_wire.log.config import LogConfig
from kafka_wire.log.manager import LogManager
from kafka_wire.log.partition_log import PartitionLog

from .log_helpers import keyed_batch, read_all, records_of

DAY = 24 * 3600 * 1000
TOPIC = {"cleanup.policy": "compact", "segment.bytes": "1024", "message.timestamp.type": "CreateTime",
         "delete.retention.ms": str(DAY)}


class Env:
    def __init__(self, path: Path):
        self.now = 10 * DAY
        self.path = path
        self.manager = LogManager(path, LogConfig(), clock=lambda: self.now)
        self.manager.create_topic("t", 1, dict(TOPIC))
        self.cleaner = LogCleaner(self.manager)

    @property
    def log(self) -> PartitionLog:
        return self.manager.get_log("t", 0)

    def put(self, key: bytes, value: bytes | None) -> None:
        self.log.append(keyed_batch([(key, value)], ts=self.now), now_ms=self.now)
        self.now += 1

    def clean(self):
        return self.cleaner.clean_now("t", 0, now_ms=self.now)

    def reopen(self) -> None:
        self.manager.close()
        self.manager = LogManager(self.path, LogConfig(), clock=lambda: self.now)
        self.cleaner = LogCleaner(self.manager)


def truncate_before_the_swap(log: PartitionLog, monkeypatch, choose_cut) -> list:
    """Make the cleaner's swap first cut ``log`` at ``choose_cut(groups)`` (None: no cut);
    returns the cuts made."""
    real = log.swap_cleaned
    cuts = []

    def swap_cleaned(groups, *args, **kwargs):
        cut = choose_cut(groups)
        if cut is not None:
            log.truncate_to(cut)
            cuts.append(cut)
        return real(groups, *args, **kwargs)

    monkeypatch.setattr(log, "swap_cleaned", swap_cleaned)
    return cuts


def assert_segments_do_not_overlap(log: PartitionLog) -> None:
    segs = log.segments
    for a, b in zip(segs, segs[1:]):
        assert a.next_offset <= b.base_offset, (a, b)


def test_a_cleaning_overlapping_a_truncation_into_a_compacted_segment_never_swaps_the_cut_records_back(
        tmp_path, monkeypatch):
    env = Env(tmp_path)
    for r in range(6):  # 10 keys, 5 of them deleted at the end, over several 1 KiB segments
        for i in range(10):
            env.put(b"k%d" % i, b"r%d-%d" % (r, i) + b"." * 20)
    for i in range(5):
        env.put(b"k%d" % i, None)
    env.log.roll()
    for r in range(3):  # a last segment of its own, compacted to two records
        for i in (5, 6):
            env.put(b"k%d" % i, b"s%d-%d" % (r, i) + b"." * 20)
    env.log.roll()
    assert env.clean() is not None  # the tombstones stay: their segments are younger than a day
    compacted = env.log.segments[-2]
    assert compacted.positions is not None and compacted.batch_index.entries >= 2
    # The second round drops the tombstones (delete.retention.ms passed): it rewrites the
    # compacted segments, the last of them included. Meanwhile the log is cut at the last
    # batch of that segment, which rolls again (a compacted segment takes no appends).
    env.now += 2 * DAY
    cut = compacted.base_offset + compacted.batch_index.last_entry()[0]
    kept = [r for r in records_of(read_all(env.log)) if r[0] < cut]
    cuts = truncate_before_the_swap(
        env.log, monkeypatch, lambda groups: cut if any(compacted in olds for olds, _ in groups) else None)
    env.clean()
    assert cuts == [cut]
    log = env.log
    assert log.log_end_offset == cut
    assert_segments_do_not_overlap(log)
    assert records_of(read_all(log)) == kept
    # The offsets past the cut are handed out again: each reads as what was written there now.
    env.put(b"new", b"after the cut")
    assert_segments_do_not_overlap(log)
    assert records_of(read_all(log)) == kept + [(cut, b"new", b"after the cut")]
    env.reopen()
    assert records_of(read_all(env.log)) == kept + [(cut, b"new", b"after the cut")]
    # A later round, with no truncation under it, compacts as usual.
    monkeypatch.undo()
    env.now += 2 * DAY
    assert env.clean() is not None
    assert_segments_do_not_overlap(env.log)
    got = records_of(read_all(env.log))
    assert (cut, b"new", b"after the cut") in got and all(v is not None for _, _, v in got)


@settings(max_examples=40, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate], suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    first=st.lists(st.tuples(st.integers(0, 7), st.booleans()), min_size=20, max_size=80),
    second=st.lists(st.tuples(st.integers(0, 7), st.booleans()), min_size=0, max_size=40),
    age=st.sampled_from([0, 2 * DAY]),
    at=st.floats(0, 1),
    data=st.data(),
)
def test_no_record_at_or_past_a_cut_made_during_a_cleaning_survives(tmp_path_factory, first, second, age, at,
                                                                      data):
    """Any workload of keys and tombstones, compacted once, written to again, then cleaned
    while the log is cut anywhere (in a compacted segment or not) between the copy and the
    swap: the log holds exactly what it held below the cut, before and after a restart."""
    from _pytest.monkeypatch import MonkeyPatch

    env = Env(tmp_path_factory.mktemp("cut"))
    n = 0
    for phase, ops in enumerate((first, second)):
        for key, delete in ops:
            env.put(b"k%d" % key, None if delete else b"p%d-%d" % (phase, n) + b"." * 30)
            n += 1
        env.log.roll()
        if phase == 0:
            env.clean()
    env.now += age
    before = records_of(read_all(env.log))
    offsets = [o for o, _, _ in before]
    if len(offsets) < 2:
        return
    cuts: list[int] = []

    def choose_cut(groups):
        # Anywhere past the first offset, or in the last segment the swap replaces: a cut
        # there deletes none of the others, so only the swap itself can tell.
        last = groups[-1][0][-1]
        inside = [o for o in offsets[1:] if last.base_offset <= o < last.next_offset]
        pool = inside if inside and data.draw(st.booleans(), label="cut the last segment swapped") else offsets[1:]
        return pool[int(at * (len(pool) - 1))]

    mp = MonkeyPatch()
    try:
        cuts = truncate_before_the_swap(env.log, mp, choose_cut)
        env.clean()
    finally:
        mp.undo()
    log = env.log
    end = log.log_end_offset
    assert end <= (cuts[0] if cuts else offsets[-1] + 1)
    kept = [r for r in before if r[0] < end]
    assert_segments_do_not_overlap(log)
    assert records_of(read_all(log)) == kept
    if data.draw(st.booleans(), label="append after the cut"):
        env.put(b"new", b"n")
        kept.append((end, b"new", b"n"))
        assert records_of(read_all(log)) == kept
    env.reopen()
    assert_segments_do_not_overlap(env.log)
    assert records_of(read_all(env.log)) == kept
    env.manager.close()


def test_a_key_deleted_after_a_truncation_below_the_cleaned_end_stays_deleted(tmp_path):
    """Truncation below the cleaner's checkpoint (the end of what it cleaned) lowers it, as
    Kafka's maybeTruncateCheckpoint does: what is written at the cut offsets again is dirty,
    so its keys supersede older values. Else a tombstone written there never removes the
    value before it, and once the tombstone itself goes (delete.retention.ms) the deleted
    key reads as that older value again."""
    env = Env(tmp_path)
    env.put(b"gone", b"old value")
    for r in range(4):
        for i in range(10):
            env.put(b"k%d" % i, b"r%d-%d" % (r, i) + b"." * 20)
    env.log.roll()
    assert env.clean() is not None
    compacted = env.log.segments[-2]
    cut = compacted.base_offset + compacted.batch_index.last_entry()[0]
    env.log.truncate_to(cut)  # below the cleaned end: a compacted segment, sealed again
    env.put(b"gone", None)  # deleted, at an offset the cleaner had cleaned before the cut
    env.log.roll()
    for i in range(10):  # past the old cleaned end
        env.put(b"k%d" % i, b"after-%d" % i + b"." * 20)
    env.log.roll()
    env.put(b"x", b"y")
    assert env.clean() is not None
    env.now += 2 * DAY  # the tombstone's delete.retention.ms passes
    assert env.clean() is not None
    env.put(b"z", b"z")
    env.log.roll()
    env.now += 2 * DAY
    env.clean()
    got = {k: v for _, k, v in records_of(read_all(env.log))}
    assert b"gone" not in got, got.get(b"gone")
