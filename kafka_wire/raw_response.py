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
        body = self.body
        flexible = self.flexible_header
        size = (len(body[0]) if len(body) == 1 else sum(map(len, body))) + (5 if flexible else 4)
        head = _HEAD(size, header.correlation_id)
        if flexible:
            head += b"\x00"
        if len(body) == 1 and size < 4096:  # a small answer (Produce's): one piece to write
            return [head + body[0]]
        return [head, *body]


_HEAD = struct.Struct(">ii").pack  # frame size, correlation id
