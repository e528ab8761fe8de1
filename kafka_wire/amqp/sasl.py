"""The SASL layer in front of an AMQP connection, as Event Hubs offers it.

Proton's built-in SASL server knows ANONYMOUS and EXTERNAL only; Event Hubs
clients also send MSSBCBS (anonymous now, a token on ``$cbs`` later) and
PLAIN (a SAS policy name and key, or ``$ConnectionString`` and a connection
string). The exchange is three frames, so it is done here, with proton's
codec for the frame bodies; the bytes after it go to proton's transport,
which then sees a plain AMQP connection.

``SaslServer.feed`` takes bytes as they arrive and returns what to send; once
``done`` the remaining input (``leftover``) belongs to the AMQP layer.
"""
from __future__ import annotations

import struct
from typing import Callable

from proton import UNDESCRIBED, Array, Data, Described, symbol, ubyte, ulong

__all__ = ["SaslServer", "AMQP_HEADER", "SASL_HEADER", "TLS_HEADER", "MECHANISMS"]

AMQP_HEADER = b"AMQP\x00\x01\x00\x00"
TLS_HEADER = b"AMQP\x02\x01\x00\x00"
SASL_HEADER = b"AMQP\x03\x01\x00\x00"
MECHANISMS = ("MSSBCBS", "PLAIN", "ANONYMOUS")

_FRAME = struct.Struct(">IBBH")  # size, data offset (words), type (1 = SASL), channel
_SASL_MECHANISMS, _SASL_INIT, _SASL_OUTCOME = 0x40, 0x41, 0x44
_OK, _AUTH = 0, 1
_MAX_SASL_FRAME = 64 * 1024


class SaslError(Exception):
    """The exchange failed; the message is for the log, ``reply`` is what to
    send before closing (a protocol header, a failed outcome)."""

    def __init__(self, message: str, reply: bytes = b"") -> None:
        super().__init__(message)
        self.reply = reply


def _frame(body: Described) -> bytes:
    data = Data()
    data.put_object(body)
    payload = data.encode()
    return _FRAME.pack(8 + len(payload), 2, 1, 0) + payload


class SaslServer:
    """One connection's SASL exchange. ``login(mechanism, initial_response,
    hostname)`` decides it: None to accept, or why not."""

    def __init__(self, login: Callable[[str, bytes, str | None], str | None]) -> None:
        self._login = login
        self._buf = bytearray()
        self._stage = "header"   # header -> init -> amqp-header -> done
        self.done = False
        self.used_sasl = False
        self.mechanism: str | None = None
        self.hostname: str | None = None
        self.leftover = b""

    def feed(self, data: bytes) -> bytes:
        """Consume ``data``; the bytes to send back. Raises SaslError to close."""
        self._buf += data
        out = bytearray()
        while not self.done:
            if self._stage in ("header", "amqp-header"):
                if len(self._buf) < 8:
                    break
                header = bytes(self._buf[:8])
                if self._stage == "header" and header == SASL_HEADER:
                    del self._buf[:8]
                    self.used_sasl = True
                    out += SASL_HEADER + _frame(Described(ulong(_SASL_MECHANISMS), [
                        Array(UNDESCRIBED, Data.SYMBOL, *map(symbol, MECHANISMS))]))
                    self._stage = "init"
                elif header == AMQP_HEADER:
                    # Plain AMQP (no SASL at all) or the header after SASL: proton's from here.
                    self.done = True
                    self.leftover = bytes(self._buf)
                    self._buf.clear()
                else:
                    out += SASL_HEADER if self._stage == "header" else AMQP_HEADER
                    raise SaslError(_describe_header(header), bytes(out))
            else:  # a sasl-init frame
                if len(self._buf) < 8:
                    break
                size, doff, kind, _ = _FRAME.unpack_from(self._buf)
                if kind != 1 or doff < 2 or size < doff * 4 or size > _MAX_SASL_FRAME:
                    raise SaslError(f"expected a SASL frame, got frame type {kind} of {size} bytes",
                                    bytes(out))
                if len(self._buf) < size:
                    break
                body = bytes(self._buf[doff * 4:size])
                del self._buf[:size]
                try:
                    out += self._init(body)
                except SaslError as exc:  # what this feed already answered goes first
                    raise SaslError(str(exc), bytes(out) + exc.reply) from None
                self._stage = "amqp-header"
        return bytes(out)

    def _init(self, body: bytes) -> bytes:
        data = Data()
        try:
            data.decode(body)
            performative = data.get_object()
        except Exception as exc:  # proton raises its DataException on bad encodings
            raise SaslError(f"undecodable SASL frame: {exc}", b"") from None
        if not isinstance(performative, Described) or performative.descriptor != _SASL_INIT:
            raise SaslError("expected sasl-init", b"")
        fields = list(performative.value) + [None, None, None]
        self.mechanism = str(fields[0]) if fields[0] is not None else ""
        response = bytes(fields[1]) if fields[1] is not None else b""
        self.hostname = str(fields[2]) if fields[2] is not None else None
        if self.mechanism not in MECHANISMS:
            problem = (f"SASL mechanism {self.mechanism!r} is not offered: use one of "
                       f"{', '.join(MECHANISMS)}")
        else:
            problem = self._login(self.mechanism, response, self.hostname)
        outcome = _frame(Described(ulong(_SASL_OUTCOME), [ubyte(_AUTH if problem else _OK)]))
        if problem:
            raise SaslError(problem, outcome)
        return outcome


def _describe_header(header: bytes) -> str:
    if header == TLS_HEADER:
        return "the client asked for AMQP's TLS upgrade header; use the AMQPS listener instead"
    if header.startswith(b"AMQP"):
        return f"unsupported AMQP protocol header {header!r}"
    if header[:4] in (b"GET ", b"POST", b"PUT ", b"HEAD"):
        return "an HTTP request on the AMQP port (only GET /$servicebus/websocket, a WebSocket upgrade, is served)"
    if header[:1] == b"\x16":
        return "a TLS ClientHello on the plain AMQP port: use the AMQPS listener"
    return f"not an AMQP protocol header: {header!r}"
