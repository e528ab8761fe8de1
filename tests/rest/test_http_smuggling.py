"""A header line another HTTP parser could read otherwise is refused 400, in its route's
error shape, and its connection closed (RFC 9112 5.1, 5.2, 2.2; RFC 9110 5.1, 5.5): a
folded line, whitespace before the colon, a tab or space before the name, a name that is
not a token, a CR, LF or NUL in a value. Read leniently (names trimmed), each let a
Content-Length a proxy in front never saw carry the next request in as the body of a
REST send: one answer for two requests, the second stored as an event. Here the pair
gets exactly one 400, the connection closes, and the hub holds nothing new."""
from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kafka_wire.testing.http_raw import answers as read_answers, read_to_close
from tests.rest.helpers import HOST, MG, end_offset, http_broker, token

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
broker = http_broker("http-smuggling")


def send_head(request_line: str = "POST /payments/messages") -> bytes:
    return (f"{request_line} HTTP/1.1\r\nHost: {HOST}\r\nAuthorization: {token()}\r\n"
            f"Content-Type: text/plain\r\n").encode()


def answers(broker, data: bytes) -> list[tuple[int, str, bytes]]:
    """(status, content type, body) of each answer to ``data``, read until the broker
    closes (a connection left open fails with socket.timeout)."""
    return [(status, headers["content-type"].split(";")[0], body)
            for status, headers, body in read_answers(read_to_close(broker.http_port, data))]


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
