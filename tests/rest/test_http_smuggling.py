"""A header line another HTTP parser could read otherwise is refused 400, in its route's
error shape, and its connection closed (RFC 9112 5.1, 5.2, 2.2; RFC 9110 5.1, 5.5): a
folded line, whitespace before the colon, a tab or space before the name, a name that is
not a token, a CR, LF or NUL in a value. Read leniently (names trimmed), each let a
Content-Length a proxy in front never saw carry the next request in as the body of a
REST send: one answer for two requests, the second stored as an event. Here the pair
gets exactly one 400, the connection closes, and the hub holds nothing new."""
from __future__ import annotations

import socket
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kafka_wire.eventhubs import sas
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import MULTI_TOML, ROOT
from tests.amqp.test_cross_protocol import kafka_password
from tests.eventhubs.conftest import confluent_conf

HOST = "contoso.servicebus.windows.net"
MG = "/subscriptions/s/resourceGroups/g/providers/Microsoft.EventHub/namespaces/contoso"
SECOND = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"  # what a proxy sends next, as its own request
N = len(SECOND)
CASES = {  # the lines that end the head: each hides "Content-Length: N" from an RFC reader
    "obs-fold": b"X-Pad: a\r\n Content-Length: %d" % N,
    "tab-fold": b"X-Pad: a\r\n\tContent-Length: %d" % N,
    "space-before-colon": b"Content-Length : %d" % N,
    "tab-before-colon": b"Content-Length\t: %d" % N,
    "tab-before-name": b"\tContent-Length: %d" % N,
    "space-before-name": b" Content-Length: %d" % N,
    "vt-after-name": b"Content-Length\x0b: %d" % N,
    "bare-cr": b"Content-Length: 0\r\nX-A: b\rContent-Length: %d" % N,
    "bare-lf": b"Content-Length: 0\r\nX-A: b\nContent-Length: %d" % N,
    "nul": b"Content-Length: 0\r\nX-A: b\x00\r\nX-B: c",
    "no-colon": b"Content-Length: 0\r\nX-A b",
    "non-token-name": b"Content-Length: 0\r\nX(A): b",
    "latin1-name": b"Content-Length: 0\r\nX-\xe0: b",
}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("http-smuggling") / "data", config_file=MULTI_TOML,
                        http=True) as b:
        yield b


def send_head(request_line: str = "POST /payments/messages") -> bytes:
    token = sas.generate(sas.resource_uri(HOST), ROOT[0], ROOT[1], int(time.time()) + 600)
    return (f"{request_line} HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: {token}\r\n"
            f"Content-Type: text/plain\r\n").encode()


def answers(broker, data: bytes) -> list[tuple[int, str, bytes]]:
    """(status, content type, body) of each answer to ``data``, read until the broker
    closes (a connection left open fails with socket.timeout)."""
    with socket.create_connection(("127.0.0.1", broker.http_port), timeout=10) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    got = []
    while out:
        top, sep, out = out.partition(b"\r\n\r\n")
        assert sep, top
        lines = top.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
        size = int(headers["content-length"])
        got.append((int(lines[0].split(" ")[1]), headers["content-type"].split(";")[0], out[:size]))
        out = out[size:]
    return got


def end_offset(broker) -> int:
    c = Consumer(confluent_conf(broker.bootstrap_servers, kafka_password(broker), **{"group.id": "ends"}))
    try:
        return c.get_watermark_offsets(TopicPartition("payments", 0), timeout=15)[1]  # (1 partition)
    finally:
        c.close()


@pytest.mark.parametrize("lines", list(CASES.values()), ids=list(CASES))
def test_a_rest_send_with_a_hidden_content_length_is_one_400_and_nothing_is_stored(broker, lines):
    at = end_offset(broker)
    got = answers(broker, send_head() + lines + b"\r\n\r\n" + SECOND)
    assert [(status, ctype) for status, ctype, _b in got] == [(400, "application/xml")], got
    assert got[0][2].startswith(b"<Error><Code>400</Code>"), got
    assert end_offset(broker) == at


@pytest.mark.parametrize("request_line, ctype, starts", [
    (f"GET {MG}?api-version=2024-01-01", "application/json", b'{"error": {"code": "BadRequest"'),
    ("POST /$faults", "application/json", b'{"error": {"code": "BadRequest"'),
    ("GET /health", "text/plain", b"a header line begins with whitespace"),
], ids=["management", "fault-control", "health"])
def test_the_400_is_in_the_routes_error_shape(broker, request_line, ctype, starts):
    got = answers(broker, send_head(request_line) + CASES["obs-fold"] + b"\r\n\r\n" + SECOND)
    assert len(got) == 1 and got[0][:2] == (400, ctype) and got[0][2].startswith(starts), got


def test_a_well_formed_pair_is_still_two_answers_and_one_event(broker):
    at = end_offset(broker)
    got = answers(broker, send_head() + b"X-Pad: a\r\nContent-Length: 2\r\n\r\nok" + SECOND
                  .replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
    assert [status for status, _c, _b in got] == [201, 200], got
    assert end_offset(broker) == at + 1


TCHAR = "!#$%&'*+-.^_`|~0123456789azAZ"
HOSTILE = TCHAR + " \t\r\n\x00\x0b\x0c\x7f:;,()\"/[]{}<>=?@\\\xa0\xe0\xff"


@settings(max_examples=500, derandomize=True, deadline=None)
@given(st.lists(st.tuples(st.text(HOSTILE, max_size=8), st.sampled_from(["", ":", ": ", " :", "\t:"]),
                          st.text(HOSTILE, max_size=8)), max_size=8))
@example([("Content-Length", " :", " 5")])
@example([("X-Pad", ":", " a"), (" Content-Length", ":", " 5")])
def test_the_field_parser_takes_only_tokens_and_clean_values(entries):
    from kafka_wire.httpd.fields import MalformedHead, header_fields
    lines = [name + sep + value for name, sep, value in entries]
    try:
        fields = header_fields(lines)
    except MalformedHead:
        return
    assert len(fields) == len(lines)
    for line, (name, value) in zip(lines, fields):
        assert name and set(name) <= set(TCHAR), (line, name)
        assert not set(value) & set("\r\n\x00") and value == value.strip(" \t"), (line, value)
        assert line.startswith(name + ":") and line[len(name) + 1:].strip(" \t") == value
