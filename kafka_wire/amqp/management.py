"""The ``$management`` node: ``READ`` of an event hub's and a partition's
runtime information, which ``get_eventhub_properties``,
``get_partition_ids`` and ``get_partition_properties`` ask for.

The request names the hub (``name``), and for a partition its id
(``partition``); it carries a token (``security_token``), checked like a
put-token (else the connection's tokens count). Any of Send, Listen or
Manage on the hub may read it.
"""
from __future__ import annotations

import logging
from bisect import bisect_right
from typing import TYPE_CHECKING

from proton import UNDESCRIBED, Array, Data, Message, int32, timestamp

from kafka_wire.amqp import georeplication
from kafka_wire.amqp.cbs import NOT_A_MAP, reply, request_properties
from kafka_wire.eventhubs.rights import LISTEN, MANAGE, SEND
from kafka_wire.eventhubs.door import Jwt, Refused, SasToken
from kafka_wire.log import batch as rb
from kafka_wire.log_lines import RepeatedWarnings, client_address, shortened
from kafka_wire.whole_numbers import whole_number

if TYPE_CHECKING:
    from kafka_wire.amqp.connection import AmqpConnection

log = logging.getLogger(__name__)
_repeats = RepeatedWarnings(log)

EVENTHUB = "com.microsoft:eventhub"
PARTITION = "com.microsoft:partition"


def answer(conn: AmqpConnection, request: Message) -> Message:
    props = request_properties(request)
    response = reply(400, NOT_A_MAP) if props is None else _answer(conn, props)
    plan = conn.fault_plan
    if plan is not None and plan.active and props is not None:
        hub = props.get("name")
        view = conn.namespace.topics.hub(hub) if isinstance(hub, str) else None
        fault = plan.fire(("management-fail",), {
            "namespace": conn.namespace.name, "hub": view.name if view is not None else hub,
            "partition": props.get("partition"), "client": conn.container, "protocol": "amqp"})
        if fault is not None:
            response = reply(fault.params["status"], fault.params["description"])
    status = response.properties["status-code"]
    if status >= 400:  # a refusal: once per client and status, with its reason
        _repeats.warn(f"amqp-management {status}", client_address(conn.peer),
                      f"AMQP $management request from {conn.peer} refused ({status}): "
                      f"{response.properties['status-description']}")
    return response


def _answer(conn: AmqpConnection, props: dict) -> Message:
    operation, kind, hub = props.get("operation"), props.get("type"), props.get("name")
    if operation != "READ" or kind not in (EVENTHUB, PARTITION):
        return reply(400, f"operation {operation!r} on type {kind!r} is not supported: "
                          f"READ {EVENTHUB} or {PARTITION}")
    if not isinstance(hub, str):
        return reply(400, "the request names no event hub (name)")
    runtime = conn.namespace
    denied = _denied(conn, props.get("security_token"), hub)
    if denied:
        return reply(401, denied)
    view = runtime.topics.hub(hub)  # named in any case, as on Event Hubs
    if view is None:
        return reply(404, f"The messaging entity '{runtime.name}/{hub}' could not be found: event "
                          f"hub {hub!r} does not exist in namespace {runtime.name!r}")
    hub = view.name
    if kind == EVENTHUB:
        created = runtime.topics.logs.topics().get(view.name)
        body = {"name": view.name, "type": EVENTHUB,
                "created_at": timestamp(created.created_ms if created and created.created_ms else 0),
                "partition_count": view.partitions,
                # replicas; the SDKs read > 1 as geo-replication on (Go fails without it)
                "georeplication_factor": int32(georeplication.replication_factor(runtime)),
                "partition_ids": Array(UNDESCRIBED, Data.STRING, *[str(p) for p in range(view.partitions)])}
        return _ok(body)
    partition = props.get("partition")
    if isinstance(partition, int) and not isinstance(partition, bool):
        partition = str(partition)  # (a number was always read as its digits)
    if not isinstance(partition, str):
        return reply(400, "the request names no partition: give its id as a string (partition)"
                          if partition is None else f"the partition id must be a string such as "
                          f"'0', not {type(partition).__name__}")
    number = whole_number(partition, most=10)
    if number is None or number >= view.partitions:
        return reply(404, f"event hub {hub!r} has no partition {shortened(repr(partition))} "
                          f"(it has {view.partitions})")
    plog = runtime.topics.log(view.name, number)
    last, where = last_event(plog)
    body = {"name": view.name, "type": PARTITION, "partition": partition,
            "begin_sequence_number": plog.log_start_offset if where else -1,
            "last_enqueued_sequence_number": last,
            "last_enqueued_offset": _offset(runtime, view.name, int(partition), last, where),
            "last_enqueued_time_utc": timestamp(where[1] if where else 0),
            "is_partition_empty": where is None}
    return _ok(body)


# Batches looked at, back from the last stable offset, for the last event (last_event):
# transaction markers and aborted batches at the end are passed over without a scan.
LAST_EVENT_BATCHES = 64
_HIDDEN_BITS = rb.CONTROL_BIT | rb.TRANSACTIONAL_BIT


def last_event(plog) -> tuple[int, tuple[int, int] | None]:
    """The sequence number of the last event a receiver of ``plog`` can get, and its (Event
    Hubs offset, enqueued time ms); (log start offset - 1, None) when it holds none.

    That is the last record below the last stable offset (receivers stop there until the
    open transaction ends) that is neither a transaction marker nor of an aborted
    transaction: ``high watermark - 1`` named a commit marker, which no receiver is sent,
    so a reader waiting for it waited for ever. Batches are stepped over back from the
    end, at most :data:`LAST_EVENT_BATCHES` of them (one, but after a transaction); past
    that, the offset before them is taken unchecked, so a READ never scans the log."""
    start = plog.log_start_offset
    last = plog.last_stable_offset - 1
    if last < start:
        return start - 1, None
    segments = plog.segments
    k = len(segments) - 1
    if segments[k].base_offset > last:  # (an open transaction, or an active segment still empty)
        k = max(bisect_right(segments, last, key=_base_offset) - 1, 0)
    seg = segments[k]
    loc = seg.locate(last)
    if loc is not None and loc.header.base_offset <= last:
        i, header = loc.index, loc.header
    else:  # ``last`` is in a gap compaction left: the batch before it
        i, header = (loc.index if loc is not None else seg.batch_index.entries), None
    for _ in range(LAST_EVENT_BATCHES):
        if header is None:  # the batch before
            i -= 1
            while i < 0:
                if k == 0:
                    return start - 1, None
                k -= 1
                seg = segments[k]
                i = seg.batch_index.entries - 1
            header = seg.header_at(seg.batch_index.position(i))
        if header.last_offset < start:
            return start - 1, None
        if header.records_count and not (header.attributes & _HIDDEN_BITS and plog.hidden(header)):
            found = min(header.last_offset, last)
            return found, (rb.event_offset(seg.position_of(i), found - header.base_offset),
                           seg.batch_index.entry(i)[2])
        last, header = header.base_offset - 1, None  # a marker, an aborted or an emptied batch
    return max(last, start - 1), (plog.event_position(last) if last >= start else None)


def _base_offset(segment) -> int:
    return segment.base_offset


def _offset(runtime, hub: str, partition: int, last: int, where) -> str:
    """The last event's offset: its byte position, or on a geo-replicated
    namespace its SEGMENT:SEQUENCE offset (kafka_wire.amqp.georeplication)."""
    if where is None:
        return "-1"
    if getattr(runtime, "geo", None) is None:
        return str(where[0])
    return georeplication.offset_of(georeplication.history(runtime, hub, partition), last)


def _ok(body: dict) -> Message:
    message = reply(200, "OK")
    message.body = body
    return message


def _denied(conn: AmqpConnection, token, hub: str) -> str | None:
    door = conn.namespace.door
    if isinstance(token, str) and token:
        # a SAS token, or the bearer token a TokenCredential gave, as on $cbs (for this
        # connection's namespace; an open one takes it as no credential)
        credential = SasToken(token) if token.startswith("SharedAccessSignature") \
            else Jwt(token, by_host=True)
        try:
            principal = door.sign_in(credential, conn.peer, "AMQP $management request")
        except Refused as exc:
            return exc.message
        if any(door.allows(principal, right, hub) for right in (SEND, LISTEN, MANAGE)):
            return None
        return f"{principal} has no right on event hub {hub!r}"
    why = None
    for right in (LISTEN, SEND, MANAGE):
        _, why = conn.principal_for(hub, right)
        if why is None:
            return None
    return why
