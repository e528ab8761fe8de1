"""A single event sent over HTTPS takes its user properties from the request's headers
named as the client spelt them (REST "Send event": ``Alert: Strong Wind`` is the property
``Alert``), while the request's own headers (Authorization, Content-Type, Host,
BrokerProperties, Connection and those it names) are known in any case. A header sent more
than once is one field whose values are joined with ", " (RFC 9110 5.3): one property, its
first spelling; one value for the protocol's lookups, where two Hosts or two
Content-Lengths or two credentials are refused (RFC 9112 3.2, 6.3) and two Content-Types
are no valid one. A value is the bytes sent, UTF-8: one ending in "à" (0xC3 0xA0) keeps its 0xA0."""
from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from hypothesis import example, given, settings, strategies as st

from kafka_wire.eventhubs.events import encode_value
from kafka_wire.rest.send import MAX_HEADER_PROPERTIES, BadBody, header_value
from kafka_wire.testing.http_raw import answer
from tests.amqp.conftest import ROOT, receive
from tests.amqp.test_cross_protocol import kafka_password
from tests.amqp.test_sdk_python import consumer
from tests.eventhubs.conftest import confluent_conf
from tests.rest.helpers import HOST, end_offset, http_broker, token as sas_token

BATCH = "application/vnd.microsoft.servicebus.json"
# Stand-ins in a parameter list, replaced by tokens made when the test runs: a token made at
# collection expires in 600 s, and a long run reaches the test later than that (d6ed185).
ROOT_TOKEN, WRONG_TOKEN = b"<root-key token>", b"<wrong-key token>"
broker = http_broker("rest-headers-as-sent", amqp=True)


def token(key: str = ROOT[1]) -> bytes:
    return sas_token(key).encode()


def raw_post(broker, lines: list[bytes], body: bytes = b"raw", *, host: bool = True,
             auth: bytes | None = None, length: bool = True) -> tuple[int, bytes]:
    """(status, body) of a request written byte by byte, in the header case given."""
    head = [b"POST /payments/messages HTTP/1.1", b"Connection: close"]
    if host:
        head.append(b"Host: " + HOST.encode())
    if length:
        head.append(b"Content-Length: %d" % len(body))
    if auth is not None:
        head.append(b"Authorization: " + auth)
    status, _h, rest = answer(broker.http_port, b"\r\n".join(head + lines) + b"\r\n\r\n" + body,
                              timeout=30)  # (to the close: Connection: close)
    return status, rest


def kafka_headers(broker, offset: int) -> list[tuple[str, bytes]]:
    c = Consumer(confluent_conf(broker.bootstrap_servers, kafka_password(broker),
                                **{"group.id": f"read-{offset}", "enable.auto.commit": False}))
    c.assign([TopicPartition("payments", 0, offset)])
    deadline = time.monotonic() + 20
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                return m.headers() or []
    finally:
        c.close()
    raise AssertionError(f"no record at offset {offset}")


def sent(broker, lines: list[bytes], body: bytes = b"raw") -> list[tuple[str, bytes]]:
    """The Kafka headers of the one event a single-event send of ``lines`` stored."""
    at = end_offset(broker)
    status, text = raw_post(broker, lines, body, auth=token())
    assert status == 201, text
    assert end_offset(broker) == at + 1
    return kafka_headers(broker, at)


def test_names_reach_kafka_and_amqp_receivers_as_the_client_spelt_them(broker):
    at = end_offset(broker)
    status, text = raw_post(broker, [b"Alert: Strong Wind", b"X-MiXeD-Case: 7", b"lower: yes",
                                     b"UPPER: 1.5", b"Content-Type: text/plain"], auth=token())
    assert status == 201, text
    assert kafka_headers(broker, at) == [("Alert", encode_value("Strong Wind")),
                                         ("X-MiXeD-Case", encode_value(header_value("7"))),
                                         ("lower", encode_value("yes")), ("UPPER", encode_value(1.5))]
    got = receive(consumer(broker, "payments"), at + 1, partition_id="0", starting_position="-1")
    assert got[at][1].properties == {b"Alert": b"Strong Wind", b"X-MiXeD-Case": 7, b"lower": b"yes",
                                     b"UPPER": 1.5}


def test_the_requests_own_headers_are_known_in_any_case(broker):
    """AUTHORIZATION, host, content-TYPE, BROKERPROPERTIES, CONNECTION (and the header it
    names), X-MS-*, ACCEPT: none is a property, each does its work."""
    at = end_offset(broker)
    status, text = raw_post(broker, [b"host: " + HOST.encode(), b"AUTHORIZATION: " + token(),
                                     b"BROKERPROPERTIES: " + json.dumps({"PartitionKey": "k-1"}).encode(),
                                     b"CONNECTION: close, X-Hop", b"x-HOP: dropped", b"X-MS-Trace: no",
                                     b"ACCEPT: */*", b"USER-AGENT: raw", b"Kept: yes"], host=False)
    assert status == 201, text
    assert kafka_headers(broker, at) == [("Kept", encode_value("yes"))]
    status, text = raw_post(broker, [b"content-TYPE: " + BATCH.encode(), b"Ignored: yes"],
                            json.dumps([{"Body": "b0", "UserProperties": {"Own": 1}}]).encode(), auth=token())
    assert status == 201, text  # a batch, though its type's name is in another case
    assert kafka_headers(broker, at + 1) == [("Own", encode_value(1))]


def test_a_repeated_header_is_one_property_its_values_joined_first_spelling_kept(broker):
    assert sent(broker, [b"X-Dup: first", b"x-dup: 2", b"Other: o", b"X-DUP: third"]) == [
        ("X-Dup", encode_value("first, 2, third")), ("Other", encode_value("o"))]
    # joined, a list of numbers is text; a value sent once keeps its type
    assert sent(broker, [b"N: 1", b"N: 2", b"M: 3"]) == [("N", encode_value("1, 2")),
                                                         ("M", encode_value(header_value("3")))]
    assert sent(broker, [b"E:", b"E: x"]) == [("E", encode_value(", x"))]  # (an empty value is one too)


@pytest.mark.parametrize("value", ["voil\u00e0", "\u00e0\u00e0", "\u00e0 \u00e0", "caf\u00e9 \u00e0",
                                   "\u4e2d\u6587", "\U0001f600", "tab\tinside"])
def test_a_non_ascii_value_is_kept_whole(broker, value):
    """UTF-8 "à" is 0xC3 0xA0: read as Latin-1, 0xA0 is a no-break space, which trimming
    the value with str.strip cut off (and the send was refused as not UTF-8)."""
    assert sent(broker, [b"Where: " + value.encode("utf-8")]) == [("Where", encode_value(value))]


@pytest.mark.parametrize("lines, why", [
    ([b"Host: " + HOST.encode()], "the host header is sent more than once"),
    ([b"HOST: other.example"], "the host header is sent more than once"),
    ([b"content-length: 3"], "the content-length header is sent more than once"),
    ([b"Content-Length: 30"], "the content-length header is sent more than once"),
    ([b"Authorization: " + ROOT_TOKEN], "the authorization header is sent more than once"),
    ([b"AUTHORIZATION: " + WRONG_TOKEN], "the authorization header is sent more than once"),
    ([b"Content-Type: text/plain", b"Content-Type: " + BATCH.encode()], "more than one media type"),
    ([b"CONTENT-TYPE: " + BATCH.encode() + b", text/plain"], "more than one media type"),
    ([b"BrokerProperties: {}", b"brokerproperties: {\"PartitionKey\": \"k\"}"], "is not JSON"),
    ([b"X-Bad/../../etc/passwd: x"], "not an HTTP field name"),
    ([b"X-Ok: 1", b"x-ok\xc3\xa4: 2"], "not an HTTP field name"),     # a non-ASCII name
    ([b"X-Nbsp\xa0: 2"], "not an HTTP field name"),                     # (no longer trimmed off)
    ([b"X-Half: caf\xc3"], "must be UTF-8"),
    ([b"X-Half: a", b"x-half: \xa0"], "must be UTF-8"),                  # (its values joined: still not)
    ([b"X-P%d: %d" % (i, i) for i in range(MAX_HEADER_PROPERTIES)] + [b"x-p0: again", b"X-New: 1"],
     "send more in a batch"),
], ids=["two-hosts", "two-hosts-other-case", "two-lengths-same", "two-lengths-differ",
        "two-tokens", "two-tokens-one-wrong", "two-content-types", "joined-content-types",
        "two-broker-properties", "path-like-name", "non-ascii-name", "nbsp-in-name", "half-utf8",
        "joined-half-utf8", "too-many-after-a-repeat"])
def test_ambiguous_or_malformed_headers_are_400_and_store_nothing(broker, lines, why):
    lines = [line.replace(ROOT_TOKEN, token()).replace(WRONG_TOKEN, token("d3Jvbmc=")) for line in lines]
    at = end_offset(broker)
    status, text = raw_post(broker, lines, auth=token())
    assert status == 400 and text.startswith(b"<Error><Code>400</Code>"), text
    assert why.encode() in text, text
    assert end_offset(broker) == at


def test_a_repeated_property_counts_once_toward_the_limit(broker):
    lines = [b"X-P%d: %d" % (i, i) for i in range(MAX_HEADER_PROPERTIES)]
    got = sent(broker, lines + [b"x-p0: again"] * 20)
    assert len(got) == MAX_HEADER_PROPERTIES
    assert got[0] == ("X-P0", encode_value("0, " + ", ".join(["again"] * 20)))


@pytest.mark.parametrize("auth, why", [
    (None, b"requires authentication"), ("wrong", b"signature"),
    (b"SharedAccessSignature sr=../../etc/passwd", b""), ("\u00e9\u00e0".encode("utf-8"), b"")])
def test_without_one_good_credential_no_header_is_looked_at(broker, auth, why):
    auth = token("d3Jvbmc=") if auth == "wrong" else auth  # (made now: it expires in 600 s)
    at = end_offset(broker)
    # (a name that is no HTTP token is the listener's 400 before any route: 21678e1)
    status, text = raw_post(broker, [b"X-Bad: \xff", b"Content-Type: a, b", b"Alert: x"], auth=auth)
    assert status == 401 and text.startswith(b"<Error><Code>401</Code>") and why in text, text
    assert end_offset(broker) == at


# -- the parsers, against a model ------------------------------------------------------------
_NAME = st.text("abcXYZ-_09", min_size=1, max_size=6)
_VALUE = st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, blacklist_characters="\x7f"),
                 max_size=12).map(lambda v: v.strip(" \t"))


def _cased(name: str, flips: list[bool]) -> str:
    return "".join(c.upper() if f else c.lower() for c, f in zip(name, flips + [False] * len(name)))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_NAME, st.lists(st.booleans(), max_size=6), _VALUE), max_size=30))
@example([("Alert", [True], "Strong Wind"), ("alert", [], "again")])
def test_head_fields_and_properties_follow_the_model(entries):
    """The listener's fields keep names and order as sent; its lookups join a name's values
    in any case; a send's properties are the first spelling of each name, values joined."""
    from kafka_wire.httpd.fields import header_fields as _fields, header_map as _headers
    from kafka_wire.rest.send import _header_properties
    lines = [f"{_cased(name, flips)}: {value}" for name, flips, value in entries]
    fields = _fields(lines)
    assert fields == [(_cased(n, f), v) for n, f, v in entries]
    headers, repeated = _headers(fields)
    model: dict[str, tuple[str, list[str]]] = {}
    for name, value in fields:
        model.setdefault(name.lower(), (name, []))[1].append(value)
    assert headers == {low: ", ".join(values) for low, (_n, values) in model.items()}
    assert repeated is None  # (no Host nor Content-Length among these names)
    try:
        props = _header_properties(fields, "")
    except BadBody as exc:
        assert len(model) > MAX_HEADER_PROPERTIES or "UTF-8" in str(exc), exc
        return
    want = []
    for name, values in model.values():
        text = ", ".join(values).encode("latin-1").decode("utf-8")
        want.append((name.encode(), encode_value(header_value(text))))
    assert props == want


@given(st.lists(st.sampled_from(["Host", "HOST", "content-LENGTH", "Authorization", "X-A"]), max_size=6))
def test_host_content_length_and_authorization_may_be_sent_once(names):
    from kafka_wire.httpd.fields import header_map as _headers
    _headers_, repeated = _headers([(n, "v") for n in names])
    lows = [n.lower() for n in names]
    assert repeated == next((n for n in ("host", "content-length", "authorization")
                             if lows.count(n) > 1), None)
