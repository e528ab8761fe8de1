"""Partition storage: segments of Kafka RecordBatch v2 bytes, indexes,
recovery and retention; producer state (idempotence, transactions, the
aborted-transaction index) and compaction. The bottom package: it imports
nothing of ours and knows nothing of Kafka requests or Event Hubs."""

from .batch import BatchHeader, iter_batches, parse_header, patch_base_offset, set_log_append_time, validate_records
from .config import TOPIC_CONFIG_DEFAULTS, TOPIC_CONFIGS, LogConfig
from .cleaner import CleanResult, LogCleaner
from .errors import (
    CorruptRecord,
    InvalidProducerEpoch,
    InvalidRecord,
    InvalidTxnState,
    LogClosed,
    LogError,
    OffsetOutOfRange,
    OutOfOrderSequence,
    ProducerStateError,
    RecordTooLarge,
    StorageError,
    TopicExists,
    TransactionCoordinatorFenced,
    UnknownProducerId,
    UnknownTopic,
    UnsupportedMagic,
)
from .index import AbortedTxn
from .manager import LogManager, TopicInfo, validate_topic_name
from .partition_log import AppendInfo, PartitionLog
from .producer_state import ProducerInfo
from .segment import LogSegment

__all__ = [
    "AbortedTxn", "AppendInfo", "BatchHeader", "CleanResult", "CorruptRecord", "InvalidProducerEpoch",
    "InvalidRecord", "InvalidTxnState", "LogCleaner", "LogClosed", "LogConfig", "LogError", "LogManager",
    "LogSegment", "OffsetOutOfRange", "OutOfOrderSequence", "PartitionLog", "ProducerInfo", "ProducerStateError",
    "RecordTooLarge", "StorageError", "TOPIC_CONFIGS", "TOPIC_CONFIG_DEFAULTS", "TopicExists", "TopicInfo",
    "TransactionCoordinatorFenced", "UnknownProducerId", "UnknownTopic", "UnsupportedMagic", "iter_batches",
    "parse_header", "patch_base_offset", "set_log_append_time", "validate_records", "validate_topic_name",
]
