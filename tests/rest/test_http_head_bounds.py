"""A request head past the HTTP listener's bounds (16 KiB, or more than MAX_FIELDS header
lines) is answered 431 Request Header Fields Too Large in the error shape of the route its
request line names, as the listener's other refusals are (the data plane's
``<Error><Code>`` for REST send, ARM's JSON for management, the Schema Registry and the
control APIs, plain text elsewhere), with one log line a minute for a client (a flood of
them is counted, not written line by line); its connection is closed and the broker serves on. Whatever the head holds (no credential or a wrong one, non-ASCII or
path-like names and values, a request line past the reader's 64 KiB) nothing is stored
and nothing hangs."""
from __future__ import annotations

import json
import logging

import pytest

from kafka_wire.httpd import listener
from kafka_wire.log_lines import RepeatedWarnings
from kafka_wire.testing.http_raw import Answer, answer
from tests.rest.helpers import HOST, MG, end_offset, http_broker, token

MAX_HEAD = 16 * 1024  # the listener's bounds, written out: pinned here
MAX_FIELDS = 256
SEND = "POST /payments/messages"
ROUTES = {  # request line -> (content type, how its error body starts)
    SEND: ("application/xml", b"<Error><Code>431</Code><Detail>"),
    f"GET {MG}?api-version=2024-01-01": ("application/json", b'{"error": {"code": "RequestHeaderFieldsTooLarge"'),
    "PUT /$schemaGroups/g/schemas/s?api-version=2023-07-01":
        ("application/json", b'{"error": {"code": "RequestHeaderFieldsTooLarge"'),
    "POST /$faults": ("application/json", b'{"error": {"code": "RequestHeaderFieldsTooLarge"'),
    "GET /api/namespaces": ("text/plain", b"the request "),
    "GET /health": ("text/plain", b"the request "),
}
broker = http_broker("http-head-bounds")


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def clock(monkeypatch) -> Clock:
    """A fresh count of refusals per test (all come from 127.0.0.1), on a clock the test moves."""
    c = Clock()
    monkeypatch.setattr(listener, "_repeats", RepeatedWarnings(listener.log, clock=c))
    return c


def exchange(broker, head: bytes, body: bytes = b"") -> Answer:
    """(status, headers, body) of the one answer to ``head`` + ``body``, read to the close
    (a head past the bound is never all taken: http_raw writes it from a thread)."""
    return answer(broker.http_port, head + body, timeout=20)


def head_of(request_line: str, extra: list[bytes], auth: str | None = None) -> bytes:
    lines = [f"{request_line} HTTP/1.1".encode(), b"Host: " + HOST.encode(), b"Content-Length: 2"]
    if auth is not None:
        lines.append(b"Authorization: " + auth.encode())
    return b"\r\n".join(lines + extra) + b"\r\n\r\n"


def padded(request_line: str, size: int, auth: str | None = None, fill: bytes = b"v",
           extra: tuple[bytes, ...] = ()) -> bytes:
    """A head of exactly ``size`` bytes (with the ``extra`` header lines): one header of
    ``fill`` bytes brings it there."""
    base = head_of(request_line, [*extra, b"X-Pad: "], auth)
    assert size >= len(base)
    return head_of(request_line, [*extra, b"X-Pad: " + (fill * size)[:size - len(base)]], auth)


def health(broker) -> int:
    status, _h, _b = exchange(broker, b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    return status


def assert_431(answer, request_line: str) -> dict:
    status, headers, body = answer
    ctype, starts = ROUTES[request_line]
    assert status == 431 and headers["content-type"].split(";")[0] == ctype, (request_line, headers, body)
    assert body.startswith(starts) and headers["connection"] == "close", (request_line, body)
    return headers


@pytest.mark.parametrize("request_line", list(ROUTES))
@pytest.mark.parametrize("size", [MAX_HEAD + 1, 70 * 1024, 1 << 20], ids=["16KiB+1", "70KiB", "1MiB"])
def test_a_head_too_large_is_431_in_its_routes_shape_with_one_log_line(broker, caplog, request_line, size):
    at = end_offset(broker)
    with caplog.at_level(logging.WARNING, logger="kafka_wire.httpd.listener"):
        assert_431(exchange(broker, padded(request_line, size, token()), b"{}"), request_line)
    logged = [r for r in caplog.records if "(431)" in r.getMessage()]
    assert len(logged) == 1 and request_line.split(" ")[1][:30] in logged[0].getMessage(), logged
    assert end_offset(broker) == at and health(broker) == 200


def test_a_head_at_the_bound_is_served(broker):
    at = end_offset(broker)
    # (Connection: close: a kept connection is read to its idle close, 15 s later)
    status, _h, body = exchange(broker, padded(SEND, MAX_HEAD, token(), extra=(b"Connection: close",)),
                                b"ok")
    assert status == 201, body
    assert end_offset(broker) == at + 1
    assert assert_431(exchange(broker, padded(SEND, MAX_HEAD + 1, token()), b"ok"), SEND)


@pytest.mark.parametrize("auth", [None, "wrong", "SharedAccessSignature sr=../../etc/passwd"])
def test_without_a_good_credential_a_large_head_is_the_same_431(broker, auth):
    at = end_offset(broker)
    auth = token("d3Jvbmc=") if auth == "wrong" else auth
    assert_431(exchange(broker, padded(SEND, 20 * 1024, auth), b"{}"), SEND)
    assert end_offset(broker) == at


@pytest.mark.parametrize("fill", ["\u00e0".encode(), "\U0001f600".encode(), b"\xff\xfe", b"../",
                                  b"\r\nX-Injected: 1"], ids=["a-grave", "emoji", "not-utf8", "path", "crlf"])
def test_whatever_a_large_head_holds_it_is_431(broker, fill):
    at = end_offset(broker)
    assert_431(exchange(broker, padded(SEND, 40 * 1024, token(), fill), b"{}"), SEND)
    names = head_of(SEND, [b"X-" + fill * 10 + b"-%d: v" % i for i in range(2000)], token())
    assert_431(exchange(broker, names, b"{}"), SEND)  # (many lines past 16 KiB)
    assert end_offset(broker) == at


@pytest.mark.parametrize("request_line", [SEND, f"GET {MG}?api-version=2024-01-01", "GET /health"])
def test_more_header_lines_than_the_bound_are_431_and_as_many_are_served(broker, request_line):
    base = 3  # Host, Content-Length, Authorization
    many = [b"X-%d: 1" % i for i in range(MAX_FIELDS - base + 1)]
    assert len(head_of(request_line, many, token())) < MAX_HEAD
    headers = assert_431(exchange(broker, head_of(request_line, many, token()), b"{}"), request_line)
    assert headers["connection"] == "close"
    repeated = [b"X-Same: 1"] * (MAX_FIELDS - base + 1)  # (one name repeated: the same count)
    assert_431(exchange(broker, head_of(request_line, repeated, token()), b"{}"), request_line)
    at_bound = [b"Connection: close"] + many[:-2]
    assert len(at_bound) + base == MAX_FIELDS
    status, _h, body = exchange(broker, head_of(request_line, at_bound, token()), b"{}")
    assert status != 431, body
    if request_line == SEND:  # (each is a property: past the send's own bound of 100)
        assert status == 400 and b"send more in a batch" in body, body


def test_a_request_line_past_the_readers_limit_is_a_plain_431(broker, caplog):
    line = b"GET /" + b"a" * (80 * 1024) + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    with caplog.at_level(logging.WARNING, logger="kafka_wire.httpd.listener"):
        status, headers, body = exchange(broker, line)
    assert (status, headers["content-type"].split(";")[0]) == (431, "text/plain"), body
    assert len([r for r in caplog.records if "(431)" in r.getMessage()]) == 1
    assert health(broker) == 200


def test_a_flood_of_431s_from_one_client_is_one_log_line_a_minute(broker, caplog, clock):
    head = padded(SEND, 20 * 1024, token())
    with caplog.at_level(logging.WARNING, logger="kafka_wire.httpd.listener"):
        for _ in range(25):
            assert_431(exchange(broker, head, b"{}"), SEND)
        clock.now += 61
        assert_431(exchange(broker, head, b"{}"), SEND)
    logged = [r.getMessage() for r in caplog.records if "(431)" in r.getMessage()]
    assert len(logged) == 2 and "and 24 more like it from 127.0.0.1" in logged[1], logged
    assert health(broker) == 200


def test_a_431_answer_is_one_well_formed_http_answer(broker):
    status, headers, body = exchange(broker, padded(f"GET {MG}?api-version=2024-01-01", 30 * 1024))
    assert status == 431
    doc = json.loads(body)
    assert doc["error"]["code"] == "RequestHeaderFieldsTooLarge" and "16384" in doc["error"]["message"]
