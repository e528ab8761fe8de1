"""A response already encoded by a fast path (see apis/fetch_encoding.py):
body chunks written with ``transport.writelines``, the server adds the header."""
from __future__ import annotations

import struct


class Raw:
    """A response already encoded by a fast path: header is added here."""
    __slots__ = ("body", "flexible_header", "close_after")

    def __init__(self, body: list, flexible_header: bool, close_after: bool = False) -> None:
        self.body = body
        self.flexible_header = flexible_header
        self.close_after = close_after

    def chunks(self, header) -> list:
        size = sum(len(c) for c in self.body) + 4 + (1 if self.flexible_header else 0)
        head = struct.pack(">ii", size, header.correlation_id)
        if self.flexible_header:
            head += b"\x00"
        return [head, *self.body]
