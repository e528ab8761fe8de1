"""The embedded consumer protocol (protocol type ``consumer``): the bytes a
consumer puts in JoinGroup metadata (ConsumerProtocolSubscription) and the
leader puts in SyncGroup assignments (ConsumerProtocolAssignment).

These are not wire frames of the broker protocol but opaque payloads inside
them; the coordinator reads them for the few things Kafka's coordinator reads
them for: the topics a group subscribes to (OffsetDelete, offset expiry) and,
for the Event Hubs view, who owns which partition. Every version so far keeps
the fields decoded here as a prefix, so newer versions decode too.
"""
from __future__ import annotations

import struct
from typing import NamedTuple

__all__ = [
    "PROTOCOL_TYPE", "ConsumerProtocolError", "Subscription", "decode_subscription",
    "decode_assignment", "encode_subscription", "encode_assignment",
]

PROTOCOL_TYPE = "consumer"

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class ConsumerProtocolError(ValueError):
    """Metadata or assignment bytes that do not follow the consumer protocol."""


class Subscription(NamedTuple):
    version: int
    topics: list[str]
    user_data: bytes | None
    owned_partitions: list[tuple[str, list[int]]]


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, data: bytes) -> None:
        self.buf = memoryview(data)
        self.pos = 0

    def _take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise ConsumerProtocolError(
                f"consumer protocol payload truncated at byte {self.pos} (needs {n} more)")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def at_end(self) -> bool:
        return self.pos >= len(self.buf)

    def int16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def int32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def string(self) -> str | None:
        n = self.int16()
        if n == -1:
            return None
        try:
            return bytes(self._take(n)).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConsumerProtocolError(f"topic name is not UTF-8: {exc}") from None

    def bytes_(self) -> bytes | None:
        n = self.int32()
        return None if n == -1 else bytes(self._take(n))

    def array_len(self) -> int:
        n = self.int32()
        if n < -1 or n > len(self.buf):
            raise ConsumerProtocolError(f"impossible array length {n}")
        return max(n, 0)

    def topic_partitions(self) -> list[tuple[str, list[int]]]:
        out = []
        for _ in range(self.array_len()):
            topic = self.string() or ""
            out.append((topic, [self.int32() for _ in range(self.array_len())]))
        return out


def decode_subscription(data: bytes) -> Subscription:
    """ConsumerProtocolSubscription v0+: version, topics, user_data, owned partitions (v1+)."""
    r = _Reader(data)
    version = r.int16()
    if version < 0:
        raise ConsumerProtocolError(f"negative consumer protocol version {version}")
    topics = [r.string() or "" for _ in range(r.array_len())]
    user_data = r.bytes_() if not r.at_end() else None
    owned = r.topic_partitions() if version >= 1 and not r.at_end() else []
    return Subscription(version, topics, user_data, owned)


def decode_assignment(data: bytes) -> list[tuple[str, list[int]]]:
    """ConsumerProtocolAssignment: version, [(topic, [partition])], user_data.

    Empty bytes (a member the leader left out) mean no partitions.
    """
    if not data:
        return []
    r = _Reader(data)
    if r.int16() < 0:
        raise ConsumerProtocolError("negative consumer protocol version")
    return r.topic_partitions()


def _string(s: str) -> bytes:
    b = s.encode("utf-8")
    return _I16.pack(len(b)) + b


def encode_subscription(topics: list[str], user_data: bytes | None = None,
                        version: int = 0) -> bytes:
    """Version 0 (or 1 with no owned partitions); used by tests and tools."""
    out = _I16.pack(version) + _I32.pack(len(topics)) + b"".join(_string(t) for t in topics)
    out += _I32.pack(-1) if user_data is None else _I32.pack(len(user_data)) + user_data
    if version >= 1:
        out += _I32.pack(0)
    return out


def encode_assignment(assignment: list[tuple[str, list[int]]],
                      user_data: bytes | None = None) -> bytes:
    out = _I16.pack(0) + _I32.pack(len(assignment))
    for topic, parts in assignment:
        out += _string(topic) + _I32.pack(len(parts)) + b"".join(_I32.pack(p) for p in parts)
    out += _I32.pack(-1) if user_data is None else _I32.pack(len(user_data)) + user_data
    return out
