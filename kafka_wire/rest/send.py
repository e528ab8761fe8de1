"""Sending over HTTPS: ``POST /{hub}/messages``, ``/{hub}/partitions/{id}/messages``
and ``/{hub}/publishers/{publisher}/messages``, as the Event Hubs REST API.

A body of type ``application/vnd.microsoft.servicebus.json`` is a batch: a JSON
array of ``{"Body": "...", "UserProperties": {...}, "BrokerProperties":
{"PartitionKey": "..."}}``. Any other body is one event, its partition key in
the ``BrokerProperties`` header and its user properties the request's other
headers (REST "Send event": ``Alert: Strong Wind``), named as the client spelt
them and typed as the service types them (:func:`header_value`); a header sent
more than once is one property, its values joined with ", " (RFC 9110 5.3); a
batch's headers are not properties (the service ignores them). User properties
become application properties, so Kafka consumers see them as headers,
AMQP-encoded, like an SDK's. The events of a batch go to their partitions' logs,
one RecordBatch per partition.

The hub may be named in any case, as on Event Hubs; the hub's own name is used
after the lookup.

Answers: 201 sent; 400 malformed (a header property's name or value too, or more
than ``MAX_HEADER_PROPERTIES`` of them); 401 no valid token, or one without the
Send right; 403 a publisher's token for another publisher, or the tier refuses;
404 no such hub or partition; 413 over the namespace's largest publication (a
single event's header properties count with its body); 503 over
the throughput units for longer than ``?timeout=`` (whole seconds, 0 to 3,600,
default 60; anything else is a 400). A throttled send is answered after its
throttle time, as the service holds it.
"""
from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING

from proton import int32

from kafka_wire.eventhubs.events import Incoming, encode_value
from kafka_wire.eventhubs.refusals import Denial
from kafka_wire.eventhubs.rights import SEND
from kafka_wire.eventhubs.publication import choose_partition, publish_batch
from kafka_wire.rest import refusals
from kafka_wire.rest.http import Later, Request, Response, error
from kafka_wire.whole_numbers import whole_number

if TYPE_CHECKING:
    from kafka_wire.rest.api import RestApi

BATCH_TYPE = "application/vnd.microsoft.servicebus.json"
DEFAULT_TIMEOUT_S = 60  # the service's documented examples send ?timeout=60
# The service documents no range. A negative timeout refused every send as if the
# namespace were over its units; a huge one has a sender's publications accepted
# however deep in debt the namespace already is, a debt every other sender then waits
# out. An hour is far past any client's own timeout (the SDKs default to 60 s).
MAX_TIMEOUT_S = 3600


# Headers that are the request's, not the event's: every other header of a single-event
# send is a user property. Hop-by-hop headers (RFC 9110 7.6.1; RFC 2616 13.5.1) and any
# the Connection header names are the connection's.
_REQUEST_HEADERS = frozenset({
    "authorization", "host", "brokerproperties", "connection", "expect", "user-agent",
    "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te",
    "trailer", "transfer-encoding", "upgrade"})
_REQUEST_PREFIXES = ("content-", "accept", "x-ms-")
# The service documents no bound; the listener's 16 KiB head bounds the rest. More
# properties than this are a 400 that says to send them in a batch's UserProperties.
MAX_HEADER_PROPERTIES = 100
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # an HTTP field name (RFC 9110 5.6.2)
_INTEGER = re.compile(r"[+-]?[0-9]+")  # ([0-9], not \d: other scripts' digits stay text)
_DOUBLE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INT32 = 1 << 31
_INT64 = 1 << 63


class BadBody(ValueError):
    """A body the service answers 400 for; the text says why."""


def header_value(text: str):
    """A header property's value as the service types it ("Exchange events between
    consumers and producers that use different protocols": HTTPS property values are
    converted to AMQP 32- and 64-bit signed integers, 64-bit floating point numbers and
    booleans; any other value is a string): ``true``/``false`` in any case a boolean; an
    integer in ASCII digits an int32, else a long; a decimal or exponent number a double.
    Kept as text: an integer past 64 bits (not rounded into a double), infinities, NaN
    and other scripts' digits. The exact grammar is the service's parser's and is not
    published: this one is an inference."""
    if not text.isascii():
        return text
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    if _INTEGER.fullmatch(text):
        if len(text.lstrip("+-").lstrip("0")) > 19:  # (past int64, and int() of thousands of digits raises)
            return text
        n = int(text)
        if -_INT32 <= n < _INT32:
            return int32(n)
        return n if -_INT64 <= n < _INT64 else text
    if _DOUBLE.fullmatch(text):
        x = float(text)
        if math.isfinite(x):
            return x
    return text


def send(api: RestApi, request: Request, hub: str, partition: str | None,
         publisher: str | None) -> Response | Later:
    """The answer, now or after the throttle time."""
    runtime, principal, refused = api.authorize(request, hub, SEND)
    if refused is not None:
        return refused
    view = runtime.topics.hub(hub)  # named in any case, as on Event Hubs
    if view is None:
        return error(404, f"event hub {hub!r} does not exist in namespace {runtime.name!r}")
    hub = view.name
    if principal is not None and principal.publisher is not None and \
            (publisher or "").lower() != principal.publisher.lower():
        return error(403, f"a token for publisher {principal.publisher!r} may only send to "
                          f"/{hub}/publishers/{principal.publisher}/messages")
    explicit = None
    if partition is not None:
        explicit = whole_number(partition)
        if explicit is None or explicit >= view.partitions:
            return error(404, f"event hub {hub!r} has no partition {partition[:40]!r} "
                              f"(it has 0..{view.partitions - 1})")
    timeout_ms = request_timeout_ms(request.query.get("timeout"))
    if timeout_ms is None:
        return error(400, f"timeout={request.query['timeout'][:40]!r} is not a whole number of "
                          f"seconds from 0 to {MAX_TIMEOUT_S}: leave it out for {DEFAULT_TIMEOUT_S}")
    limit = runtime.policy.max_publication_bytes()
    if len(request.body) > limit:
        return error(413, f"the request body is {len(request.body)} bytes; event hub {hub!r} "
                          f"accepts at most {limit} bytes per send")
    try:
        events = _events(request)
    except BadBody as exc:
        return error(400, str(exc))
    if not events:
        return error(400, "the batch holds no events")
    if publisher is not None:
        # As over AMQP and Kafka: events carry the publisher's name as their key (the name
        # the token was issued for, however the path spells it); an event keyed otherwise
        # fails the send (it was silently re-keyed).
        name = principal.publisher if principal is not None and principal.publisher else publisher
        events = runtime.policy.publisher_events(name, events)
        if isinstance(events, Denial):
            return error(403, events.message)  # (the service: 403 for a publisher's key)
    groups: dict[int, list[Incoming]] = {}
    for event in events:
        p = choose_partition(explicit, event.partition_key, view.partitions,
                             lambda: runtime.next_partition(hub, view.partitions))
        groups.setdefault(p, []).append(event)
    # the whole publication: a single event's header properties are not in the body
    size = sum(len(e.body or b"") + sum(len(n) + len(v) for n, v in e.properties) for e in events)
    done = publish_batch(api.services, runtime, principal, hub, groups, size, timeout_ms,
                         request.headers.get("user-agent"), "https")
    if done.denial is not None:
        return error(refusals.status(done.denial.reason), done.denial.message)
    answer = Response(201, b"", "text/plain")
    return Later(done.throttle_ms, answer) if done.throttle_ms > 0 else answer


def request_timeout_ms(text: str | None) -> int | None:
    """``?timeout=`` (``text``; None when absent) in ms: the default when absent, None
    (a 400) for anything but ASCII digits naming 0 to ``MAX_TIMEOUT_S`` seconds."""
    if text is None:
        return DEFAULT_TIMEOUT_S * 1000
    seconds = whole_number(text, most=len(str(MAX_TIMEOUT_S)) + 2)  # (leading zeros allowed)
    if seconds is None or seconds > MAX_TIMEOUT_S:
        return None
    return seconds * 1000


def _events(request: Request) -> list[Incoming]:
    ctype = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if "," in ctype:  # (a media type holds no comma before its parameters: two were sent)
        raise BadBody(f"Content-Type {ctype[:80]!r} names more than one media type: send one")
    if ctype == BATCH_TYPE:
        items = _json(request.body, "the batch")
        if not isinstance(items, list):
            raise BadBody("a batch is a JSON array of events")
        return [_event(item, i) for i, item in enumerate(items)]
    key = _broker_properties(request.headers.get("brokerproperties"), "the BrokerProperties header")
    return [Incoming(key, _header_properties(request.fields, request.headers.get("connection", "")),
                     request.body, [])]


def _header_properties(fields, connection: str) -> list[tuple[bytes, bytes]]:
    """A single event's user properties: the header ``fields`` (as sent) that are not the
    request's, as (UTF-8 name, AMQP-encoded value). A name keeps the case the client
    sent it in, as the service keeps it; the request's own headers are known in any case.
    A field sent more than once, in any case, is one property: its first spelling, its
    values joined with ", " (RFC 9110 5.3), as the listener joins them for its lookups."""
    hop = {n.strip(" \t").lower() for n in connection.split(",")}
    named: dict[str, tuple[str, list[str]]] = {}  # lower-case name -> (name as sent, values)
    for name, value in fields:
        low = name.lower()
        if low in _REQUEST_HEADERS or low in hop or low.startswith(_REQUEST_PREFIXES):
            continue
        if not _TOKEN.fullmatch(name):
            raise BadBody(f"header {name[:40]!r} is not an HTTP field name: a user property's "
                          f"name is letters, digits and !#$%&'*+-.^_`|~")
        named.setdefault(low, (name, []))[1].append(value)
        if len(named) > MAX_HEADER_PROPERTIES:
            raise BadBody(f"more than {MAX_HEADER_PROPERTIES} headers would be user properties: "
                          f"send more in a batch (Content-Type: {BATCH_TYPE}), each event's in "
                          f"its UserProperties")
    props = []
    for name, values in named.values():
        try:  # (the listener reads a head as Latin-1: the bytes as sent, which are UTF-8)
            text = ", ".join(values).encode("latin-1").decode("utf-8")
        except UnicodeError:
            raise BadBody(f"header {name[:40]!r}: a user property's value must be UTF-8 "
                          f"text") from None
        props.append((name.encode("ascii"), encode_value(header_value(text))))
    return props


def _event(item, i: int) -> Incoming:
    if not isinstance(item, dict) or "Body" not in item:
        raise BadBody(f"event {i} of the batch is not an object with a Body")
    body = item["Body"]
    if not isinstance(body, str):
        raise BadBody(f"event {i}: Body must be a string, not {type(body).__name__}")
    props = item.get("UserProperties") or {}
    if not isinstance(props, dict):
        raise BadBody(f"event {i}: UserProperties must be an object")
    encoded = []
    for name, value in props.items():
        if value is not None and not isinstance(value, (str, bool, int, float)):
            raise BadBody(f"event {i}: user property {name[:40]!r} must be a string, number or boolean")
        try:  # AMQP's long ends at 64 bits; JSON's \ud800 escapes make strings UTF-8 cannot hold
            encoded.append((name.encode("utf-8"), encode_value(value)))
        except (OverflowError, UnicodeEncodeError) as exc:
            raise BadBody(f"event {i}: user property {name[:40]!r} cannot be sent: {exc}") from None
    key = _broker_properties(item.get("BrokerProperties"), f"event {i}'s BrokerProperties")
    return Incoming(key, encoded, _utf8(body, f"event {i}'s Body"), [])


def _broker_properties(value, where: str) -> str | None:
    """The partition key in BrokerProperties (a JSON object, or its text in a header)."""
    if value is None:
        return None
    if isinstance(value, str):
        value = _json(value, where)
    if not isinstance(value, dict):
        raise BadBody(f"{where} must be a JSON object")
    key = value.get("PartitionKey")
    if key is not None and not isinstance(key, str):
        raise BadBody(f"{where}: PartitionKey must be a string")
    if key is not None:
        _utf8(key, f"{where}: PartitionKey")  # the key is hashed, and kept, as UTF-8
    return key


def _json(text: str | bytes, where: str):
    """``text`` read as JSON; a nesting past Python's recursion limit is malformed too."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:  # (UnicodeDecodeError is a ValueError)
        raise BadBody(f"{where} is not JSON: {str(exc)[:120]}") from None


def _utf8(text: str, where: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (\ud800) JSON lets through
        raise BadBody(f"{where} is not valid Unicode (it holds a lone surrogate)") from None
