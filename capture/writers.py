"""Capture file writers: Avro (fastavro) and Parquet (pyarrow).

A file appears atomically: it is written under a hidden temporary name in its
final directory, fsynced, then renamed, so a reader (or a restarted job) sees
a whole file or none. Rewriting a file (a replayed micro-batch) replaces it
the same way. Avro files are byte-for-byte reproducible: the sync marker is
derived from the file name instead of being random, so a replay writes the
same bytes.
"""

from __future__ import annotations

import hashlib
import logging
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import fastavro
import pyarrow.parquet as pq

from kafka_wire.log.recovery import fsync_dir

from .avro_blocks import AvroBlocks
from .events import EventBatch, arrow_table
from .naming import file_name_error
from .schema import ARROW_SCHEMA, AVRO_CODEC, AVRO_SCHEMA

logger = logging.getLogger(__name__)

ENCODINGS = ("avro", "parquet")
TMP_PREFIX = ".capture-"


@dataclass(frozen=True)
class FileInfo:
    """A written capture file, with what CaptureFileCreated reports."""

    name: str  # relative to the output directory
    path: str  # absolute
    partition: int
    size_bytes: int
    event_count: int
    first_sequence_number: int  # -1 for an empty file
    last_sequence_number: int
    first_enqueued_ms: int  # -1 for an empty file
    last_enqueued_ms: int


def normalize_encoding(encoding: str) -> str:
    value = encoding.lower()
    if value not in ENCODINGS:
        raise ValueError(f"capture encoding {encoding!r} is unknown: use avro or parquet")
    return value


class CaptureWriter:
    """Writes one capture file; ``close`` publishes it, ``abort`` drops it."""

    def __init__(self, out_dir: str | os.PathLike, name: str, partition: int, encoding: str, *,
                 partition_key: bool = True, fsync: bool = True):
        problem = file_name_error(name)
        if problem:  # whatever made the name (a format, a hub's name), no file goes outside out_dir
            raise ValueError(f"capture file name {name!r} is refused: {problem}")
        self.name = name
        self.partition = partition
        self.encoding = normalize_encoding(encoding)
        self.partition_key = partition_key
        self.fsync = fsync
        self.path = Path(out_dir) / name
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = self.path.with_name(f"{TMP_PREFIX}{self.path.name}.{uuid.uuid4().hex[:8]}")
        self._fo = open(self._tmp, "wb")
        self._count = 0
        self._first = self._last = -1
        self._first_ms = self._last_ms = -1
        if self.encoding == "avro":
            marker = hashlib.md5(name.encode()).digest()  # 16 bytes: Avro's sync marker size
            # The schema as defined (not fastavro's parsed form), so files declare name and namespace as Event
            # Hubs does. fastavro writes the header; the records are AvroBlocks' (the same bytes, faster).
            fastavro.write.Writer(self._fo, AVRO_SCHEMA, codec=AVRO_CODEC, sync_marker=marker)
            self._avro = AvroBlocks(self._fo, marker, partition_key=partition_key)
            self._parquet = None
        else:
            self._avro = None
            self._parquet = pq.ParquetWriter(self._fo, ARROW_SCHEMA, compression="snappy")

    def write(self, events: EventBatch) -> None:
        if not len(events):
            return
        if self._count == 0:
            self._first, self._first_ms = events.sequence_numbers[0], events.enqueued_ms[0]
        self._last, self._last_ms = events.sequence_numbers[-1], events.enqueued_ms[-1]
        self._count += len(events)
        if self._avro is not None:
            self._avro.write(events)
        else:
            self._parquet.write_table(arrow_table(events, partition_key=self.partition_key))

    def close(self) -> FileInfo:
        try:
            if self._avro is not None:
                self._avro.flush()
            else:
                self._parquet.close()
            self._fo.flush()
            if self.fsync:
                os.fsync(self._fo.fileno())
            self._fo.close()
            size = self._tmp.stat().st_size
            os.replace(self._tmp, self.path)
            if self.fsync:
                fsync_dir(self.path.parent)
        except BaseException:
            self.abort()
            raise
        logger.debug("wrote %s: %d events, %d bytes", self.path, self._count, size)
        return FileInfo(self.name, str(self.path), self.partition, size, self._count, self._first, self._last,
                        self._first_ms, self._last_ms)

    def abort(self) -> None:
        if not self._fo.closed:
            self._fo.close()
        self._tmp.unlink(missing_ok=True)


def remove_leftovers(out_dir: str | os.PathLike) -> int:
    """Delete temporary files a killed writer left behind; returns how many."""
    n = 0
    for dirpath, _, filenames in os.walk(out_dir):
        for fn in filenames:
            if fn.startswith(TMP_PREFIX):
                Path(dirpath, fn).unlink(missing_ok=True)
                n += 1
    return n

