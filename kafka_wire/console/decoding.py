"""The explorer's decompression of record batches, bounded on the broker's event loop.

A stored batch can be a decompression bomb (written before Produce refused them): it
costs ~0.2 s to find out, up to the 256 MiB bound, and a page over many of them held
the event loop, which every Kafka and AMQP client shares, for seconds. So:

- on the loop a batch is decompressed up to :data:`LOOP_DECOMPRESS` bytes only (what
  nearly every batch holds: a few ms at most); one that holds more is :class:`Unresolved`,
  and the console's API decompresses it whole in a thread (:func:`decompress_whole`),
  then reads the page again;
- what such a batch turned out to be is remembered (:class:`Verdicts`, bounded): an
  unreadable batch is not decompressed again by the next page, and a large one goes to
  the thread straight away.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

from kafka_wire.log import batch as rb
from kafka_wire.log import errors as log_errors
from kafka_wire.log import records as rec

# Decompressed on the loop at most (zstd: ~2 ms, gzip: ~5 ms); past it, in a thread.
LOOP_DECOMPRESS = 1 << 20
# A read tries at most this many batches that turn out past LOOP_DECOMPRESS on the loop;
# past that, the compressed batches it does not know yet go to the thread untried.
LOOP_TRIES = 4
# What one request may wait for the thread's decompression (at least one batch is
# decompressed): past it the page ends early, where its next_sequence_number says (a
# 'before' page: at the oldest event or unreadable batch it shows).
THREAD_BUDGET_S = 1.0
VERDICTS_MAX = 4096

_TOO_LARGE = None  # a verdict: decompress it in a thread


class Unreadable(NamedTuple):
    """What :func:`explorer.walk` yields for a batch whose records cannot be read (they do not
    decompress, a decompression bomb included, or do not parse: stored by a broker before
    Produce checked compressed batches, or sent uncompressed; or its codec's library is
    missing), and goes on past: one bad batch does not hide the partition's other events."""
    first: int             # the batch's sequence numbers, first..last
    last: int
    reason: str

    @property
    def next_offset(self) -> int:
        return self.last + 1

    def as_json(self) -> dict:
        return {"first_sequence_number": self.first, "last_sequence_number": self.last,
                "error": f"the batch at sequence numbers {self.first}..{self.last} cannot be read: "
                         f"{self.reason}"}


class Unresolved(NamedTuple):
    """A batch whose records hold more than the loop decompresses: the API decompresses
    ``data`` (the records section, copied out of the log) in a thread."""
    first: int
    last: int
    key: tuple
    codec: int
    data: bytes

    @property
    def next_offset(self) -> int:
        return self.last + 1


class Verdicts:
    """Batch (log directory, position, base offset, CRC-32C) -> why it cannot be read, or
    None: too large for the loop. The CRC covers the batch from its attributes on, so a
    batch written since at the same place (a hub deleted and made again) is not mistaken
    for it. Least recently used first out, past :data:`VERDICTS_MAX`. (One for the
    process: the brokers of a test process each read it from their loop's thread.)"""

    def __init__(self, size: int = VERDICTS_MAX) -> None:
        self.size = size
        self._map: OrderedDict[tuple, str | None] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple, default=False):
        """The verdict, or ``default`` (False) for a batch not met yet."""
        with self._lock:
            found = self._map.get(key, default)
            if found is not default:
                self._map.move_to_end(key)
            return found

    def put(self, key: tuple, verdict: str | None) -> None:
        with self._lock:
            self._map[key] = verdict
            self._map.move_to_end(key)
            while len(self._map) > self.size:
                self._map.popitem(last=False)

    def __len__(self) -> int:
        return len(self._map)


VERDICTS = Verdicts()


class Decoding:
    """One request's decompression: the large batches the thread decompressed for it (by
    key), those its pages met and could not read on the loop (``pending``), and what
    its walks may still try on the loop."""
    __slots__ = ("done", "pending", "tries")

    def __init__(self) -> None:
        self.done: dict[tuple, bytes] = {}
        self.pending: list[Unresolved] = []
        self.tries = LOOP_TRIES


def key_of(plog, position: int, header: rb.BatchHeader) -> tuple:
    return (plog.directory, position, header.base_offset, header.crc)


def records(plog, position: int, data, header: rb.BatchHeader,
            decoding: Decoding | None) -> bytes | str | Unresolved:
    """The compressed batch's records section decompressed, or why it cannot be read
    (a :class:`log_errors.LogError`'s text), or :class:`Unresolved` (``decoding`` None:
    decompressed whole here, whatever it costs)."""
    key = key_of(plog, position, header)
    known = VERDICTS.get(key)
    if isinstance(known, str):
        return known
    if decoding is not None and key in decoding.done:
        return decoding.done[key]
    section = memoryview(data)[rb.HEADER_SIZE:header.size]
    whole = rec.decompressed_limit(len(section))
    defer = decoding is not None and whole > LOOP_DECOMPRESS
    if defer and (known is _TOO_LARGE or decoding.tries <= 0):
        return Unresolved(header.base_offset, header.last_offset, key, header.compression, bytes(section))
    try:
        return rec.decompress(header.compression, section, LOOP_DECOMPRESS if defer else whole)
    except log_errors.LogError as exc:
        # Past the limit (raised without a cause, as is an unknown codec, which the
        # thread then names): decided in a thread, whole.
        if defer and exc.__cause__ is None and not isinstance(exc, rec.UnsupportedCodec):
            decoding.tries -= 1
            VERDICTS.put(key, _TOO_LARGE)
            return Unresolved(header.base_offset, header.last_offset, key, header.compression,
                              bytes(section))
        VERDICTS.put(key, str(exc))
        return str(exc)


_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


def executor() -> ThreadPoolExecutor:
    """The one thread that decompresses for the console (of every broker in the process):
    one batch at a time, so the pages of many browsers hold at most one batch's records
    (up to 1 GiB) at once; they wait their turn, the event loop does not."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kafka-wire-console-decompress")
        return _executor


def decompress_whole(batch: Unresolved) -> bytes | str:
    """The batch's records, or why they cannot be read. (In a thread: zstd and zlib
    release the GIL as they decompress; measured, the loop waited 4 ms at most while a
    bomb took 0.2 s.)"""
    try:
        return rec.decompress(batch.codec, batch.data)
    except log_errors.LogError as exc:
        return str(exc)


def resolved(decoding: Decoding, batch: Unresolved, outcome: bytes | str) -> None:
    """Keep what the thread found: records for this request, or why it cannot be read."""
    if isinstance(outcome, str):
        VERDICTS.put(batch.key, outcome)
    else:
        decoding.done[batch.key] = outcome


def unreadable(plog, position: int, header: rb.BatchHeader, why: str) -> None:
    """Remember a batch whose records do not parse."""
    VERDICTS.put(key_of(plog, position, header), why)


def as_uncompressed(records_section: bytes, header: rb.BatchHeader) -> tuple[bytes, rb.BatchHeader]:
    """A batch of the records ``records_section`` (decompressed), as the log's readers
    take one: its header is not read but for the record count."""
    plain = header._replace(attributes=header.attributes & ~rb.COMPRESSION_MASK,
                            batch_length=rb.HEADER_SIZE + len(records_section) - rb.LOG_OVERHEAD)
    return bytes(rb.HEADER_SIZE) + records_section, plain
