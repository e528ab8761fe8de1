"""The durable record log the coordinators keep their state in (checkpoints,
transaction states): msgpack records, each framed by its length and CRC-32C, so
a torn tail from a crash is found and cut at the last whole record."""
from __future__ import annotations

import struct
from typing import Any, Callable, Iterator

import crc32c
import msgpack

_HEAD = struct.Struct(">II")
MAX_RECORD = 1 << 20  # coordinator records are small: a bigger length is garbage


def frame(fields: Any) -> bytes:
    """One record, ready to append."""
    payload = msgpack.packb(fields, use_bin_type=True)
    return _HEAD.pack(len(payload), crc32c.crc32c(payload)) + payload


class Scan:
    """The result of :func:`scan`: where the whole records end, and why the
    rest (if any) was not read."""

    def __init__(self) -> None:
        self.end = 0
        self.records = 0
        self.problem: str | None = None


def scan(data: bytes, start: int, decode: Callable[[Any], Any]) -> tuple[Scan, Iterator[Any]]:
    """Walk the records of ``data`` from ``start``: yields ``decode(fields)`` for
    each whole, CRC-valid record; stops at the first that is cut short, corrupt,
    or that ``decode`` refuses with ValueError (recorded in ``Scan.problem``)."""
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
            yield value
            pos = end
            result.end = end
            result.records += 1

    return result, records()
