"""Errors raised by the log package.

The server maps these to Kafka error codes at its edge. The exception is the
producer-state family (idempotence and transactions): each maps to exactly one
Kafka error, so it carries that code in ``error_code`` (Kafka's protocol error
codes, named as the protocol names them; a unit test holds them equal to
kafka-python's ``kafka.errors``, which this module does not import: importing
kafka-python costs ~0.15 s, paid by every Capture worker process). Messages say
what went wrong and, where a user can act, what to do.
"""

from __future__ import annotations

# Kafka protocol error codes (org.apache.kafka.common.protocol.Errors)
UNKNOWN_SERVER_ERROR = -1
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
INVALID_PRODUCER_EPOCH = 47
INVALID_TXN_STATE = 48
TRANSACTION_COORDINATOR_FENCED = 52
UNKNOWN_PRODUCER_ID = 59


class LogError(Exception):
    """Base class of every error raised by ``log``."""


class CorruptRecord(LogError):
    """Bytes fail the CRC-32C check, or a batch is truncated (Kafka CORRUPT_MESSAGE)."""


class InvalidRecord(LogError):
    """A well-formed batch whose header violates a rule (Kafka INVALID_RECORD)."""


class UnsupportedCompression(InvalidRecord):
    """A batch whose attributes name a compression codec Kafka does not define (5-7),
    or zstd in a Produce older than v7 (Kafka UNSUPPORTED_COMPRESSION_TYPE)."""


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


class ProducerStateError(LogError):
    """A batch refused by the producer-state checks (idempotence, transactions).

    ``error_code`` is the Kafka error code the Produce (or WriteTxnMarkers)
    response carries; the log is unchanged when one is raised.
    """

    error_code: int = UNKNOWN_SERVER_ERROR


class OutOfOrderSequence(ProducerStateError):
    """The batch's first sequence does not follow the producer's last one
    (Kafka OUT_OF_ORDER_SEQUENCE_NUMBER); the client retries the earlier batch."""

    error_code = OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpoch(ProducerStateError):
    """The batch's producer epoch is older than the one the partition knows
    (Kafka INVALID_PRODUCER_EPOCH, which Kafka 2.7+ answers instead of
    PRODUCER_FENCED for transactional producers too): a newer instance of this
    producer exists."""

    error_code = INVALID_PRODUCER_EPOCH


class UnknownProducerId(ProducerStateError):
    """No state is left for this producer id (expired, or its data was deleted)
    and the batch does not start a sequence (Kafka UNKNOWN_PRODUCER_ID): the
    client resets its sequence numbers."""

    error_code = UNKNOWN_PRODUCER_ID


class InvalidTxnState(ProducerStateError):
    """A non-transactional batch from a producer with an open transaction
    (Kafka INVALID_TXN_STATE)."""

    error_code = INVALID_TXN_STATE


class TransactionCoordinatorFenced(ProducerStateError):
    """A transaction marker from a coordinator epoch older than the last one
    seen for this producer (Kafka TRANSACTION_COORDINATOR_FENCED)."""

    error_code = TRANSACTION_COORDINATOR_FENCED
