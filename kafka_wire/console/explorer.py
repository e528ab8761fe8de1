"""The Data Explorer's reads: a partition's events from a position, a page at a
time, as the JSON the console shows (see docs/console-api.md).

Events are read straight from the partition log, never through a consumer group,
so browsing moves no group's position (the console's API charges what it answers
to the namespace's egress throughput units, :mod:`kafka_wire.console.api`). Control
records, aborted transactions and events past the last stable offset are not
shown, as a read_committed consumer or an Event Hubs receiver would not see them.
"""
from __future__ import annotations

import functools
import io
import json
import logging
import time
from datetime import datetime, timezone
from typing import Callable, Iterator, NamedTuple

from proton import Data

from kafka_wire.console import avro_measure
from kafka_wire.console import decoding as decoding_
from kafka_wire.console.decoding import Decoding, Unreadable, Unresolved
from kafka_wire.log import batch as rb
from kafka_wire.log import errors as log_errors
from kafka_wire.log.read_committed import CommittedFilter
from kafka_wire.log.records import read_event_columns, records_bytes
from kafka_wire.log_lines import RepeatedWarnings
from kafka_wire.whole_numbers import whole_number

log = logging.getLogger(__name__)
_repeats = RepeatedWarnings(log)

PAGE_DEFAULT = 50
PAGE_MAX = 200                # ~20 ms of the event loop for 1 KiB events (python -m bench.explorer)
BODY_PREVIEW = 16 * 1024      # a page shows at most this much of a body; the rest is a download
# A page shows at most this many of an event's headers and this much of their names and
# values (each decoded on the event loop: ~3 µs through proton); the event's own view, more.
# Past either, "headers_truncated": true, and "headers_count" says how many there are.
HEADERS_PREVIEW, HEADER_BYTES_PREVIEW = 100, 16 * 1024
HEADERS_WHOLE, HEADER_BYTES_WHOLE = 1_000, 1024 * 1024
# The explorer reads no more of a record's headers than it shows (the rest are skipped, by
# the record's length: read_event_columns' max_headers): a 1 MB record can hold 60,000,
# ~1-2.5 µs each to read. A search looks in those a page shows; the AMQP properties (the
# last header) of a record with more are not shown.
# A page's events stop at this much JSON (the first is always shown): events of 16 KiB
# previews and 16 KiB of headers are ~70 KiB each as JSON, not 200 of them to a page.
PAGE_BYTES = 4 * 1024 * 1024
# A search request stops after this many events or this long, whichever comes first (the
# answer says where it stopped; the console goes on from there): the broker's event loop,
# which its Kafka and AMQP clients share, is never held for longer.
SCAN_EVENTS = 20_000
SCAN_BUDGET_S = 0.025
READ_BYTES = 1024 * 1024
STARTS = ("earliest", "latest", "sequence", "offset", "time")
# AMQP's properties section, field by field (AMQP 1.0, 3.2.4).
_PROPERTY_FIELDS = ("message_id", "user_id", "to", "subject", "reply_to", "correlation_id",
                    "content_type", "content_encoding", "absolute_expiry_time", "creation_time",
                    "group_id", "group_sequence", "reply_to_group_id")
_AVRO_TYPE = "avro/binary+"
# An Avro body is decoded only when it decodes to at most this many values (~1 µs each to
# measure, about as much again to decode, on the event loop) and this much JSON (in a page:
# a body's preview is 16 KiB); past either it is shown as bytes, with why.
AVRO_VALUES, AVRO_WHOLE_VALUES = 10_000, 50_000
AVRO_PREVIEW_CHARS, AVRO_WHOLE_CHARS = 4 * BODY_PREVIEW, 8 * 1024 * 1024
# What one page may spend decoding, in Avro values measured: ~60 ms of the event loop at
# most. The page ends before the event that would spend more (the first is always shown);
# its next_sequence_number says where the next page starts.
PAGE_WORK = 30_000


class ExplorerError(ValueError):
    """A request the explorer cannot answer; ``status`` is its HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Stored(NamedTuple):
    """One event as the log keeps it."""
    sequence_number: int
    offset: int            # Event Hubs' offset (byte position and index in the batch)
    enqueued_ms: int       # the broker's append time
    key: bytes | None
    value: bytes | None
    headers: list          # [(name, value bytes or None)], the first of them (see walk)
    amqp: bool             # sent over AMQP or HTTPS: header values are AMQP encodings
    headers_count: int = -1  # how many headers the record has (-1: those in ``headers``)


class Budget:
    """What the rest of a page may spend (see :data:`PAGE_WORK`, :data:`PAGE_BYTES`);
    ``over`` once an event needed more than was left."""
    __slots__ = ("work", "bytes", "over")

    def __init__(self, work: int = PAGE_WORK, size: int = PAGE_BYTES) -> None:
        self.work = work
        self.bytes = size
        self.over = False


class Skipped(NamedTuple):
    """What :func:`walk` yields for a batch it skipped unparsed: where it went on."""
    next_offset: int


# -- positions --------------------------------------------------------------------------
def start_sequence(plog, start: str, value: str | None) -> int:
    """The sequence number a start names, clamped to the partition."""
    first, end = plog.log_start_offset, plog.log_end_offset
    if start == "earliest":
        return first
    if start == "latest":
        return end
    if start not in STARTS:
        raise ExplorerError(400, f"from={start!r}: use one of {', '.join(STARTS)}")
    if value is None or value.strip() == "":
        raise ExplorerError(400, f"from={start} needs a value=")
    value = value.strip()
    if start == "time":
        ms = parse_time_ms(value)
        return min(max(plog.offset_for_append_time(ms), first), end)
    number = whole_number(value, signed=True)
    if number is None:
        raise ExplorerError(400, f"{start} {value[:40]!r} is not a whole number")
    if start == "sequence":
        return min(max(number, first), end)
    return min(max(plog.offset_at_event_offset(number), first), end)


def parse_time_ms(value: str) -> int:
    """Milliseconds since the epoch, or an ISO 8601 time (UTC unless it says otherwise)."""
    if (number := whole_number(value)) is not None:
        return number
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ExplorerError(400, f"time {value!r} is neither milliseconds since the epoch nor "
                                 "an ISO 8601 time such as 2026-11-25T10:00:00Z") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return int(when.timestamp() * 1000)


# -- reading ----------------------------------------------------------------------------
def walk(plog, start: int, upper: int | None = None, holding: bytes | None = None,
         read_headers: int = HEADERS_PREVIEW, decoding: Decoding | None = None) -> Iterator[Stored]:
    """The partition's events from sequence number ``start`` up to ``upper`` (default:
    the last stable offset), batch by batch, each with its first ``read_headers`` headers.
    ``holding`` (lower-case ASCII): skip, unparsed, the batches whose records do not
    hold it anywhere, ASCII case folded (a search's fast path: most batches hold no
    match; bytes.lower and ``in`` beat a case-insensitive regex 1.5x), yielding
    :class:`Skipped`; a batch that cannot be read yields :class:`Unreadable`; with
    ``decoding``, one too large to decompress on the loop yields :class:`Unresolved`
    (see :mod:`kafka_wire.console.decoding`)."""
    stop = plog.last_stable_offset if upper is None else min(upper, plog.last_stable_offset)
    offset = max(start, plog.log_start_offset)
    while offset < stop:
        try:
            batches = plog.stored_batches(offset, READ_BYTES)
        except log_errors.OffsetOutOfRange:
            return
        if not batches:
            return
        # Which batches are hidden: decided for the whole read with one search of the
        # aborted-transaction index (as a Kafka consumer decides), not one per transactional
        # batch: a partition of thousands of aborted transactions made a page quadratic.
        committed = CommittedFilter(plog, offset,
                                    min(stop, rb.parse_header(batches[-1][2], 0).last_offset + 1))
        for position, append_ms, data in batches:
            header = rb.parse_header(data, 0)
            if header.base_offset >= stop:
                return
            if header.attributes & (rb.CONTROL_BIT | rb.TRANSACTIONAL_BIT) and committed.hidden(header):
                offset = header.last_offset + 1
                continue
            section = decoding_.records(plog, position, data, header, decoding) \
                if header.compression else None  # (decompressed, or why not, or Unresolved)
            if type(section) is Unresolved:
                offset = header.last_offset + 1
                yield section
                continue
            why = section if type(section) is str else None
            try:
                if why is None and holding is not None and \
                        holding not in (records_bytes(data, header) if section is None else section).lower():
                    offset = header.last_offset + 1
                    yield Skipped(offset)
                    continue
                deltas, keys, headers, values, counts = [], [], [], [], {}
                if why is None:
                    batch, plain = (data, header) if section is None else decoding_.as_uncompressed(section, header)
                    read_event_columns(batch, plain, deltas, keys, headers, values,
                                       max_headers=read_headers, header_counts=counts)
            except log_errors.LogError as exc:  # bad records, or a codec that is not installed
                why = str(exc)
                decoding_.unreadable(plog, position, header, why)
            if why is not None:
                # Once a minute a batch at most, not at every page that shows it.
                _repeats.warn(f"unreadable batch {header.base_offset}", str(plog),
                              f"console: the batch at sequence numbers {header.base_offset}..{header.last_offset} "
                              f"of {plog} cannot be read: {why}")
                offset = header.last_offset + 1
                yield Unreadable(header.base_offset, header.last_offset, why)
                continue
            amqp = bool(header.attributes & rb.AMQP_HEADERS_BIT)
            base = header.base_offset
            for i, delta in enumerate(deltas):
                seq = base + delta
                if offset <= seq < stop:
                    yield Stored(seq, rb.event_offset(position, delta), append_ms, keys[i], values[i],
                                 headers[i], amqp, counts.get(i, -1))
            offset = header.last_offset + 1


def page(plog, start: int, count: int, *, before: int | None = None,
         query: str | None = None, unreadable: list | None = None,
         decoding: Decoding | None = None) -> tuple[list[Stored], int, int]:
    """(events, next sequence number, events looked at); the :class:`Unreadable`
    batches met on the way are added to ``unreadable`` (in order). With ``decoding``,
    a batch too large to decompress on the loop ends the page before it (a 'before'
    page: after it), and is added to ``decoding.pending``, to be decompressed in a
    thread and the page read again.

    Forward from ``start``; with ``before``, the ``count`` events before that
    sequence number; with ``query``, only events that contain it (a
    case-insensitive substring of key, a header or the body), looking at about
    :data:`SCAN_EVENTS` events or for :data:`SCAN_BUDGET_S` at most (the next
    sequence number says where to go on).
    """
    count = max(1, min(count, PAGE_MAX))
    unreadable = [] if unreadable is None else unreadable
    if before is not None:
        return _page_before(plog, before, count, query, unreadable, decoding)
    match = matcher(query) if query else None
    out: list[Stored] = []
    deadline = time.perf_counter() + SCAN_BUDGET_S
    nxt = first = max(start, plog.log_start_offset)
    for event in walk(plog, nxt, holding=_ascii(query), decoding=decoding):
        if type(event) is Skipped:
            nxt = event.next_offset
        elif type(event) is Unresolved:
            nxt = max(nxt, event.first)  # (a start inside it: from there)
            decoding.pending.append(event)
            break
        elif type(event) is Unreadable:
            nxt = event.next_offset
            unreadable.append(event)
        else:
            nxt = event.sequence_number + 1
            if match is None or match(event):
                out.append(event)
                if len(out) >= count:
                    break
        scanned = nxt - first  # batches skipped unparsed were looked at too
        if match is not None and (scanned >= SCAN_EVENTS or
                                  ((scanned & 255 == 0 or type(event) is not Stored)
                                   and time.perf_counter() > deadline)):
            break
    else:
        nxt = max(nxt, min(plog.last_stable_offset, plog.log_end_offset))
    return out, nxt, nxt - first


def _ascii(query: str | None) -> bytes | None:
    needle = (query or "").lower()
    return needle.encode() if needle and needle.isascii() else None


def _page_before(plog, before: int, count: int, query: str | None, unreadable: list,
                 decoding: Decoding | None) -> tuple[list[Stored], int, int]:
    first = plog.log_start_offset
    before = min(before, plog.log_end_offset)
    match = matcher(query) if query else None
    span = count
    while True:
        lo = max(first, before - span)
        found, bad, unresolved = [], [], []
        for e in walk(plog, lo, before, holding=_ascii(query), decoding=decoding):
            if type(e) is Stored:
                if match is None or match(e):
                    found.append(e)
            elif type(e) is Unreadable:
                bad.append(e)
            elif type(e) is Unresolved:
                unresolved.append(e)
        if unresolved:  # the page holds what is after the newest of them, at most
            cut = unresolved[-1].next_offset
            found = [e for e in found if e.sequence_number >= cut]
            bad = [u for u in bad if u.first >= cut]
            if len(found) < count:  # it needs them: newest first, the nearest to its end
                decoding.pending.extend(reversed(unresolved))
                unreadable.extend(bad)
                return found, before, before - cut
        # Gaps (transaction markers, aborted records, unreadable batches) or a search: widen, bounded.
        if len(found) >= count or lo <= first or span >= SCAN_EVENTS // 4:
            found = found[-count:]
            since = found[0].sequence_number if len(found) == count else lo  # what the page covers
            unreadable.extend(u for u in bad if u.last >= since)
            return found, before, before - lo
        span *= 4


class Deferred(Exception):
    """:func:`find` met a batch to decompress in a thread first (``decoding.pending``)."""


def find(plog, sequence_number: int, decoding: Decoding | None = None) -> Stored:
    if not plog.log_start_offset <= sequence_number < plog.log_end_offset:
        raise ExplorerError(404, f"sequence number {sequence_number} is not in the partition "
                                 f"({plog.log_start_offset}..{plog.log_end_offset - 1})")
    for event in walk(plog, sequence_number, sequence_number + 1, read_headers=HEADERS_WHOLE,
                      decoding=decoding):
        if type(event) is Unresolved:
            decoding.pending.append(event)
            raise Deferred
        if type(event) is Unreadable:  # bad data: not a 500
            raise ExplorerError(422, f"sequence number {sequence_number} is in an unreadable batch: "
                                     f"{event.as_json()['error']}")
        if event.sequence_number == sequence_number:
            return event
    raise ExplorerError(404, f"sequence number {sequence_number} is a transaction marker or "
                             "an aborted or still-open transaction's record")


def matcher(query: str) -> Callable[[Stored], bool]:
    """Does an event hold ``query`` (case-insensitive) in its key, a header's name or
    value, or its body? An ASCII query is looked for in the bytes (ASCII-lowered),
    without decoding each body: a search's hot loop."""
    needle = query.lower()
    if needle.isascii():
        raw = needle.encode()

        def match(event: Stored) -> bool:
            if event.value is not None and raw in event.value.lower():
                return True
            if event.key is not None and raw in event.key.lower():
                return True
            return any(needle in name.lower() or (value is not None and raw in value.lower())
                       for name, value in event.headers)
        return match

    def match_text(event: Stored) -> bool:
        texts = [_text(event.key), _text(event.value)]
        for name, value in event.headers:
            texts.append(name)
            texts.append(_text(value))
        return any(needle in t.lower() for t in texts if t)
    return match_text


def _text(raw: bytes | None) -> str:
    return "" if raw is None else raw.decode("utf-8", "replace")


# -- as JSON ------------------------------------------------------------------------------
def page_json(events: list[Stored], registry: Callable[[str], object] | None = None, *,
              newest: bool = False, budget: Budget | None = None) -> list[str]:
    """The events of a page as JSON texts, as many as its :class:`Budget` allows, from
    the first on (``newest``: from the last back, for a page that ends at a position);
    at least one."""
    budget = Budget() if budget is None else budget
    out: list[str] = []
    for event in (reversed(events) if newest else events):
        text = json.dumps(as_json(event, registry, budget=budget), separators=(",", ":"))
        budget.bytes -= len(text)
        if (budget.over or budget.bytes < 0) and out:
            break
        out.append(text)
    return out[::-1] if newest else out


def as_json(event: Stored, registry: Callable[[str], object] | None = None,
            body_limit: int | None = BODY_PREVIEW, budget: Budget | None = None) -> dict:
    """``registry``: schema id -> Schema (or None), to decode Avro bodies.
    ``body_limit``: None for the event's own view (the body whole), else a page's
    preview; ``budget``: what the page has left to spend."""
    headers, properties, count, cut = _headers(event, body_limit is None)
    out = {
        "sequence_number": event.sequence_number,
        "offset": str(event.offset),  # Event Hubs SDKs carry it as a string
        "enqueued_time": _iso(event.enqueued_ms),
        "enqueued_time_ms": event.enqueued_ms,
        "partition_key": None,
        "key_hex": None,
        "protocol": "amqp" if event.amqp else "kafka",
        "headers": headers,
        "headers_count": count,
        "headers_truncated": cut,
        "properties": properties,
        "body": body_json(event.value, body_limit),
    }
    if event.key is not None:
        try:
            out["partition_key"] = event.key.decode("utf-8")
        except UnicodeDecodeError:
            out["key_hex"] = event.key.hex()
    content_type = properties.get("content_type") or _header_text(headers, "content-type")
    avro = _avro(event.value, content_type, registry, body_limit is None, budget)
    if avro is not None:
        out["body"]["avro"] = avro
    return out


def _headers(event: Stored, whole: bool) -> tuple[list[dict], dict, int, bool]:
    """(the headers shown, the AMQP properties, how many headers there are, whether
    some are not shown): at most :data:`HEADERS_PREVIEW` and :data:`HEADER_BYTES_PREVIEW`
    of them in a page (``whole``: the event's own view, ``HEADERS_WHOLE``...)."""
    raw, properties, amqp = event.headers, {}, event.amqp
    count = max(event.headers_count, len(raw))
    if amqp and raw and raw[-1][0] == rb.AMQP_PROPERTIES_HEADER and raw[-1][1] is not None:
        properties = _amqp_properties(raw[-1][1])  # where the Event Hubs front ends put it
        raw, count = raw[:-1], count - 1
    limit, room = (HEADERS_WHOLE, HEADER_BYTES_WHOLE) if whole else (HEADERS_PREVIEW, HEADER_BYTES_PREVIEW)
    headers: list[dict] = []
    for name, value in raw:  # (one named so before the last is the application's)
        room -= len(name) + (0 if value is None else len(value))
        if len(headers) == limit or room < 0:
            return headers, properties, count, True
        headers.append(_header(name, value, amqp))
    return headers, properties, count, count > len(headers)


def body_json(value: bytes | None, limit: int | None) -> dict:
    if value is None:
        return {"size": 0, "null": True, "format": "text", "text": "", "truncated": False}
    size = len(value)
    cut = value if limit is None or size <= limit else value[:limit]
    out = {"size": size, "null": False, "truncated": len(cut) < size}
    try:
        text = value.decode("utf-8") if not out["truncated"] else _utf8_prefix(cut)
    except UnicodeDecodeError:
        text = None
    if text is None or _binary_looking(text):
        out.update(format="binary", hex=cut.hex())
        return out
    fmt = "text"
    if not out["truncated"]:
        try:
            json.loads(text)
            fmt = "json"
        except (ValueError, RecursionError):  # nested past Python's recursion limit: text
            pass
    elif text.lstrip()[:1] in ("{", "["):
        fmt = "json"  # too long to parse here: shown as text, downloadable whole
    out.update(format=fmt, text=text)
    return out


def _utf8_prefix(cut: bytes) -> str:
    """A cut body's text: the cut may split a character (up to 3 bytes), not more."""
    for drop in range(4):
        try:
            return cut[: len(cut) - drop].decode("utf-8")
        except UnicodeDecodeError:
            continue
    raise UnicodeDecodeError("utf-8", cut, 0, len(cut), "not UTF-8")


def _binary_looking(text: str) -> bool:
    """Valid UTF-8 that is still not text (control characters other than whitespace)."""
    return any(ord(c) < 32 and c not in "\t\n\r\f" for c in text[:4096])


def _header(name: str, value: bytes | None, amqp: bool) -> dict:
    if value is None:
        return {"name": name, "type": "null", "value": None}
    if amqp:
        decoded = _amqp_value(value)
        if decoded is not _UNDECODED:
            return {"name": name, "type": _type_name(decoded), "value": plain(decoded)}
    try:
        text = value.decode("utf-8")
        if not _binary_looking(text):
            return {"name": name, "type": "string", "value": text}
    except UnicodeDecodeError:
        pass
    return {"name": name, "type": "binary", "value": value.hex()}


def _header_text(headers: list[dict], name: str) -> str | None:
    for h in headers:
        if h["name"].lower() in (name, name.replace("-", "_"), "contenttype") and \
                isinstance(h["value"], str):
            return h["value"]
    return None


_UNDECODED = object()


def _amqp_value(raw: bytes):
    data = Data()
    try:
        if data.decode(raw) != len(raw):
            return _UNDECODED
        data.rewind()
        data.next()
        return data.get_object()
    except Exception:  # noqa: BLE001 - proton raises several types for a value it cannot read
        return _UNDECODED


def _amqp_properties(raw: bytes) -> dict:
    value = _amqp_value(raw)
    fields = getattr(value, "value", None)
    if not isinstance(fields, (list, tuple)):
        return {}
    return {name: plain(v) for name, v in zip(_PROPERTY_FIELDS, fields) if v is not None}


def _type_name(value) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, (bytes, bytearray)):
        return "binary"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


def plain(value):
    """A decoded AMQP or Avro value as JSON: bytes as hex, the rest as their text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value  # proton's symbol, ulong, timestamp...: str and int subclasses
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {str(plain(k)): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


# -- Avro ---------------------------------------------------------------------------------
def _avro(value: bytes | None, content_type: str | None, registry, whole: bool = False,
          budget: Budget | None = None) -> dict | None:
    """An Avro body with a registered schema, decoded: the Schema Registry's Avro
    encoder names the schema in the content type (``avro/binary+<schema id>``).
    Measured first (:mod:`avro_measure`): a body past :data:`AVRO_VALUES` or the
    JSON a view shows is not decoded, and says why."""
    if value is None or not content_type or not content_type.lower().startswith(_AVRO_TYPE):
        return None
    schema_id = content_type[len(_AVRO_TYPE):].strip()
    out = {"schema_id": schema_id}
    schema = registry(schema_id) if registry is not None else None
    if schema is None:
        out["error"] = f"schema {schema_id!r} is not in this namespace's Schema Registry"
        return out
    out.update(schema_group=schema.group, schema_name=schema.name, schema_version=schema.version)
    try:
        import fastavro
    except ImportError:
        out["error"] = "decoding Avro needs fastavro (pip install 'kafka-wire[capture]')"
        return out
    limit = AVRO_WHOLE_VALUES if whole else AVRO_VALUES
    left = limit if budget is None else min(limit, budget.work)
    try:
        parsed, named = _parsed_schema(schema.content)
        try:
            values, _ = avro_measure.measure(parsed, named, value, left,
                                             AVRO_WHOLE_CHARS if whole else AVRO_PREVIEW_CHARS)
        except (avro_measure.TooLarge, avro_measure.Malformed) as exc:
            if budget is not None:  # the walk's work is spent, decoded or not
                budget.work -= exc.values
                # Past what the page had left, short of the event's own limit: the next
                # page shows it (the page ends before it).
                budget.over = left < limit and exc.values > left
            if isinstance(exc, avro_measure.Malformed):
                raise
            out["error"] = (f"not decoded: {exc} (download the body"
                            f"{'' if whole else ', or the event as JSON'})")
            out["too_large"] = True
            return out
        if budget is not None:
            budget.work -= values
        out["value"] = plain(fastavro.schemaless_reader(io.BytesIO(value), parsed))
    except Exception as exc:  # noqa: BLE001 - any failure to decode is shown, not raised
        out["error"] = f"the body does not decode with schema {schema_id}: {exc}"
    return out


@functools.lru_cache(maxsize=8)
def _parsed_schema(content: str) -> tuple[object, dict]:
    """(fastavro's parsed schema, its named types): parsed once, not per event of a page."""
    import fastavro

    named: dict = {}
    return fastavro.parse_schema(json.loads(content), named_schemas=named), named
