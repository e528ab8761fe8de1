"""Kafka error codes for the failures of lower layers, by name."""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire.log import errors as log_errors

NONE = Errors.NoError.errno


def for_log_error(exc: Exception) -> int:
    """The Kafka error code a client expects for a log-layer failure."""
    if isinstance(exc, log_errors.ProducerStateError):
        return exc.error_code  # sequence / epoch / transaction errors carry their Kafka code
    if isinstance(exc, log_errors.CorruptRecord):
        return Errors.CorruptRecordError.errno
    if isinstance(exc, log_errors.UnsupportedMagic):
        return Errors.UnsupportedForMessageFormatError.errno
    if isinstance(exc, log_errors.RecordTooLarge):
        return Errors.MessageSizeTooLargeError.errno
    if isinstance(exc, log_errors.UnsupportedCompression):  # before its base class, InvalidRecord
        return Errors.UnsupportedCompressionTypeError.errno
    if isinstance(exc, log_errors.InvalidRecord):
        return Errors.InvalidRecordError.errno
    if isinstance(exc, log_errors.OffsetOutOfRange):
        return Errors.OffsetOutOfRangeError.errno
    if isinstance(exc, (log_errors.StorageError, log_errors.LogClosed, OSError)):
        return Errors.KafkaStorageError.errno
    return Errors.UnknownError.errno
