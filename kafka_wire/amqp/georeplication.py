"""AMQP on a geo-replicated namespace (``runtime.geo`` is not None).

* A link whose attach desires ``com.microsoft:georeplication`` (azure-eventhub
  5.15 asks on every sender and receiver, @azure/event-hubs 6 too) gets it back
  in its attach's offered capabilities, as the service answers when the
  namespace is geo-replicated. Proton's Python binding cannot set a link's
  offered capabilities, so the attach frame is rewritten on its way out
  (:class:`OfferingPadder`, in place only while such an attach is pending).
* Offsets handed out (``x-opt-offset``, the runtime metric's
  ``last_enqueued_offset``, the management node's partition properties) are
  ``SEGMENT:SEQUENCE`` (:mod:`kafka_wire.eventhubs.geo_offsets`).
* Starting positions: an offset filter must be ``-1``, ``@latest`` or a geo
  offset this replica's history holds; a plain (legacy) offset or a stale one
  is refused with ``com.microsoft:georeplication:invalid-offset``.
  Sequence-number filters take ``N`` or ``SEGMENT:N``.

Without geo-replication none of this runs: the callers check ``runtime.geo``.
"""
from __future__ import annotations

import logging
import struct
from typing import TYPE_CHECKING

from kafka_wire.amqp.frames import rewrite_performative
from kafka_wire.eventhubs import geo_offsets as go

if TYPE_CHECKING:
    from kafka_wire.amqp.connection import AmqpConnection

log = logging.getLogger(__name__)

CAPABILITY = "com.microsoft:georeplication"
INVALID_OFFSET = go.INVALID_OFFSET
_SIZE = struct.Struct(">I")


class InvalidOffset(Exception):
    """A starting position refused with :data:`INVALID_OFFSET`; str() is the description."""


# -- replication history --------------------------------------------------------------
def segment(runtime) -> int:
    """The namespace's current replication segment."""
    return int(runtime.geo.segment)


def history(runtime, hub: str, partition: int) -> list[tuple[int, int]]:
    """(segment, first sequence number) of each replication segment of a
    partition in this replica's history, oldest first (at least one entry)."""
    starts = runtime.geo.segment_starts(hub, partition)
    return [(int(s), int(f)) for s, f in starts] or [(segment(runtime), 0)]


def offset_of(starts: list[tuple[int, int]], sequence: int) -> str:
    """The geo offset of the event with ``sequence``."""
    last_segment, last_first = starts[-1]
    if sequence >= last_first:
        return go.format_offset(last_segment, sequence)
    return go.format_offset(go.segment_of(starts, sequence), sequence)


# -- starting positions ----------------------------------------------------------------
def start_offset(runtime, hub: str, partition: int, plog, selector: str | None) -> int:
    """:func:`kafka_wire.amqp.consume.start_offset` on a geo-replicated namespace:
    the Kafka offset a selector starts at; raises ``consume.FilterError`` for a
    selector that is not one, :class:`InvalidOffset` for an offset this
    replica cannot place."""
    from kafka_wire.amqp.consume import _SELECTOR, FilterError
    from kafka_wire.amqp.consume import start_offset as plain_start

    m = _SELECTOR.match(selector) if selector is not None else None
    if m is None:
        return plain_start(plog, selector)
    what, op, value = m.group(1).lower(), m.group(2), m.group(3)
    if what == "enqueued-time" or (what == "offset" and value in ("-1", "@latest")):
        return plain_start(plog, selector)
    try:
        wanted = go.parse_sequence(value) if what == "sequence-number" else go.parse_offset(value)
    except go.OffsetSyntaxError as exc:
        if what == "offset" and go.is_legacy(value):
            raise InvalidOffset(go.refusal(value, "a geo-replicated namespace takes offsets in "
                                                  "the form SEGMENT:POSITION that it hands out; "
                                                  "position by sequence number instead")) from None
        raise FilterError(str(exc)) from None
    start, end = plog.log_start_offset, plog.log_end_offset
    try:
        position = go.check(history(runtime, hub, partition), wanted, end)
    except go.StaleOffset as exc:
        raise InvalidOffset(go.refusal(value, str(exc))) from None
    return min(max(position if op == ">=" else position + 1, start), end)


# -- offered capabilities ----------------------------------------------------------------
def offer(conn: AmqpConnection, link) -> None:
    """Answer the capability in ``link``'s attach if the peer desired it."""
    if CAPABILITY not in conn.desired_capabilities(link.name):
        return
    padder = conn.padder
    if not isinstance(padder, OfferingPadder):
        padder = conn.padder = OfferingPadder(conn, padder)
    padder.pending.add(link.name)


class OfferingPadder:
    """Wraps the connection's :class:`~kafka_wire.amqp.frames.FramePadder` while
    attaches that offer the capability are on their way out; puts the wrapped one
    back once they are written, so the connection's other frames cost nothing."""

    # An attach not seen within this many writes was written before it was registered
    # (or never will be): stop looking rather than scan every frame for ever.
    PATIENCE = 64

    def __init__(self, conn, inner) -> None:
        self.conn, self.inner = conn, inner
        self.pending: set[str] = set()
        self.writes = 0

    def feed(self, data) -> bytes:
        return self._offered(self.inner.feed(data))

    def feed_parts(self, data) -> list:
        parts = self.inner.feed_parts(data)
        if not self.pending or not parts:
            return parts
        return [self._offered(b"".join(parts))]

    def __getattr__(self, name):  # anything else the padder does, it does itself
        return getattr(self.inner, name)

    def _offered(self, out: bytes) -> bytes:
        if self.pending and out:
            out = self._rewrite(out)
            self.writes += 1
            if self.pending and self.writes > self.PATIENCE:
                log.warning("AMQP connection from %s: no attach of %s went out to offer %s on",
                            getattr(self.conn, "peer", "?"), sorted(self.pending), CAPABILITY)
                self.pending.clear()
        if not self.pending and self.conn.padder is self:
            self.conn.padder = self.inner
        return out

    def _rewrite(self, buf: bytes) -> bytes:
        # The padder returns the protocol header (once) and whole frames.
        parts, pos, end = [], 0, len(buf)
        if end >= 8 and buf[:4] == b"AMQP":
            pos = 8
        start = 0
        while end - pos >= 8:
            size = _SIZE.unpack_from(buf, pos)[0]
            if size < 8 or end - pos < size:
                break
            doff = buf[pos + 4] * 4
            body = pos + doff
            if (buf[pos + 5] == 0 and size > doff + 3 and buf[body] == 0 and buf[body + 1] == 0x53
                    and buf[body + 2] == 0x12):
                frame = _with_offer(buf[pos:pos + size], doff, self.pending)
                if frame is not None:
                    parts += [buf[start:pos], frame]
                    start = pos + size
            pos += size
        if not parts:
            return buf
        parts.append(buf[start:])
        return b"".join(parts)


def _with_offer(frame: bytes, doff: int, pending: set[str]) -> bytes | None:
    """An attach frame with ``com.microsoft:georeplication`` among its offered
    capabilities (field 11), if its link is pending; None to leave it."""
    from proton import UNDESCRIBED, Array, Data, symbol

    def offered(fields: list) -> list | None:
        name = str(fields[0]) if fields and fields[0] is not None else None
        if name not in pending:
            return None
        pending.discard(name)
        fields += [None] * (14 - len(fields))
        offered = fields[11]
        have = [] if offered is None else list(getattr(offered, "elements", None) or
                                                (offered if isinstance(offered, (list, tuple)) else [offered]))
        fields[11] = Array(UNDESCRIBED, Data.SYMBOL, *[symbol(str(s)) for s in have], symbol(CAPABILITY))
        return fields

    return rewrite_performative(frame, doff, offered)


# -- management ----------------------------------------------------------------------
def replication_factor(runtime) -> int:
    """``georeplication_factor`` of an event hub's properties: the number of
    replicas (the SDKs read > 1 as geo-replication enabled)."""
    geo = getattr(runtime, "geo", None)
    if geo is None:
        return 1
    return len(geo.replicas)
