"""Where the Spark source gets record batches: the log directory, or Kafka.

Both backends answer the same three questions for (event hub, partition):
how many partitions, which data batches lie past an offset (for planning:
offsets, append time, size, no bytes), and the batches of an offset range
with their bytes (for the executors). ``open_backend`` picks one from the
source options.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Iterator, Protocol

from kafka_wire.capture.windows import BatchRef
from kafka_wire.log.reader import LogChanged, PartitionReader, StoredBatch, _check_batch, read_topic_partitions

logger = logging.getLogger(__name__)

# How long end_offsets waits for the broker to write the .batches entries it holds in memory
# (its log flusher writes them about once a second); past it, a broker that died with entries
# unwritten (its recovery rebuilds them) gives what its index shows.
INDEX_WAIT_SECONDS = 5.0
INDEX_POLL_SECONDS = 0.05


class Backend(Protocol):
    def partition_count(self, hub: str) -> int: ...

    def log_start(self, hub: str, partition: int) -> int: ...

    def end_offset(self, hub: str, partition: int) -> int:
        """The stable end: what may be read now (read_committed), every
        event the broker had acknowledged when asked included."""
        ...

    def end_offsets(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """``end_offset`` of several (hub, partition) at once."""
        ...

    def refs(self, hub: str, partition: int, start: int, end: int | None = None,
             start_pos: int | None = None) -> tuple[list[BatchRef], int]:
        """Data batches from ``start`` to ``end`` (default: the stable end),
        and that end. ``start_pos``: the byte position of ``start``, for
        backends that cannot see it (``needs_positions``)."""
        ...

    def read(self, hub: str, partition: int, start: int, end: int,
             start_pos: int | None = None) -> Iterator[StoredBatch]:
        """Data batches holding offsets in [start, end), with their bytes,
        from the log start if it is past ``start``. Whole batches: the first
        may hold offsets below both (``first_offset``)."""
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

    def _reader(self, hub: str, partition: int, *, follow: bool = True) -> PartitionReader:
        if follow:
            self._follow_promotion()
        key = (hub, partition)
        reader = self._readers.get(key)
        if reader is None:
            reader = self._readers[key] = PartitionReader(self.root / f"{hub}-{partition}")
        return reader

    def log_start(self, hub: str, partition: int) -> int:
        return self._reader(hub, partition).log_start_offset()

    def end_offset(self, hub: str, partition: int) -> int:
        return self.end_offsets([(hub, partition)])[(hub, partition)]

    def end_offsets(self, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """The stable ends once the ``.batches`` index covers every batch the
        broker had appended when asked. It writes most entries of the active
        segment about once a second (log.index.BatchIndex), so the index alone
        trails the acknowledged log by up to that much, and ``--once`` started
        right after an acknowledgement would miss the event. One wait for all
        partitions: a single flusher pass writes them all."""
        self._follow_promotion()  # once a poll, not once a partition
        out, behind = {}, {}
        for key in partitions:  # one scan a partition, from its log start: its stable end and where its index ends
            reader = self._reader(*key, follow=False)
            out[key], last = reader.ends()
            listed, appended = _appended_end(reader, last)
            if listed < appended:
                behind[key] = appended
        # Only the partitions whose index lags are scanned again, until it lists what their
        # .log held (most polls: none).
        deadline = time.monotonic() + INDEX_WAIT_SECONDS
        while behind and time.monotonic() < deadline:
            time.sleep(INDEX_POLL_SECONDS)
            for key, end in list(behind.items()):
                reader = self._reader(*key, follow=False)
                if reader.end_offset() >= end:
                    del behind[key]
                    out[key] = reader.stable_end()
        for (hub, p), end in behind.items():
            reader = self._reader(hub, p, follow=False)
            logger.warning("%s/%d: the log holds batches up to offset %d that its index does not list after "
                           "%.0f s (a broker stopped before writing them? its next start does): capturing "
                           "up to %d", hub, p, end, INDEX_WAIT_SECONDS, reader.end_offset())
            out[(hub, p)] = reader.stable_end()
        return {key: out[key] for key in partitions}

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


def _appended_end(reader: PartitionReader, last: StoredBatch | None) -> tuple[int, int]:
    """(where the partition's ``.batches`` index ends, just past the last batch
    appended to its last segment, listed yet or not), ``last`` being the last listed
    batch a scan reached: the batches after it are checked as the reader checks listed
    ones (header, offsets, CRC). Only the last segment can have unlisted batches: a
    roll writes the sealed segment's entries first."""
    bases = reader.segment_bases()
    if not bases:
        return 0, 0
    base = bases[-1]
    if last is None or last.segment != base:  # the scan stopped before it (or it rolled since): look there
        last = None
        for last in reader.scan(base):
            pass
    if last is not None and last.segment == base:
        position, expected = last.file_position + last.size, last.next_offset
    else:
        position, expected = 0, base
    listed = expected
    try:
        fd = os.open(reader.directory / f"{base:020d}.log", os.O_RDONLY)
    except FileNotFoundError:
        return listed, expected  # rolled away or deleted meanwhile: its entries were written first
    try:
        size = os.fstat(fd).st_size
        while (header := _check_batch(fd, position, size, expected)) is not None:
            position, expected = position + header.size, header.next_offset
    finally:
        os.close(fd)
    return listed, expected


def first_offset(backend: Backend, hub: str, partition: int, start: int) -> int:
    """The first sequence number a read of a range from ``start`` may give.
    Backends serve whole stored batches, and the first may begin below it:
    a range planned from a log start that DeleteRecords moved inside a batch,
    or a log start moved inside one since the range was planned. Those events
    are not captured (capture.events.decode_batch's ``first_offset``), as no
    Kafka consumer or AMQP receiver gets them."""
    return max(start, backend.log_start(hub, partition))


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
