"""The checkpoint log reader passes over a whole record of a kind it does not know (a
newer version wrote it; read after a downgrade) instead of ending the log there: every
record after it is kept, one warning counts them. A record cut short or failing its
CRC still ends the log, as a torn write. And the offset cleanup writes the removals of
the groups dropped as they emptied in one write."""
from __future__ import annotations

import logging
import os

import crc32c
import msgpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire.coordinator import consumer_group_records as records
from kafka_wire.coordinator.checkpoints import Checkpoint, EmbeddedCheckpointStore
from kafka_wire.coordinator.checkpoints.embedded import FILE_NAME, MAGIC
from kafka_wire.coordinator.record_log import frame

_KNOWN = {1, 2, 3} | set(records.KINDS)


def _put(ns, hub, group, partition, seq):
    return [1, ns, hub, group, partition, seq, seq * 10, -1, None, 0]


def _state(store):
    return sorted(store.load(), key=lambda c: c.key), store.group_records()


names = st.sampled_from(["a", "b", "ns/x", "é"])
known_record = st.one_of(
    st.builds(_put, names, names, names, st.integers(0, 3), st.integers(0, 1 << 40)),
    st.builds(lambda ns, hub, g, p: [2, ns, hub, g, p], names, names, names, st.integers(0, 3)),
    st.builds(lambda ns, g: [3, ns, g], names, names),
    st.builds(lambda ns, g, e: [records.GROUP, ns, g, e, e, []], names, names,
              st.integers(0, 99)),
    st.builds(lambda ns, g: [records.GROUP_GONE, ns, g], names, names),
    st.builds(lambda ns, g, e: [records.DROPPED, ns, g, e], names, names, st.integers(1, 99)),
)
# A newer version's record: a kind this one does not know, any body msgpack can carry.
_int64 = st.integers(-(1 << 63), (1 << 63) - 1)
unknown_record = st.builds(
    lambda kind, body: [kind, *body],
    st.integers(-5, 1000).filter(lambda k: k not in _KNOWN),
    st.lists(st.one_of(_int64, st.text(max_size=8), st.binary(max_size=8), st.none(),
                       st.lists(_int64, max_size=3)), max_size=6))


def _write(path, recs) -> None:
    with open(path, "wb") as f:
        f.write(MAGIC + b"".join(frame(r) for r in recs))


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(known_record, st.lists(unknown_record, max_size=2)), max_size=25))
def test_unknown_kinds_interleaved_read_the_same_known_records(tmp_path_factory, log):
    known = [k for k, _ in log]
    mixed = [r for k, extra in log for r in (*extra, k)]
    plain, with_unknown = tmp_path_factory.mktemp("plain"), tmp_path_factory.mktemp("mixed")
    _write(plain / FILE_NAME, known)
    _write(with_unknown / FILE_NAME, mixed)
    size = os.path.getsize(with_unknown / FILE_NAME)
    a, b = EmbeddedCheckpointStore(plain), EmbeddedCheckpointStore(with_unknown)
    try:
        assert _state(b) == _state(a)
        assert os.path.getsize(with_unknown / FILE_NAME) == size  # nothing cut off
        ro = EmbeddedCheckpointStore(with_unknown, read_only=True)
        assert _state(ro) == _state(a)
    finally:
        a.close()
        b.close()


def test_an_unknown_kind_is_counted_in_one_line_and_later_commits_kept(tmp_path, caplog):
    _write(tmp_path / FILE_NAME, [_put("ns", "hub", "g", 0, 1), [42, "ns", "g", {"new": 1}],
                                  [42, "ns", "h", "x"], [77], _put("ns", "hub", "g", 1, 2)])
    with caplog.at_level(logging.WARNING):
        store = EmbeddedCheckpointStore(tmp_path)
    assert [c.partition for c in store.load()] == [0, 1]
    lines = [r.getMessage() for r in caplog.records if "kinds this version" in r.getMessage()]
    assert len(lines) == 1 and "skipped 3 records" in lines[0], lines
    assert store.dead_records == 3  # the next compaction drops them
    store.put(Checkpoint("ns", "hub", "g", 2, 3, 30))
    store.close()
    again = EmbeddedCheckpointStore(tmp_path)
    assert sorted(c.partition for c in again.load()) == [0, 1, 2]
    again.close()


def test_a_corrupt_record_still_ends_the_log(tmp_path):
    good, unknown, after = _put("ns", "hub", "g", 0, 1), [42, "x"], _put("ns", "hub", "g", 1, 2)
    blob = frame(unknown)
    bad_crc = blob[:4] + (crc32c.crc32c(blob[8:]) ^ 1).to_bytes(4, "big") + blob[8:]
    with open(tmp_path / FILE_NAME, "wb") as f:
        f.write(MAGIC + frame(good) + bad_crc + frame(after))
    store = EmbeddedCheckpointStore(tmp_path)
    assert [c.partition for c in store.load()] == [0]
    assert os.path.getsize(tmp_path / FILE_NAME) == len(MAGIC) + len(frame(good))
    store.close()
    # A whole record that is not a list of a kind (no kind to skip by) ends it too.
    payload = msgpack.packb({"kind": 42})
    with open(tmp_path / FILE_NAME, "wb") as f:
        f.write(MAGIC + frame(good) + len(payload).to_bytes(4, "big")
                + crc32c.crc32c(payload).to_bytes(4, "big") + payload + frame(after))
    store = EmbeddedCheckpointStore(tmp_path)
    assert [c.partition for c in store.load()] == [0]
    store.close()


def test_the_cleanup_writes_every_dropped_groups_removal_at_once(tmp_path, monkeypatch):
    from kafka_wire.coordinator import GroupCoordinator, VirtualClock

    store = EmbeddedCheckpointStore(tmp_path)
    for i in range(50):
        store.write_group_records("default", f"g{i}", [[records.GROUP_GONE], [records.DROPPED, 1]])
    store.close()
    store = EmbeddedCheckpointStore(tmp_path)
    coordinator = GroupCoordinator(VirtualClock(), store=store)
    assert coordinator.consumer.was_dropped("g7")
    writes = []
    real = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: writes.append(len(data)) or real(fd, data))
    coordinator.cleanup_expired_offsets()
    monkeypatch.undo()
    assert len(writes) == 1, writes
    assert not coordinator.consumer.was_dropped("g7")
    assert store.group_records() == {}
    store.close()
    store = EmbeddedCheckpointStore(tmp_path)
    assert store.group_records() == {}
    store.close()
