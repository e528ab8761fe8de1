"""The log's Kafka error codes are kafka-python's, name for name (the log does not
import kafka-python, to keep Capture's worker processes quick to start); a
process that reads the log for Capture does not import the broker's half of it."""
from __future__ import annotations

import subprocess
import sys

import kafka.errors as kafka_errors

from kafka_wire.log import errors


def test_the_codes_are_kafka_pythons():
    assert errors.UNKNOWN_SERVER_ERROR == kafka_errors.UnknownError.errno
    assert errors.OUT_OF_ORDER_SEQUENCE_NUMBER == kafka_errors.OutOfOrderSequenceNumberError.errno
    assert errors.INVALID_PRODUCER_EPOCH == kafka_errors.InvalidProducerEpochError.errno
    assert errors.INVALID_TXN_STATE == kafka_errors.InvalidTxnStateError.errno
    assert errors.TRANSACTION_COORDINATOR_FENCED == kafka_errors.TransactionCoordinatorFencedError.errno
    assert errors.UNKNOWN_PRODUCER_ID == kafka_errors.UnknownProducerIdError.errno


def test_capture_workers_import_neither_kafka_python_nor_the_log_manager():
    code = ("import sys, kafka_wire.spark.sink, kafka_wire.spark.source; "
            "print(sorted(m for m in ('kafka', 'kafka_wire.log.manager', 'kafka_wire.log.cleaner') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]", out.stdout
