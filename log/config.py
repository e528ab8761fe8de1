"""LogConfig: the topic configs that affect storage, in one typed place.

Kafka names map to snake_case fields (``segment.bytes`` -> ``segment_bytes``).
Defaults are Kafka's except where Event Hubs differs (max.message.bytes is the
Event Hubs 1 MiB limit, message.timestamp.type is LogAppendTime because Event
Hubs stamps the enqueued time) or where a local emulator wants something else
(preallocate on: sparse files cost nothing and keep the write path simple).

``TOPIC_CONFIGS`` lists every key DescribeConfigs should show, with its default
string and whether it may be altered. Read-only keys are Kafka configs that this
broker accepts for compatibility (tools copy them around) but does not act on;
they may be set only to their default value.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple

logger = logging.getLogger(__name__)

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
GIB = 1 << 30
MIB = 1 << 20
DAY_MS = 24 * 3600 * 1000

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("delete", "compact")
COMPRESSION_TYPES = ("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd")


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = GIB
    segment_ms: int = 7 * DAY_MS
    retention_ms: int = 7 * DAY_MS  # -1: unlimited
    retention_bytes: int = -1  # -1: unlimited
    index_interval_bytes: int = 4096
    segment_index_bytes: int = 10 * MIB  # max .index/.timeindex size; roll when full
    max_message_bytes: int = 1_048_576  # largest batch accepted (Event Hubs: 1 MiB)
    message_timestamp_type: str = "LogAppendTime"
    cleanup_policy: str = "delete"  # "delete", "compact" or "compact,delete"
    delete_retention_ms: int = DAY_MS
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5
    flush_messages: int | None = None  # None: leave it to the page cache
    flush_ms: int | None = None
    preallocate: bool = True
    min_insync_replicas: int = 1
    compression_type: str = "producer"
    # Broker-wide, not a topic config (Kafka's producer.id.expiration.ms): producer
    # state idle this long, with no open transaction, is forgotten.
    producer_id_expiration_ms: int = DAY_MS

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def delete_enabled(self) -> bool:
        return "delete" in self.cleanup_policy.split(",")

    @property
    def compact_enabled(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @classmethod
    def from_kafka(cls, configs: Mapping[str, str] | None, base: LogConfig | None = None) -> LogConfig:
        """Parse Kafka string configs over ``base`` (default: LogConfig()).

        Raises ValueError naming the key and what values are valid.
        """
        changes: dict[str, Any] = {}
        for key, raw in (configs or {}).items():
            spec = TOPIC_CONFIGS.get(key)
            if spec is None:
                raise ValueError(f"unknown topic config {key!r}: known configs are {', '.join(sorted(TOPIC_CONFIGS))}")
            if raw is None:
                raw = spec.default  # a null value in AlterConfigs means "back to default"
            value = spec.parse(key, str(raw))
            if spec.field is None:
                if value != spec.parse(key, spec.default):
                    raise ValueError(
                        f"topic config {key!r} is read-only here: only its default {spec.default!r} is accepted"
                    )
                continue
            changes[spec.field] = value
        config = dataclasses.replace(base or cls(), **changes)
        config._check()
        return config

    def to_kafka(self) -> dict[str, str]:
        """Every known key as Kafka strings (read-only ones at their default)."""
        out = {}
        for key, spec in TOPIC_CONFIGS.items():
            out[key] = spec.default if spec.field is None else spec.format(getattr(self, spec.field))
        return out

    def _check(self) -> None:
        if self.segment_index_bytes < 12:
            raise ValueError("segment.index.bytes must be at least 12")


# -- parsing helpers -----------------------------------------------------------


def _int(lo: int, hi: int = LONG_MAX) -> Callable[[str, str], int]:
    def parse(key: str, raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise ValueError(f"topic config {key!r}={raw!r} is not an integer") from None
        if not lo <= value <= hi:
            raise ValueError(f"topic config {key!r}={raw!r} is out of range: use an integer in [{lo}, {hi}]")
        return value

    return parse


def _optional_long(lo: int) -> Callable[[str, str], int | None]:
    inner = _int(lo)

    def parse(key: str, raw: str) -> int | None:
        value = inner(key, raw)
        return None if value == LONG_MAX else value  # Kafka's "never" is Long.MAX_VALUE

    return parse


def _choice(choices: tuple[str, ...]) -> Callable[[str, str], str]:
    def parse(key: str, raw: str) -> str:
        for choice in choices:
            if raw.strip().lower() == choice.lower():
                return choice
        raise ValueError(f"topic config {key!r}={raw!r} is invalid: use one of {', '.join(choices)}")

    return parse


def _bool(key: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value not in ("true", "false"):
        raise ValueError(f"topic config {key!r}={raw!r} is invalid: use true or false")
    return value == "true"


def _ratio(key: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"topic config {key!r}={raw!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"topic config {key!r}={raw!r} is out of range: use a number in [0, 1]")
    return value


def _cleanup_policy(key: str, raw: str) -> str:
    parts = sorted({p.strip().lower() for p in raw.split(",") if p.strip()})
    if not parts or any(p not in CLEANUP_POLICIES for p in parts):
        raise ValueError(f"topic config {key!r}={raw!r} is invalid: use delete, compact or compact,delete")
    return ",".join(parts)


def _string(key: str, raw: str) -> str:
    return raw


def _format(value: Any) -> str:
    if value is None:
        return str(LONG_MAX)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class TopicConfigSpec(NamedTuple):
    """One row of the DescribeConfigs table."""

    field: str | None  # LogConfig field; None for read-only compatibility keys
    default: str
    read_only: bool
    parse: Callable[[str, str], Any]
    doc: str

    def format(self, value: Any) -> str:
        return _format(value)


def _row(field: str, parse: Callable[[str, str], Any], doc: str) -> TopicConfigSpec:
    return TopicConfigSpec(field, _format(getattr(LogConfig(), field)), False, parse, doc)


def _fixed(default: str, parse: Callable[[str, str], Any], doc: str) -> TopicConfigSpec:
    return TopicConfigSpec(None, default, True, parse, doc)


TOPIC_CONFIGS: dict[str, TopicConfigSpec] = {
    "segment.bytes": _row("segment_bytes", _int(14, INT_MAX), "Size at which a log segment is rolled."),
    "segment.ms": _row("segment_ms", _int(1), "Age (since its first batch) at which a segment is rolled."),
    "retention.ms": _row("retention_ms", _int(-1), "How long data is kept; -1 keeps it forever."),
    "retention.bytes": _row("retention_bytes", _int(-1), "Partition size above which old segments go; -1: no limit."),
    "index.interval.bytes": _row("index_interval_bytes", _int(0, INT_MAX), "Bytes of log between offset index entries."),
    "segment.index.bytes": _row("segment_index_bytes", _int(12, INT_MAX), "Maximum size of an index file."),
    "max.message.bytes": _row("max_message_bytes", _int(0, INT_MAX), "Largest record batch accepted."),
    "message.timestamp.type": _row(
        "message_timestamp_type", _choice(TIMESTAMP_TYPES), "CreateTime or LogAppendTime (the broker's clock)."
    ),
    "cleanup.policy": _row("cleanup_policy", _cleanup_policy, "delete, compact, or compact,delete."),
    "delete.retention.ms": _row("delete_retention_ms", _int(0), "How long compaction keeps tombstones."),
    "min.compaction.lag.ms": _row("min_compaction_lag_ms", _int(0), "Minimum age before a record may be compacted."),
    "max.compaction.lag.ms": _row("max_compaction_lag_ms", _int(1), "Maximum age before a record is compacted."),
    "min.cleanable.dirty.ratio": _row("min_cleanable_dirty_ratio", _ratio, "Dirty share that triggers compaction."),
    "flush.messages": _row("flush_messages", _optional_long(1), "fsync after this many batches; default never."),
    "flush.ms": _row("flush_ms", _optional_long(0), "fsync at most this long after a write; default never."),
    "preallocate": _row("preallocate", _bool, "Preallocate (sparse) segment files at segment.bytes."),
    "min.insync.replicas": _row("min_insync_replicas", _int(1, INT_MAX), "Replicas that must ack acks=all writes."),
    "compression.type": _row(
        "compression_type", _choice(COMPRESSION_TYPES), "Stored compression; only 'producer' keeps batches as sent."
    ),
    # Accepted for compatibility with tools that copy topic configs; not acted on.
    "unclean.leader.election.enable": _fixed("false", _bool, "Single replica: never applies."),
    "message.downconversion.enable": _fixed("true", _bool, "Only RecordBatch v2 is served."),
    "leader.replication.throttled.replicas": _fixed("", _string, "No replication."),
    "follower.replication.throttled.replicas": _fixed("", _string, "No replication."),
    "segment.jitter.ms": _fixed("0", _int(0), "Segments roll without jitter."),
    "file.delete.delay.ms": _fixed("60000", _int(0), "Deleted segments are unlinked at once."),
    "message.timestamp.difference.max.ms": _fixed(str(LONG_MAX), _int(0), "CreateTime is not bounded."),
    "message.timestamp.before.max.ms": _fixed(str(LONG_MAX), _int(0), "CreateTime is not bounded."),
    "message.timestamp.after.max.ms": _fixed(str(LONG_MAX), _int(0), "CreateTime is not bounded."),
    "remote.storage.enable": _fixed("false", _bool, "No tiered storage."),
    "local.retention.ms": _fixed("-2", _int(-2), "No tiered storage."),
    "local.retention.bytes": _fixed("-2", _int(-2), "No tiered storage."),
}

# key -> (default string, read_only), for DescribeConfigs.
TOPIC_CONFIG_DEFAULTS: dict[str, tuple[str, bool]] = {k: (v.default, v.read_only) for k, v in TOPIC_CONFIGS.items()}
