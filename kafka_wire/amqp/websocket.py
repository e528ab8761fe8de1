"""AMQP over WebSockets (subprotocol ``AMQPWSB10``, path ``/$servicebus/websocket``),
as Event Hubs serves it on port 443: what ``TransportType.AmqpOverWebsocket``
asks for and the only way a browser gets in.

Every AMQP listener takes it: a connection whose first bytes are ``GET `` is
upgraded (``ws://`` on the AMQP port, ``wss://`` on AMQPS, whose TLS the
JavaScript SDK insists on), and so does the HTTP listener. After the upgrade
the same :class:`~kafka_wire.amqp.connection.AmqpConnection` handles the AMQP
bytes of each binary message, writing through :class:`FramedTransport`
(RFC 6455: server frames unmasked, client frames masked). This module does no
I/O of its own.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import struct

from kafka_wire.httpd.fields import MalformedHead, header_fields, header_map

__all__ = ["PATH", "SUBPROTOCOL", "Handshake", "FrameReader", "FramedTransport", "WebSocketError",
           "frame", "unmask", "accept_key", "BINARY", "CLOSE", "PING", "PONG"]

PATH = "/$servicebus/websocket"
SUBPROTOCOL = "AMQPWSB10"
_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
MAX_HEAD = 16 * 1024
CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


class WebSocketError(Exception):
    """Close the WebSocket with ``status`` (RFC 6455 §7.4); the text is for the log."""

    def __init__(self, message: str, status: int = 1002) -> None:
        super().__init__(message)
        self.status = status


def accept_key(key: str) -> str:
    return base64.b64encode(hashlib.sha1(key.encode("ascii") + _GUID).digest()).decode("ascii")


def frame(opcode: int, payload: bytes = b"") -> bytes:
    n = len(payload)
    if n < 126:
        head = struct.pack(">BB", 0x80 | opcode, n)
    elif n < 1 << 16:
        head = struct.pack(">BBH", 0x80 | opcode, 126, n)
    else:
        head = struct.pack(">BBQ", 0x80 | opcode, 127, n)
    return head + payload


def unmask(payload: bytes, mask: bytes) -> bytes:
    """XOR with the repeated 4-byte mask, as one big-integer operation (C speed)."""
    n = len(payload)
    if not n:
        return b""
    key = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")


class Handshake:
    """The HTTP upgrade request, fed as it arrives. ``feed`` returns None until the
    head is complete, then (reply bytes, accepted, bytes after the head)."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> tuple[bytes, bool, bytes] | None:
        self._buf += data
        end = self._buf.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buf) > MAX_HEAD:
                return _refusal(431, "request head too large"), False, b""
            return None
        head, rest = bytes(self._buf[:end]).decode("latin-1"), bytes(self._buf[end + 4:])
        lines = head.split("\r\n")
        parts = lines[0].split(" ")
        try:  # (the HTTP listener's reading: one parser for both doors)
            headers, repeated = header_map(header_fields(lines[1:]))
        except MalformedHead as exc:
            return _refusal(400, str(exc)), False, b""
        if repeated is not None:
            return _refusal(400, f"the {repeated} header is sent more than once: send it once"), False, b""
        reply, ok = respond(parts, headers)
        return reply, ok, rest if ok else b""


def respond(request_line: list[str], headers: dict[str, str]) -> tuple[bytes, bool]:
    """The answer to an upgrade request: 101 with our subprotocol, or why not."""
    if len(request_line) != 3 or request_line[0] != "GET":
        return _refusal(400, "not an HTTP GET"), False
    if request_line[1].split("?", 1)[0] != PATH:
        return _refusal(404, f"AMQP over WebSockets is served on {PATH}"), False
    key = headers.get("sec-websocket-key", "")
    if key and not _is_key(key):
        return _refusal(400, "Sec-WebSocket-Key is not 16 bytes in base64 (RFC 6455 4.1)"), False
    offered = [p.strip() for p in headers.get("sec-websocket-protocol", "").split(",") if p.strip()]
    if headers.get("upgrade", "").lower() != "websocket" or not key or \
            headers.get("sec-websocket-version") != "13" or (offered and SUBPROTOCOL not in offered):
        return _refusal(400, f"a WebSocket upgrade (version 13) with subprotocol {SUBPROTOCOL} "
                             f"is expected on {PATH}"), False
    return ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Accept: {accept_key(key)}\r\n"
            f"Sec-WebSocket-Protocol: {SUBPROTOCOL}\r\n\r\n").encode("ascii"), True


def _is_key(key: str) -> bool:
    """Whether ``key`` is 16 bytes in base64, as RFC 6455 4.1 has it: one sent twice is
    joined ("k1, k2"), and one past ASCII could not be hashed into the answer."""
    try:
        return len(base64.b64decode(key.encode("ascii"), validate=True)) == 16
    except (UnicodeEncodeError, binascii.Error):
        return False


def _refusal(status: int, text: str) -> bytes:
    body = (text + "\n").encode()
    reason = {400: "Bad Request", 404: "Not Found", 431: "Request Header Fields Too Large"}[status]
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


def payload_length(buf) -> tuple[int, int] | None:
    """(payload length, where the rest of the head starts: a client's mask, else the
    payload) of the frame at the front of ``buf``; None until its length has all come."""
    n = buf[1] & 0x7F
    if n == 126:
        return (struct.unpack_from(">H", buf, 2)[0], 4) if len(buf) >= 4 else None
    if n == 127:
        return (struct.unpack_from(">Q", buf, 2)[0], 10) if len(buf) >= 10 else None
    return n, 2


class FrameReader:
    """Client frames in, their payloads out: ``feed`` returns [(opcode, payload)].
    A binary message's payload comes out in pieces as its bytes arrive (AMQP is a
    byte stream: holding a message until its last frame let any client, before it
    authenticated, make the broker hold 16 MiB on each connection);
    a control frame comes out whole (at most 125 bytes, RFC 6455 5.5). A message
    has no bound of its own: AMQP's frame limit bounds what the connection holds.
    Raises WebSocketError for what must close."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._left = 0        # payload bytes of the data frame being read, not yet arrived
        self._mask = b""      # its mask, turned to the next byte's place
        self._in_message = False  # a binary message begun, its final frame not yet read

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        buf = self._buf
        buf += data
        out: list[tuple[int, bytes]] = []
        while buf:
            if self._left:  # inside a data frame: what has come of its payload, unmasked
                n = min(self._left, len(buf))
                out.append((BINARY, unmask(bytes(buf[:n]), self._mask)))
                del buf[:n]
                self._left -= n
                self._mask = self._mask[n % 4:] + self._mask[:n % 4]
                continue
            if len(buf) < 2:
                break
            head = payload_length(buf)
            if head is None:
                break
            n, pos = head
            b0 = buf[0]
            fin, opcode, masked = b0 & 0x80, b0 & 0x0F, buf[1] & 0x80
            if not masked:
                raise WebSocketError("a client frame without a mask", 1002)
            if b0 & 0x70:
                raise WebSocketError("reserved bits set (no extension was agreed)", 1002)
            if opcode >= 0x8:  # control frames may come between fragments, whole
                if n > 125 or not fin:
                    raise WebSocketError("a control frame over 125 bytes or fragmented", 1002)
                if len(buf) < pos + 4 + n:
                    break
                out.append((opcode, unmask(bytes(buf[pos + 4:pos + 4 + n]), bytes(buf[pos:pos + 4]))))
                del buf[:pos + 4 + n]
                continue
            if opcode == TEXT:
                raise WebSocketError("a text frame: AMQP travels in binary messages", 1003)
            if opcode not in (BINARY, CONTINUATION) or (opcode == CONTINUATION) != self._in_message:
                raise WebSocketError(f"unexpected frame opcode 0x{opcode:x}", 1002)
            if n >> 63:
                raise WebSocketError("a 64-bit length with its top bit set (RFC 6455 5.2)", 1002)
            if len(buf) < pos + 4:
                break
            self._mask = bytes(buf[pos:pos + 4])
            del buf[:pos + 4]
            self._left = n
            self._in_message = not fin
        return out


class FramedTransport:
    """What AmqpConnection writes to after an upgrade: each write one binary
    message on the ``inner`` transport (an asyncio transport or StreamWriter)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self._closing = False

    def get_extra_info(self, name, default=None):
        return self.inner.get_extra_info(name, default)

    def write(self, data) -> None:
        if not self._closing:
            self.inner.write(frame(BINARY, bytes(data)))

    def control(self, opcode: int, payload: bytes = b"") -> None:
        if not self._closing:
            self.inner.write(frame(opcode, payload))

    def is_closing(self) -> bool:
        return self._closing or self.inner.is_closing()

    def close(self, status: int = 1000) -> None:
        if self._closing:
            return
        self._closing = True
        if not self.inner.is_closing():
            self.inner.write(frame(CLOSE, struct.pack(">H", status)))
            self.inner.close()

    def abort(self) -> None:
        self.close(1002)
