"""The AMQP port's WebSocket door reads an upgrade's header lines as the HTTP listener
does (one parser, kafka_wire.httpd.fields.header_fields): a folded line, whitespace
before the colon or before the name, a name that is not a token, a CR in a value, a
Host or Sec-WebSocket-Key sent twice are refused 400 and the connection closed, on the
AMQP port as on the HTTP listener. It trimmed names with str.strip and kept a repeated
header's last value, so each of these was upgraded (101). What follows such a head in
the same write (a REST send) is never read: exactly one answer, nothing stored."""
from __future__ import annotations

import base64
import socket

import pytest

from kafka_wire.testing.http_raw import read_to_close
from tests.rest.helpers import HOST, end_offset, http_broker, token

KEY = base64.b64encode(bytes(range(16))).decode()
UPGRADE = ["GET /$servicebus/websocket HTTP/1.1", "Host: x", "Upgrade: websocket",
           "Connection: Upgrade", f"Sec-WebSocket-Key: {KEY}", "Sec-WebSocket-Protocol: AMQPWSB10"]
VERSION = "Sec-WebSocket-Version: 13"
CASES = {  # the head's last lines: each upgraded (101) on the AMQP port before
    "obs-fold": ["X-Pad: a", " " + VERSION],
    "space-before-colon": ["Sec-WebSocket-Version : 13"],
    "tab-before-name": ["\t" + VERSION],
    "vt-after-name": ["Sec-WebSocket-Version\x0b: 13"],
    "bare-cr": [VERSION, "X-A: b\rX-B: c"],
    "host-twice": [VERSION, "Host: y"],
    "key-twice": [VERSION, "Sec-WebSocket-Key: " + base64.b64encode(bytes(16)).decode()],
}
broker = http_broker("ws-fields", amqp=True)


def rest_send(body: bytes) -> bytes:
    return (f"POST /payments/messages HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: {token()}\r\n"
            f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


@pytest.mark.parametrize("port", ["amqp_port", "http_port"])
@pytest.mark.parametrize("lines", list(CASES.values()), ids=list(CASES))
def test_an_upgrade_with_a_malformed_field_is_one_400_and_closed(broker, port, lines):
    at = end_offset(broker)
    head = "\r\n".join(UPGRADE + lines).encode("latin-1") + b"\r\n\r\n"
    out = read_to_close(getattr(broker, port), head + rest_send(b"smuggled"))
    assert out.startswith(b"HTTP/1.1 400 "), out[:300]
    assert out.count(b"HTTP/1.1 ") == 1, out
    assert end_offset(broker) == at


@pytest.mark.parametrize("port", ["amqp_port", "http_port"])
def test_a_well_formed_upgrade_is_still_101(broker, port):
    head = "\r\n".join(UPGRADE + [VERSION]).encode() + b"\r\n\r\n"
    with socket.create_connection(("127.0.0.1", getattr(broker, port)), timeout=10) as s:
        s.sendall(head)
        out = b""
        while b"\r\n\r\n" not in out:
            chunk = s.recv(65536)
            assert chunk, out
            out += chunk
    assert out.startswith(b"HTTP/1.1 101 "), out
