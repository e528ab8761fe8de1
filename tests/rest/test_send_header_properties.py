"""A single event sent over HTTPS takes its user properties from the request's headers (REST
"Send event": "a request with UserProperties ... Alert: Strong Wind"), typed as Event Hubs
types them ("Exchange events between consumers and producers that use different
protocols": 32- and 64-bit signed integers, 64-bit floating point numbers and booleans, any
other value a string): AMQP receivers read them typed, Kafka consumers as headers holding
their AMQP encoding. The request's own headers are not properties; bad, too many or too
large ones are refused with the service's error body and store nothing."""
from __future__ import annotations

import json
import math
import socket
import time

import pytest
import requests
from confluent_kafka import Consumer, TopicPartition
from hypothesis import example, given, strategies as st
from proton import Data, int32

from kafka_wire.eventhubs import sas
from kafka_wire.eventhubs.events import encode_value
from kafka_wire.rest.send import MAX_HEADER_PROPERTIES, header_value
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import MULTI_TOML, ROOT, receive
from tests.amqp.test_cross_protocol import amqp_value, kafka_password
from tests.amqp.test_sdk_python import consumer
from tests.eventhubs.conftest import confluent_conf

HOST = "contoso.servicebus.windows.net"
BATCH = "application/vnd.microsoft.servicebus.json"
ATOM = "application/atom+xml;type=entry;charset=utf-8"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("rest-headers") / "data", config_file=MULTI_TOML,
                        amqp=True, http=True) as b:
        yield b


def token(hub: str | None = None) -> str:
    return sas.generate(sas.resource_uri(HOST, hub), ROOT[0], ROOT[1], int(time.time()) + 600)


def post(broker, body: bytes, headers: dict, path: str = "/payments/messages",
         auth: bool = True) -> requests.Response:
    h = {"Host": HOST, "Content-Type": ATOM, **headers}
    if auth:
        h["Authorization"] = token()
    return requests.post(broker.http_url + path, data=body, headers=h, timeout=30)


def raw_post(broker, lines: list[bytes], body: bytes = b"raw", path: bytes = b"/payments/messages",
             auth: bool = True) -> tuple[int, str]:
    """A request written byte by byte: header names and values a client library would not send."""
    head = [b"POST " + path + b" HTTP/1.1", b"Host: " + HOST.encode(), b"Connection: close",
            b"Content-Length: " + str(len(body)).encode()]
    if auth:
        head.append(b"Authorization: " + token().encode())
    with socket.create_connection(("127.0.0.1", broker.http_port), timeout=30) as s:
        s.sendall(b"\r\n".join(head + lines) + b"\r\n\r\n" + body)
        answer = b""
        while b"\r\n\r\n" not in answer and (chunk := s.recv(65536)):
            answer += chunk
        top, _, rest = answer.partition(b"\r\n\r\n")
        length = next((int(line.split(b":", 1)[1]) for line in top.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), None)
        while (length is None or len(rest) < length) and (chunk := s.recv(65536)):
            rest += chunk  # (to the close, without a length)
    return int(top.split(b" ", 2)[1]), rest.decode("utf-8", "replace")


def end_offset(broker, hub: str = "payments") -> int:
    c = Consumer(confluent_conf(broker.bootstrap_servers, kafka_password(broker), **{"group.id": "ends"}))
    try:
        return c.get_watermark_offsets(TopicPartition(hub, 0), timeout=15)[1]
    finally:
        c.close()


def kafka_record(broker, offset: int, hub: str = "payments"):
    c = Consumer(confluent_conf(broker.bootstrap_servers, kafka_password(broker),
                                **{"group.id": f"read-{offset}", "enable.auto.commit": False}))
    c.assign([TopicPartition(hub, 0, offset)])
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                return m
    finally:
        c.close()
    raise AssertionError(f"no record at offset {offset} of {hub}")


def test_the_documented_example_reaches_amqp_typed_and_kafka_as_amqp_encoded_headers(broker):
    at = end_offset(broker)
    r = post(broker, b'{ "DeviceId":"dev-01", "Temperature":"37.0" }',
             {"Alert": "Strong Wind", "Count": "1234", "Big": "5555555555", "Ratio": "1.125",
              "Flag": "true", "City": "Z\u00fcrich".encode("utf-8"), "Empty": "",
              "Zip": "01234", "Huge": "99999999999999999999", "Hex": "0x10",
              "BrokerProperties": json.dumps({"PartitionKey": "dev-01"}),
              "x-ms-retrypolicy": "NoRetry", "Accept-Language": "en", "Expect": ""})
    assert r.status_code == 201, r.text
    record = kafka_record(broker, at)
    headers = dict(record.headers())
    # (names as the client spelt them, as the service keeps them)
    assert sorted(headers) == ["Alert", "Big", "City", "Count", "Empty", "Flag", "Hex", "Huge", "Ratio", "Zip"]
    # the AMQP type codes: str8, int, long, double, true
    assert headers["Alert"] == b"\xa1\x0bStrong Wind"
    assert headers["Count"] == b"\x71\x00\x00\x04\xd2"
    assert headers["Big"][0] == 0x81 and headers["Ratio"][0] == 0x82 and headers["Flag"] == b"\x41"
    assert {name: amqp_value(raw) for name, raw in headers.items()} == {
        "Alert": "Strong Wind", "Count": 1234, "Big": 5555555555, "Ratio": 1.125, "Flag": True,
        "City": "Z\u00fcrich", "Empty": "", "Zip": 1234, "Huge": "99999999999999999999", "Hex": "0x10"}
    assert record.key() == b"dev-01"
    got = receive(consumer(broker, "payments"), at + 1, partition_id="0", starting_position="-1")
    event = got[at][1]
    assert event.body_as_str() == '{ "DeviceId":"dev-01", "Temperature":"37.0" }'
    assert event.properties == {b"Alert": b"Strong Wind", b"Count": 1234, b"Big": 5555555555,
                                b"Ratio": 1.125, b"Flag": True, b"City": "Z\u00fcrich".encode(),
                                b"Empty": b"", b"Zip": 1234, b"Huge": b"99999999999999999999",
                                b"Hex": b"0x10"}


def test_a_batch_takes_its_properties_from_the_body_not_the_headers(broker):
    at = end_offset(broker)
    r = post(broker, json.dumps([{"Body": "b0", "UserProperties": {"n": 1}}, {"Body": "b1"}]).encode(),
             {"Content-Type": BATCH, "Alert": "ignored"})
    assert r.status_code == 201, r.text
    assert [dict(kafka_record(broker, at + i).headers() or []) for i in range(2)] == \
        [{"n": encode_value(1)}, {}]


def test_hop_by_hop_headers_and_those_connection_names_are_not_properties(broker):
    at = end_offset(broker)
    status, text = raw_post(broker, [b"Keep-Alive: timeout=5", b"TE: trailers", b"X-Mine: kept",
                                     b"Connection: close, X-Hop", b"X-Hop: dropped",
                                     b"Proxy-Authorization: Basic eA==", b"Upgrade: h2c",
                                     b"Content-Type: text/plain", b"Accept: */*", b"X-MS-Client: no"])
    assert status == 201, text
    assert dict(kafka_record(broker, at).headers()) == {"X-Mine": encode_value("kept")}


def test_a_repeated_header_is_one_property_its_values_joined(broker):
    at = end_offset(broker)  # (RFC 9110 5.3; its first spelling: tests/rest/test_rest_headers_as_sent.py)
    status, text = raw_post(broker, [b"X-Dup: first", b"x-dup: 2"])
    assert status == 201, text
    assert dict(kafka_record(broker, at).headers()) == {"X-Dup": encode_value("first, 2")}


@pytest.mark.parametrize("lines, status, why", [
    ([b"X-Bad: \xff\xfe"], 400, "must be UTF-8"),
    ([b"X-Bad: caf\xe9"], 400, "must be UTF-8"),                 # Latin-1, not UTF-8
    ([b"Bad Name: x"], 400, "not an HTTP field name"),
    ([b"B\xc3\xa4d: x"], 400, "not an HTTP field name"),         # a non-ASCII name
    ([b"Bad/../Name: x"], 400, "not an HTTP field name"),
    ([b"X-P%d: v" % i for i in range(MAX_HEADER_PROPERTIES + 1)], 400, "send more in a batch"),
], ids=["not-utf8", "latin1", "space-in-name", "non-ascii-name", "path-like-name", "too-many"])
def test_bad_header_properties_are_400_and_store_nothing(broker, lines, status, why):
    at = end_offset(broker)
    got, text = raw_post(broker, lines)
    assert got == status and text.startswith(f"<Error><Code>{status}</Code>") and why in text, text
    assert end_offset(broker) == at


def test_as_many_header_properties_as_allowed_are_taken(broker):
    at = end_offset(broker)
    status, text = raw_post(broker, [b"X-P%d: %d" % (i, i) for i in range(MAX_HEADER_PROPERTIES)])
    assert status == 201, text
    assert len(kafka_record(broker, at).headers()) == MAX_HEADER_PROPERTIES


def test_a_head_past_the_listeners_bound_is_refused_unread(broker):
    at = end_offset(broker)
    status, text = raw_post(broker, [b"X-Huge: " + b"v" * (20 * 1024)])
    assert status == 431 and text.startswith("<Error><Code>431</Code>"), text  # (test_http_head_bounds.py)
    assert end_offset(broker) == at


def test_header_properties_count_toward_the_publication_limit(broker):
    limit = 1024 * 1024  # Standard's largest publication
    at = end_offset(broker)
    r = post(broker, b"x" * (limit - 512), {"X-Pad": "p" * 1024})
    assert r.status_code == 413 and r.text.startswith("<Error><Code>413</Code>"), r.text
    assert "the publication is" in r.text
    assert end_offset(broker) == at
    r = post(broker, b"x" * (limit - 512), {"X-Pad": "p" * 256})  # (and the record batch's own bytes)
    assert r.status_code == 201, r.text


@pytest.mark.parametrize("auth, status", [(None, 401), ("wrong", 401)])
def test_without_a_good_credential_no_property_is_looked_at(broker, auth, status):
    at = end_offset(broker)
    h = {"X-Bad": b"\xff"}  # (a malformed property after a refused token: still the 401)
    if auth == "wrong":
        h["Authorization"] = sas.generate(sas.resource_uri(HOST), ROOT[0], "d3Jvbmc=", int(time.time()) + 600)
    r = post(broker, b"no", h, auth=False)
    assert r.status_code == status and r.text.startswith(f"<Error><Code>{status}</Code>"), r.text
    assert end_offset(broker) == at


# -- the typing of a header's value, as a property ---------------------------------------------
def roundtrip(value):
    """``value`` encoded as an application property is, and decoded back."""
    d = Data()
    d.decode(encode_value(value))
    d.rewind()
    d.next()
    return d.get_object()


@given(st.integers(-(1 << 31), (1 << 31) - 1), st.sampled_from(["", "+", "0", "00"]))
def test_int32_values_are_int32(n, prefix):
    text = (prefix + str(n)) if n >= 0 else str(n)
    value = header_value(text)
    assert type(value) is int32 and value == n and roundtrip(value) == n


@given(st.one_of(st.integers(-(1 << 63), -(1 << 31) - 1), st.integers(1 << 31, (1 << 63) - 1)))
def test_64_bit_values_are_longs(n):
    value = header_value(str(n))
    assert type(value) is int and value == n and roundtrip(value) == n


@given(st.one_of(st.integers(max_value=-(1 << 63) - 1), st.integers(min_value=1 << 63)).map(str))
@example("9" * 5000)  # (int() of a number this long raises)
@example("+" + "0" * 30 + "9223372036854775808")
def test_integers_past_64_bits_stay_text(text):
    assert header_value(text) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_decimal_numbers_are_doubles(x):
    value = header_value(repr(x))
    assert type(value) is float and value == x and roundtrip(value) == x


@given(st.sampled_from(["true", "false"]).flatmap(
    lambda word: st.tuples(*[st.sampled_from([c, c.upper()]) for c in word]).map("".join)))
def test_booleans_in_any_case(text):
    assert header_value(text) is (text.lower() == "true")


@given(st.text(max_size=40))
@example("NaN")
@example("Infinity")
@example("-inf")
@example("1e999")
@example("\u0661\u0662")  # Arabic-Indic digits
@example("\uff11")        # a fullwidth 1
@example("1_000")
@example("1,5")
@example(" 1")
@example("0x1F")
@example("tru\u0435")      # a Cyrillic e
def test_any_text_is_a_typed_value_or_itself(text):
    value = header_value(text)
    if isinstance(value, str):
        assert value == text
    elif isinstance(value, bool):
        assert text.lower() in ("true", "false")
    elif isinstance(value, int):
        assert text.isascii() and int(text) == value
    else:
        assert isinstance(value, float) and math.isfinite(value) and text.isascii()
        assert float(text) == value
    back = roundtrip(value)  # (proton reads a long back as its int subclass)
    assert back == value and isinstance(back, type(value)) and isinstance(back, bool) == isinstance(value, bool)
