"""Partition storage: segments of Kafka RecordBatch v2 bytes, indexes,
recovery and retention; producer state (idempotence, transactions, the
aborted-transaction index) and compaction. The bottom package: it imports
nothing of ours and knows nothing of Kafka requests or Event Hubs."""

# Names are imported from their modules on first use (PEP 562): a reader that needs only
# log.batch or log.reader (Capture's workers, each a fresh process) does not pay for the
# whole package.
_HOMES = {
    "BatchHeader": "batch",
    "iter_batches": "batch",
    "parse_header": "batch",
    "patch_base_offset": "batch",
    "set_log_append_time": "batch",
    "validate_records": "batch",
    "TOPIC_CONFIG_DEFAULTS": "config",
    "TOPIC_CONFIGS": "config",
    "LogConfig": "config",
    "CleanResult": "cleaner",
    "LogCleaner": "cleaner",
    "CorruptRecord": "errors",
    "InvalidProducerEpoch": "errors",
    "InvalidRecord": "errors",
    "InvalidTxnState": "errors",
    "LogClosed": "errors",
    "LogError": "errors",
    "OffsetOutOfRange": "errors",
    "OutOfOrderSequence": "errors",
    "ProducerStateError": "errors",
    "RecordTooLarge": "errors",
    "StorageError": "errors",
    "TopicExists": "errors",
    "TransactionCoordinatorFenced": "errors",
    "UnknownProducerId": "errors",
    "UnknownTopic": "errors",
    "UnsupportedMagic": "errors",
    "FileHandleCache": "handles",
    "AbortedTxn": "index",
    "LogManager": "manager",
    "TopicInfo": "manager",
    "validate_topic_name": "manager",
    "AppendInfo": "partition_log",
    "PartitionLog": "partition_log",
    "ProducerInfo": "producer_state",
    "LogSegment": "segment",
}


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "AbortedTxn", "AppendInfo", "BatchHeader", "CleanResult", "CorruptRecord", "FileHandleCache",
    "InvalidProducerEpoch", "InvalidRecord", "InvalidTxnState", "LogCleaner", "LogClosed", "LogConfig", "LogError",
    "LogManager", "LogSegment", "OffsetOutOfRange", "OutOfOrderSequence", "PartitionLog", "ProducerInfo",
    "ProducerStateError", "RecordTooLarge", "StorageError", "TOPIC_CONFIGS", "TOPIC_CONFIG_DEFAULTS", "TopicExists",
    "TopicInfo", "TransactionCoordinatorFenced", "UnknownProducerId", "UnknownTopic", "UnsupportedMagic",
    "iter_batches", "parse_header", "patch_base_offset", "set_log_append_time", "validate_records",
    "validate_topic_name",
]
