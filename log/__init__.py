"""Partition storage: segments of Kafka RecordBatch v2 bytes, indexes,
recovery and retention. The bottom package: it imports nothing of ours and
knows nothing of Kafka requests or Event Hubs."""

from .batch import BatchHeader, iter_batches, parse_header, patch_base_offset, set_log_append_time, validate_records
from .config import TOPIC_CONFIG_DEFAULTS, TOPIC_CONFIGS, LogConfig
from .errors import (
    CorruptRecord,
    InvalidRecord,
    LogClosed,
    LogError,
    OffsetOutOfRange,
    RecordTooLarge,
    StorageError,
    TopicExists,
    UnknownTopic,
    UnsupportedMagic,
)
from .manager import LogManager, TopicInfo, validate_topic_name
from .partition_log import AppendInfo, PartitionLog
from .segment import LogSegment

__all__ = [
    "AppendInfo", "BatchHeader", "CorruptRecord", "InvalidRecord", "LogClosed", "LogConfig", "LogError",
    "LogManager", "LogSegment", "OffsetOutOfRange", "PartitionLog", "RecordTooLarge", "StorageError",
    "TOPIC_CONFIGS", "TOPIC_CONFIG_DEFAULTS", "TopicExists", "TopicInfo", "UnknownTopic", "UnsupportedMagic",
    "iter_batches", "parse_header", "patch_base_offset", "set_log_append_time", "validate_records",
    "validate_topic_name",
]
