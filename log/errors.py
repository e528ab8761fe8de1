"""Errors raised by the log package.

The server maps these to Kafka error codes at its edge; the log itself knows no
error codes. Messages say what went wrong and, where a user can act, what to do.
"""

from __future__ import annotations


class LogError(Exception):
    """Base class of every error raised by ``log``."""


class CorruptRecord(LogError):
    """Bytes fail the CRC-32C check, or a batch is truncated (Kafka CORRUPT_MESSAGE)."""


class InvalidRecord(LogError):
    """A well-formed batch whose header violates a rule (Kafka INVALID_RECORD)."""


class UnsupportedMagic(LogError):
    """A record batch that is not RecordBatch v2 (magic 0/1 message sets are refused)."""


class RecordTooLarge(LogError):
    """A batch larger than the topic's max.message.bytes (Kafka MESSAGE_TOO_LARGE)."""


class OffsetOutOfRange(LogError):
    """An offset below the log start offset or above the log end offset."""

    def __init__(self, message: str, *, log_start_offset: int = -1, log_end_offset: int = -1):
        super().__init__(message)
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class StorageError(LogError):
    """An OSError (ENOSPC, EIO, ...) while writing; the log is left consistent.

    Kafka answers KAFKA_STORAGE_ERROR; the original OSError is ``__cause__``
    and its errno is kept in ``errno``.
    """

    def __init__(self, message: str, *, errno: int | None = None):
        super().__init__(message)
        self.errno = errno


class LogClosed(LogError):
    """The partition log was closed (topic deleted or broker shutting down)."""


class UnknownTopic(LogError):
    """No such topic (Kafka UNKNOWN_TOPIC_OR_PARTITION)."""


class TopicExists(LogError):
    """A topic of that name (or one colliding with it) exists (Kafka TOPIC_ALREADY_EXISTS)."""
