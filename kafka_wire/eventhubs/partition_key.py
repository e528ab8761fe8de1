"""Event Hubs' partition-key mapping: a key always lands on the same partition.

The service hashes the key's UTF-8 bytes with Bob Jenkins' lookup3
(``hashlittle2``, both seeds 0), folds the two 32-bit results into a signed
16-bit value (``(c ^ b) & 0xFFFF``), and takes ``abs(hash % partitions)`` with
a remainder that keeps the sign of the dividend (C#, JavaScript). The .NET and
JavaScript SDKs' buffered producers compute the same thing, so a key sent with
any protocol or SDK lands where it would on Azure.
"""
from __future__ import annotations

__all__ = ["partition_for_key", "key_hash"]

_M = 0xFFFFFFFF


def _rot(x: int, k: int) -> int:
    return ((x << k) | (x >> (32 - k))) & _M


def _mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    a = (a - c) & _M; a ^= _rot(c, 4);  c = (c + b) & _M
    b = (b - a) & _M; b ^= _rot(a, 6);  a = (a + c) & _M
    c = (c - b) & _M; c ^= _rot(b, 8);  b = (b + a) & _M
    a = (a - c) & _M; a ^= _rot(c, 16); c = (c + b) & _M
    b = (b - a) & _M; b ^= _rot(a, 19); a = (a + c) & _M
    c = (c - b) & _M; c ^= _rot(b, 4);  b = (b + a) & _M
    return a, b, c


def _final(a: int, b: int, c: int) -> tuple[int, int, int]:
    c ^= b; c = (c - _rot(b, 14)) & _M
    a ^= c; a = (a - _rot(c, 11)) & _M
    b ^= a; b = (b - _rot(a, 25)) & _M
    c ^= b; c = (c - _rot(b, 16)) & _M
    a ^= c; a = (a - _rot(c, 4)) & _M
    b ^= a; b = (b - _rot(a, 14)) & _M
    c ^= b; c = (c - _rot(b, 24)) & _M
    return a, b, c


def _hashlittle2(data: bytes) -> tuple[int, int]:
    """lookup3's hashlittle2 with seeds 0, 0: (c, b)."""
    n = len(data)
    a = b = c = (0xDEADBEEF + n) & _M
    p = 0
    while n - p > 12:
        a = (a + int.from_bytes(data[p:p + 4], "little")) & _M
        b = (b + int.from_bytes(data[p + 4:p + 8], "little")) & _M
        c = (c + int.from_bytes(data[p + 8:p + 12], "little")) & _M
        a, b, c = _mix(a, b, c)
        p += 12
    tail = data[p:]
    if not tail:  # zero bytes left: the final mix is skipped
        return c, b
    tail = tail + bytes(12 - len(tail))
    a = (a + int.from_bytes(tail[0:4], "little")) & _M
    b = (b + int.from_bytes(tail[4:8], "little")) & _M
    c = (c + int.from_bytes(tail[8:12], "little")) & _M
    a, b, c = _final(a, b, c)
    return c, b


def key_hash(key: str | bytes) -> int:
    """The signed 16-bit hash Event Hubs computes for a partition key."""
    data = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    if not data:
        return 0
    c, b = _hashlittle2(data)
    value = (c ^ b) & 0xFFFF
    return value - 0x10000 if value & 0x8000 else value


def partition_for_key(key: str | bytes, partitions: int) -> int:
    """The partition index a key maps to among ``partitions``."""
    h = key_hash(key)
    remainder = abs(h) % partitions  # sign of the dividend, as C# and JavaScript compute it
    return remainder
