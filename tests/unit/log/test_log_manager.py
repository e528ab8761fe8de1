"""LogManager: topics, partitions and their configs on disk (log/manager.py)."""

from __future__ import annotations

import json
import uuid

import pytest

from kafka_wire.log.config import LogConfig
from kafka_wire.log.errors import TopicExists, UnknownTopic
from kafka_wire.log.manager import TOPICS_DIR, LogManager

from .log_helpers import batch_spans, make_batch

DEFAULT = LogConfig(segment_bytes=4096)


def manager(tmp_path, now=lambda: 1_000):
    return LogManager(tmp_path, DEFAULT, clock=now)


def test_create_topic_opens_its_partitions_at_once(tmp_path):
    mgr = manager(tmp_path)
    info = mgr.create_topic("orders", 3, {"retention.ms": "1000"})
    assert info.partitions == 3 and uuid.UUID(info.topic_id).version == 4
    assert info.configs == {"retention.ms": "1000"}
    assert info.config.retention_ms == 1000 and info.config.segment_bytes == 4096
    for p in range(3):
        assert (tmp_path / f"orders-{p}").is_dir()
        assert mgr.get_log("orders", p).config == info.config
    assert mgr.get_log("orders", 3) is None and mgr.get_log("nope", 0) is None
    meta = json.loads((tmp_path / TOPICS_DIR / "orders.json").read_text())
    assert meta == {"name": "orders", "topic_id": info.topic_id, "partitions": 3, "configs": {"retention.ms": "1000"},
                    "created_ms": info.created_ms}
    assert info.created_ms is not None  # Event Hubs' created_at


def test_reopening_the_root_loads_every_topic_and_its_data(tmp_path):
    mgr = manager(tmp_path)
    info = mgr.create_topic("a", 2)
    mgr.create_topic("b.c", 1, {"message.timestamp.type": "CreateTime"})
    mgr.get_log("a", 1).append(make_batch(2), now_ms=5)
    mgr.close()
    again = manager(tmp_path)
    assert set(again.topics()) == {"a", "b.c"}
    assert again.topic("a").topic_id == info.topic_id
    assert again.topic("b.c").config.message_timestamp_type == "CreateTime"
    assert batch_spans(again.get_log("a", 1).read(0, 1000)) == [(0, 1)]


def test_reopening_after_a_crash_recovers_the_logs(tmp_path):
    mgr = manager(tmp_path)
    mgr.create_topic("a", 1)
    mgr.get_log("a", 0).append(make_batch(2), now_ms=5)
    # no close(): the process died
    again = manager(tmp_path)
    assert again.get_log("a", 0).log_end_offset == 2


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a b", "x" * 250, "ünïcode"])
def test_invalid_topic_names_are_refused(tmp_path, name):
    with pytest.raises(ValueError, match="letters, digits"):
        manager(tmp_path).create_topic(name, 1)


def test_duplicate_and_colliding_topics_are_refused(tmp_path):
    mgr = manager(tmp_path)
    mgr.create_topic("a.b", 1)
    with pytest.raises(TopicExists):
        mgr.create_topic("a.b", 1)
    with pytest.raises(TopicExists, match="collides"):
        mgr.create_topic("a_b", 1)


def test_invalid_configs_and_partition_counts_create_nothing(tmp_path):
    mgr = manager(tmp_path)
    with pytest.raises(ValueError, match="retention.ms"):
        mgr.create_topic("t", 1, {"retention.ms": "soon"})
    with pytest.raises(ValueError, match="at least 1"):
        mgr.create_topic("t", 0)
    assert mgr.topics() == {} and not (tmp_path / "t-0").exists()


def test_delete_topic_removes_logs_and_metadata(tmp_path):
    mgr = manager(tmp_path)
    mgr.create_topic("gone", 2)
    log = mgr.get_log("gone", 0)
    log.append(make_batch(1), now_ms=1)
    view = log.read(0, 100)
    mgr.delete_topic("gone")
    assert mgr.topic("gone") is None and mgr.get_log("gone", 0) is None
    assert not any(p.name.startswith("gone") for p in tmp_path.iterdir())
    assert not (tmp_path / TOPICS_DIR / "gone.json").exists()
    assert len(bytes(view)) > 0  # an in-flight read keeps its bytes
    with pytest.raises(UnknownTopic):
        mgr.delete_topic("gone")
    # The name can be reused at once, with a new identity.
    assert mgr.create_topic("gone", 1).partitions == 1
    assert mgr.get_log("gone", 0).log_end_offset == 0


def test_leftovers_of_an_interrupted_delete_are_removed_at_start(tmp_path):
    manager(tmp_path).close()
    (tmp_path / "old-0.1234abcd.deleted").mkdir()
    (tmp_path / "old-0.1234abcd.deleted" / "00000000000000000000.log").write_bytes(b"x")
    manager(tmp_path)
    assert not (tmp_path / "old-0.1234abcd.deleted").exists()


def test_create_partitions_adds_empty_partitions(tmp_path):
    mgr = manager(tmp_path)
    mgr.create_topic("t", 1)
    info = mgr.create_partitions("t", 4)
    assert info.partitions == 4 and mgr.get_log("t", 3).log_end_offset == 0
    with pytest.raises(ValueError, match="must be larger"):
        mgr.create_partitions("t", 4)
    mgr.close()
    assert manager(tmp_path).topic("t").partitions == 4


def test_alter_topic_config_applies_to_open_logs_and_persists(tmp_path):
    mgr = manager(tmp_path)
    mgr.create_topic("t", 2, {"retention.ms": "1000", "segment.ms": "5000"})
    info = mgr.alter_topic_config("t", {"message.timestamp.type": "CreateTime", "segment.ms": None})
    assert info.configs == {"retention.ms": "1000", "message.timestamp.type": "CreateTime"}
    assert mgr.get_log("t", 1).config.message_timestamp_type == "CreateTime"
    assert mgr.get_log("t", 1).config.segment_ms == DEFAULT.segment_ms
    assert mgr.get_log("t", 1).append(make_batch(1, ts=3), now_ms=99).log_append_time is False
    info = mgr.alter_topic_config("t", {"retention.bytes": "10"}, replace=True)
    assert info.configs == {"retention.bytes": "10"}
    with pytest.raises(ValueError):
        mgr.alter_topic_config("t", {"retention.bytes": "lots"})
    assert mgr.topic("t").configs == {"retention.bytes": "10"}
    mgr.close()
    assert manager(tmp_path).topic("t").config.retention_bytes == 10


def test_enforce_retention_runs_over_every_partition(tmp_path):
    mgr = manager(tmp_path)
    mgr.create_topic("t", 2, {"retention.ms": "100", "segment.bytes": "200"})
    for p in range(2):
        for i in range(5):
            mgr.get_log("t", p).append(make_batch(1, value_size=150), now_ms=i)
    assert mgr.enforce_retention(10_000) == 10
    assert all(mgr.get_log("t", p).log_start_offset == 5 for p in range(2))
    mgr.flush()
    mgr.close()


def test_flusher_pass_fsyncs_rolled_segments_and_leaves_unused_partitions_unloaded(tmp_path):
    """The log flusher's pass, about once a second over every partition (10,000 on a
    Dedicated namespace): segments rolled since the last pass are fsynced, partitions
    never used stay unloaded, and their flush.ms still sets when the pass comes again."""
    mgr = manager(tmp_path)
    mgr.create_topic("rolls", 1, {"segment.bytes": "300"})
    mgr.create_topic("idle", 50, {"flush.ms": "250"})
    plog = mgr.get_log("rolls", 0)
    for i in range(6):
        plog.append(make_batch(1, value_size=150), now_ms=1_000 + i)
    rolled = list(plog._rolled)
    assert rolled and all(seg.dirty for seg in rolled)
    assert mgr.flush_due(2_000) == 250
    assert plog._rolled == [] and not any(seg.dirty for seg in rolled)
    assert not any(mgr.get_log("idle", p).loaded for p in range(50))
    assert mgr.flush_due(2_100) == 250  # nothing left to do: the same answer
    mgr.close()


def test_flush_ms_fsyncs_without_a_further_append(tmp_path):
    """Kafka's log flusher: data older than flush.ms is fsynced by the periodic
    pass even when nothing more is appended (the broker runs it off its loop)."""
    mgr = manager(tmp_path)
    mgr.create_topic("slow", 1, {"flush.ms": "100"})
    mgr.create_topic("never", 1, {})
    plog = mgr.get_log("slow", 0)
    plog.append(make_batch(3), now_ms=1_000)
    assert plog._unflushed == 1  # within flush.ms of the last flush: not yet
    assert mgr.flush_due(1_050) == 100 and plog._unflushed == 1
    assert mgr.flush_due(1_200) == 100
    assert plog._unflushed == 0
    assert not any(seg.dirty for seg in plog._segments)
    mgr.close()
