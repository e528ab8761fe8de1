"""The SASL layer by itself: what it answers, also to clients that pipeline."""
from __future__ import annotations

import struct

from proton import Data, Described, symbol, ulong

from kafka_wire.amqp.sasl import AMQP_HEADER, SASL_HEADER, SaslError, SaslServer


def init_frame(mechanism: str, response: bytes = b"", hostname: str | None = None) -> bytes:
    d = Data()
    d.put_object(Described(ulong(0x41), [symbol(mechanism), response, hostname]))
    body = bytes(d.encode())
    return struct.pack(">IBBH", 8 + len(body), 2, 1, 0) + body


def performatives(data: bytes) -> list[int]:
    out, pos = [], 0
    while pos + 8 <= len(data):
        size = struct.unpack_from(">I", data, pos)[0]
        d = Data()
        d.decode(data[pos + 8:pos + size])
        d.rewind()
        d.next()
        out.append(int(d.get_object().descriptor))
        pos += size
    return out


def test_a_pipelined_refusal_still_gets_the_header_and_mechanisms_first():
    server = SaslServer(lambda mech, resp, host: "wrong key")
    try:
        server.feed(SASL_HEADER + init_frame("PLAIN", b"\x00name\x00key"))
    except SaslError as exc:
        assert exc.reply.startswith(SASL_HEADER)
        assert performatives(exc.reply[8:]) == [0x40, 0x44]  # mechanisms, then the outcome
    else:
        raise AssertionError("a refused login must raise")


def test_byte_by_byte_login_then_amqp_leftover():
    server = SaslServer(lambda mech, resp, host: None)
    data = SASL_HEADER + init_frame("MSSBCBS", b"", "ns.servicebus.windows.net") + AMQP_HEADER + b"x"
    out, i = b"", 0
    while not server.done:
        out += server.feed(data[i:i + 1])
        i += 1
    assert out.startswith(SASL_HEADER) and performatives(out[8:]) == [0x40, 0x44]
    assert server.mechanism == "MSSBCBS" and server.hostname == "ns.servicebus.windows.net"
    # The AMQP header is handed on (proton's transport reads it first); what follows
    # it goes to the AMQP layer directly.
    assert server.leftover == AMQP_HEADER and data[i:] == b"x"


def test_an_unoffered_mechanism_is_refused():
    server = SaslServer(lambda mech, resp, host: None)
    server.feed(SASL_HEADER)
    try:
        server.feed(init_frame("GSSAPI"))
    except SaslError as exc:
        assert "not offered" in str(exc) and performatives(exc.reply) == [0x44]
    else:
        raise AssertionError("GSSAPI is not offered")
