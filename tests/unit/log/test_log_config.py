"""LogConfig parsing of Kafka topic configs (log/config.py)."""

from __future__ import annotations

import pytest

from kafka_wire.log.config import LONG_MAX, TOPIC_CONFIG_DEFAULTS, TOPIC_CONFIGS, LogConfig


def test_defaults_follow_event_hubs_where_it_differs_from_kafka():
    c = LogConfig()
    assert c.max_message_bytes == 1_048_576
    assert c.message_timestamp_type == "LogAppendTime" and c.log_append_time
    assert c.segment_bytes == 1 << 30 and c.retention_ms == 7 * 24 * 3600 * 1000
    assert c.flush_messages is None and c.preallocate


def test_from_kafka_parses_strings_over_a_base():
    base = LogConfig(segment_bytes=4096)
    c = LogConfig.from_kafka(
        {"retention.ms": "-1", "cleanup.policy": "delete, compact", "flush.messages": "1",
         "message.timestamp.type": "createtime", "preallocate": "false"},
        base=base,
    )
    assert c.segment_bytes == 4096  # from base
    assert c.retention_ms == -1
    assert c.cleanup_policy == "compact,delete" and c.compact_enabled and c.delete_enabled
    assert c.flush_messages == 1 and c.message_timestamp_type == "CreateTime" and not c.preallocate


def test_to_kafka_round_trips_and_lists_every_known_key():
    c = LogConfig(retention_bytes=10, flush_ms=5, min_cleanable_dirty_ratio=0.25)
    out = c.to_kafka()
    assert set(out) == set(TOPIC_CONFIGS)
    assert out["flush.messages"] == str(LONG_MAX)  # Kafka's "never"
    assert LogConfig.from_kafka(out) == c


@pytest.mark.parametrize(
    "configs, message",
    [
        ({"segment.bytez": "1"}, "unknown topic config 'segment.bytez'"),
        ({"segment.bytes": "abc"}, "not an integer"),
        ({"segment.bytes": "1"}, "out of range"),
        ({"retention.ms": "-2"}, "out of range"),
        ({"message.timestamp.type": "Now"}, "CreateTime, LogAppendTime"),
        ({"cleanup.policy": "keep"}, "delete, compact"),
        ({"preallocate": "yes"}, "true or false"),
        ({"compression.type": "brotli"}, "producer"),
        ({"unclean.leader.election.enable": "true"}, "read-only"),
    ],
)
def test_invalid_values_say_what_is_valid(configs, message):
    with pytest.raises(ValueError, match=message):
        LogConfig.from_kafka(configs)


def test_read_only_keys_accept_their_default():
    assert LogConfig.from_kafka({"unclean.leader.election.enable": "false"}) == LogConfig()


def test_defaults_table_marks_read_only_keys():
    assert TOPIC_CONFIG_DEFAULTS["retention.ms"] == ("604800000", False)
    assert TOPIC_CONFIG_DEFAULTS["message.timestamp.type"] == ("LogAppendTime", False)
    assert TOPIC_CONFIG_DEFAULTS["remote.storage.enable"] == ("false", True)
