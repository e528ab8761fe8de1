"""Where the Spark source gets record batches: the log directory, or Kafka.

Both backends answer the same three questions for (event hub, partition):
how many partitions, which data batches lie past an offset (for planning:
offsets, append time, size, no bytes), and the batches of an offset range
with their bytes (for the executors). ``open_backend`` picks one from the
source options.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterator, Protocol

from kafka_wire.capture.windows import BatchRef
from kafka_wire.log.reader import LogChanged, PartitionReader, StoredBatch, read_topic_partitions

logger = logging.getLogger(__name__)



class Backend(Protocol):
    def partition_count(self, hub: str) -> int: ...

    def log_start(self, hub: str, partition: int) -> int: ...

    def end_offset(self, hub: str, partition: int) -> int:
        """The stable end: what may be read now (read_committed)."""
        ...

    def refs(self, hub: str, partition: int, start: int, end: int | None = None,
             start_pos: int | None = None) -> tuple[list[BatchRef], int]:
        """Data batches from ``start`` to ``end`` (default: the stable end),
        and that end. ``start_pos``: the byte position of ``start``, for
        backends that cannot see it (``needs_positions``)."""
        ...

    def read(self, hub: str, partition: int, start: int, end: int,
             start_pos: int | None = None) -> Iterator[StoredBatch]:
        """Data batches holding offsets in [start, end), with their bytes."""
        ...

    def close(self) -> None: ...


class LogBackend:
    """Reads ``DATA_DIR/<namespace>/<hub>-<partition>/`` with log.reader; for a
    geo-replicated namespace, the logs of the region that is primary now
    (``serving_log_dir``), followed across promotions: a promotion rewrites the geo
    state file, and the next question after it is answered from the new primary's
    logs. Its events carry the same offsets there, so a capture goes on from its
    checkpoint without capturing anything twice."""

    needs_positions = False  # the log knows every batch's byte position

    def __init__(self, data_dir: str, namespace: str):
        self.data_dir = Path(data_dir)
        self.namespace = namespace
        self._readers: dict[tuple[str, int], PartitionReader] = {}
        self._missing: set[str] = set()
        self.root = self._serving_root()

    def _serving_root(self) -> Path:
        from kafka_wire.replication.store import serving_log_dir

        return serving_log_dir(self.data_dir, self.namespace)

    def _follow_promotion(self) -> None:
        """The geo state file is read again at each question (a small file; a stat's
        times are too coarse to tell two quick rewrites apart): after a promotion the
        new primary's logs are read."""
        root = self._serving_root()
        if root != self.root:
            logger.info("namespace %s is served from %s now (geo-replication promotion): reading there",
                        self.namespace, root)
            self.root = root
            self._readers.clear()
            self._missing.clear()

    def partition_count(self, hub: str) -> int:
        self._follow_promotion()
        count = read_topic_partitions(self.root, only=hub).get(hub)
        if count is None:
            if hub not in self._missing:
                self._missing.add(hub)
                logger.warning("event hub %r does not exist in %s (yet): nothing to capture", hub, self.root)
            return 0
        return count

    def _reader(self, hub: str, partition: int) -> PartitionReader:
        self._follow_promotion()
        key = (hub, partition)
        reader = self._readers.get(key)
        if reader is None:
            reader = self._readers[key] = PartitionReader(self.root / f"{hub}-{partition}")
        return reader

    def log_start(self, hub: str, partition: int) -> int:
        return self._reader(hub, partition).log_start_offset()

    def end_offset(self, hub: str, partition: int) -> int:
        reader = self._reader(hub, partition)
        return reader.stable_end(reader.log_start_offset())

    def refs(self, hub: str, partition: int, start: int, end: int | None = None,
             start_pos: int | None = None) -> tuple[list[BatchRef], int]:
        reader = self._reader(hub, partition)
        stop = reader.stable_end(start) if end is None else end
        refs = [
            BatchRef(b.base_offset, b.next_offset, b.append_time_ms, b.size)
            for b in reader.batches(start, stop, with_data=False)
        ]
        return refs, stop

    def read(self, hub: str, partition: int, start: int, end: int,
             start_pos: int | None = None) -> Iterator[StoredBatch]:
        reader = self._reader(hub, partition)
        for attempt in range(5):
            try:
                for b in reader.batches(start, end):
                    yield b
                    start = b.next_offset
                return
            except LogChanged:
                # Retention or the cleaner changed a segment under us: carry on from where we were.
                logger.info("%s: log changed while reading; resuming at offset %d", reader.directory, start)
        raise RuntimeError(f"{reader.directory}: the log keeps changing under the capture reader")

    def close(self) -> None:
        self._readers.clear()


def open_backend(options: dict) -> Backend:
    """``bootstrap`` selects the Kafka protocol, else ``dataDir`` the log
    (``options`` with lower-case keys, as Spark passes them)."""
    if options.get("bootstrap"):
        from .kafka_backend import KafkaBackend

        return KafkaBackend(options["bootstrap"], _kafka_options(options))
    data_dir = options.get("datadir")
    if not data_dir:
        raise ValueError("the eventhubs source needs option dataDir (the broker's data directory) or bootstrap")
    return LogBackend(data_dir, options.get("namespace") or "emulatorNs1")


def _kafka_options(options: dict) -> dict:
    """``kafka.security.protocol`` -> ``security_protocol``, and so on."""
    return {k[6:].replace(".", "_"): v for k, v in options.items() if k.lower().startswith("kafka.")}
