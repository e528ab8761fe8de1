"""The durable record log the coordinators keep their state in (checkpoints,
transaction states): msgpack records, each framed by its length and CRC-32C, so
a torn tail from a crash is found and cut at the last whole record.

Writer and reader share one limit, :data:`MAX_RECORD`: :func:`scan` takes a
longer length for garbage (a torn tail) and cuts the log there, dropping every
record after it, so :func:`frame` refuses to make such a record
(:class:`RecordTooLarge`) and :func:`append` never leaves part of a record
behind: a store built on these cannot write what it cannot read back.
"""
from __future__ import annotations

import errno
import logging
import os
import struct
from typing import Any, Callable, Iterator

import crc32c
import msgpack

log = logging.getLogger(__name__)

_HEAD = struct.Struct(">II")
MAX_RECORD = 1 << 20  # coordinator records are small: a bigger length is garbage


class RecordTooLarge(ValueError):
    """A record's payload is longer than :data:`MAX_RECORD`: the reader would take it for
    a torn tail and drop it with everything after it, so it is never written."""

    def __init__(self, size: int) -> None:
        super().__init__(f"record of {size} bytes is larger than the log's {MAX_RECORD}")
        self.size = size


def packed(fields: Any) -> bytes:
    """The payload of a record of ``fields`` (to measure pieces before framing them)."""
    return msgpack.packb(fields, use_bin_type=True)


def frame(fields: Any) -> bytes:
    """One record, ready to append; :class:`RecordTooLarge` if :func:`scan` would refuse it."""
    return framed(packed(fields))


def framed(payload: bytes) -> bytes:
    """The record of a :func:`packed` payload (see :func:`frame`)."""
    if len(payload) > MAX_RECORD:
        raise RecordTooLarge(len(payload))
    return _HEAD.pack(len(payload), crc32c.crc32c(payload)) + payload


def append(fd: int, blob: bytes, size: int, *, sync: bool = False, path: object = "") -> int:
    """Append ``blob`` (whole records) to the file open as ``fd`` (``O_APPEND``) whose
    whole records end at ``size`` (then fsync it if ``sync``); returns the new size. A
    failed or short write (a full disk) is cut off again before the OSError is raised:
    left there, the records appended after it once space returns would follow torn
    bytes, and the next open would cut them off with the tail (and bring back the
    records of a write that was refused)."""
    try:
        written = os.write(fd, blob)
        if written != len(blob):  # a short write on a regular file: the disk is full
            raise OSError(errno.ENOSPC, f"short write to {path} ({written} of {len(blob)} bytes)")
        if sync:
            os.fsync(fd)
    except OSError:
        try:
            os.ftruncate(fd, size)
        except OSError as exc:  # cannot repair now: the next open cuts the torn tail
            log.error("cannot cut a failed write off %s: %r", path, exc)
        raise
    return size + len(blob)


class Unknown:
    """What a ``decode`` returns for a whole record of a kind it does not know (one a
    newer version wrote): :func:`scan` passes over it, counted in ``Scan.skipped``, so
    a downgrade does not cut the log, and every record after it, there."""

    __slots__ = ("kind",)

    def __init__(self, kind: Any) -> None:
        self.kind = kind


class Scan:
    """The result of :func:`scan`: where the whole records end, why the rest (if any)
    was not read, and how many records of each unknown kind were passed over."""

    def __init__(self) -> None:
        self.end = 0
        self.records = 0
        self.problem: str | None = None
        self.skipped: dict[Any, int] = {}

    def skipped_line(self) -> str:
        """For the one log line a reader writes when ``skipped``."""
        kinds = ", ".join(f"{n} of kind {k!r}" for k, n in sorted(self.skipped.items(), key=repr))
        return f"skipped {sum(self.skipped.values())} records of kinds this version does " \
               f"not know ({kinds}): written by a newer version"


def scan(data: bytes, start: int, decode: Callable[[Any], Any]) -> tuple[Scan, Iterator[Any]]:
    """Walk the records of ``data`` from ``start``: yields ``decode(fields)`` for
    each whole, CRC-valid record; stops at the first that is cut short, corrupt,
    or that ``decode`` refuses with ValueError (recorded in ``Scan.problem``). A
    record ``decode`` answers :class:`Unknown` is passed over (``Scan.skipped``)."""
    result = Scan()
    result.end = start

    def records() -> Iterator[Any]:
        pos = start
        while pos < len(data):
            if pos + _HEAD.size > len(data):
                result.problem = "truncated record header"
                return
            length, crc = _HEAD.unpack_from(data, pos)
            if length > MAX_RECORD:
                result.problem = f"impossible record length {length}"
                return
            end = pos + _HEAD.size + length
            if end > len(data):
                result.problem = f"record of {length} bytes cut short"
                return
            payload = data[pos + _HEAD.size:end]
            if crc32c.crc32c(payload) != crc:
                result.problem = "CRC-32C mismatch"
                return
            try:
                fields = msgpack.unpackb(payload, raw=False, use_list=True, strict_map_key=False)
            except Exception as exc:  # msgpack raises several types on garbage
                result.problem = f"undecodable record ({exc})"
                return
            try:
                value = decode(fields)
            except ValueError as exc:
                result.problem = str(exc)
                return
            if isinstance(value, Unknown):
                result.skipped[value.kind] = result.skipped.get(value.kind, 0) + 1
            else:
                yield value
                result.records += 1
            pos = end
            result.end = end

    return result, records()
