"""Links that receive events: ``HUB/ConsumerGroups/GROUP/Partitions/ID``.

Where to start comes from the source's selector filter, as the SDKs write it:
``amqp.annotation.x-opt-offset``, ``-sequence-number`` or ``-enqueued-time``
with ``>`` or ``>=`` and a quoted value (``-1``: the start of the partition,
``@latest``: its end). Events go out as the client grants credit; with none
left, or with the partition read to its end, the link waits (for credit, or
for the next append). An owner level (``com.microsoft:epoch``) takes the
partition from receivers with a lower or equal one, which are detached with
``amqp:link:stolen``; without owner levels a partition takes at most five
receivers per consumer group, as the service allows. Reads are charged to
the namespace's egress quota, shared with Kafka fetches.
"""
from __future__ import annotations

import logging
import re
from array import array
from bisect import bisect_right
from collections import deque
from itertools import accumulate, chain, repeat
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from cproton import ffi as _ffi
from cproton import lib as _pn
from proton import Delivery, Link, symbol

from kafka_wire.amqp.connection import (DETACH_FORCED, ENTITY_DISABLED, INTERNAL, INVALID_FIELD, NOT_FOUND,
                                       SEND_BUDGET, TRANSFER_BYTES, UNAUTHORIZED, LinkHandler, refuse)
from kafka_wire.amqp import georeplication
from kafka_wire.amqp.management import last_event
from kafka_wire.amqp.messages import runtime_metric_annotations
from kafka_wire.amqp.frames import run_tags_blob
from kafka_wire.amqp.outgoing import batch_events
from kafka_wire.amqp.nodes import entity_not_found, hub_for, open_link
from kafka_wire.eventhubs import geo_offsets
from kafka_wire.eventhubs.rights import LISTEN
from kafka_wire.eventhubs.model import DEFAULT_CONSUMER_GROUP
from kafka_wire.log import batch as rb
from kafka_wire.log import errors as log_errors
from kafka_wire.log.read_committed import CommittedFilter
from kafka_wire.log_lines import RepeatedWarnings, client_address, shortened

if TYPE_CHECKING:
    from kafka_wire.amqp.addresses import Address
    from kafka_wire.amqp.connection import AmqpConnection

log = logging.getLogger(__name__)
_repeats = RepeatedWarnings(log)

SELECTOR_FILTER = "apache.org:selector-filter:string"
EPOCH = "com.microsoft:epoch"
RUNTIME_METRIC = "com.microsoft:enable-receiver-runtime-metric"
LINK_STOLEN = "amqp:link:stolen"
RESOURCE_LIMIT = "amqp:resource-limit-exceeded"
READ_BYTES = 1024 * 1024
HIDDEN_READS = 8  # reads a turn may make that find nothing to send (all hidden)
_SELECTOR = re.compile(r"^\s*amqp\.annotation\.x-opt-(offset|sequence-number|enqueued-time)\s*"
                       r"(>=|>)\s*'([^']*)'\s*$", re.IGNORECASE)


# Batches of a partition log whose records cannot be read (they do not decompress, a
# decompression bomb included, or do not parse: Produce refuses such compressed batches, but
# an older broker stored some, and uncompressed ones are stored as sent). The first receiver
# to meet one is detached with amqp:internal-error naming it; every read after that (the
# SDK's re-attach included) goes on past it, so one bad batch does not stop the partition's
# receivers for good. Forgotten with the log (a hub deleted and made again starts afresh).
_UNREADABLE: WeakKeyDictionary = WeakKeyDictionary()  # PartitionLog -> {base offset}
UNREADABLE_PER_LOG = 1024  # past it, a further bad batch detaches each receiver that meets it


# A selector's number: ASCII digits (str.isdigit() takes '²', which int() refuses), one
# sign, and few enough for int() (it refuses over 4,300 digits); a long has 19.
_NUMBER = re.compile(r"-?[0-9]{1,30}\Z")


class FilterError(ValueError):
    """A selector the service would not take; the text is for the client."""


class PastTheEnd(Exception):
    """A starting offset or sequence number past the partition's last event: the service
    refuses it with :data:`ARGUMENT_ERROR` (which the SDKs do not retry) in these words."""


ARGUMENT_ERROR = "com.microsoft:argument-error"


def attach(conn: AmqpConnection, link, address: Address) -> LinkHandler | None:
    runtime = conn.namespace
    view = hub_for(conn, link, address)
    if view is None:
        return None
    group = _consumer_group(runtime, view.name, address.consumer_group)
    if group is None:
        refuse(link, NOT_FOUND, entity_not_found(
            runtime.name, f"{view.name}/ConsumerGroups/{address.consumer_group}",
            f"consumer group {address.consumer_group!r} does not exist on event hub {view.name!r}"))
        return None
    principal, why = conn.principal_for(view.name, LISTEN)
    if why is not None:
        refuse(link, UNAUTHORIZED, why)
        return None
    why = runtime.policy.disabled(view.name, principal)
    if why is not None:
        refuse(link, ENTITY_DISABLED, why)
        return None
    plog = runtime.topics.log(view.name, address.partition)
    try:
        selector = _selector(link)
        start = (start_offset(plog, selector) if runtime.geo is None else
                 georeplication.start_offset(runtime, view.name, address.partition, plog, selector))
    except FilterError as exc:  # (cut: a geo-replicated namespace's words may quote a huge value)
        refuse(link, INVALID_FIELD, shortened(str(exc), 1000))
        return None
    except georeplication.InvalidOffset as exc:  # legacy or stale offset: the SDKs' recovery path
        refuse(link, georeplication.INVALID_OFFSET, str(exc))
        return None
    except PastTheEnd as exc:
        refuse(link, ARGUMENT_ERROR, str(exc))
        return None
    try:
        epoch = owner_level(link.remote_properties)
    except FilterError as exc:
        refuse(link, INVALID_FIELD, str(exc))
        return None
    key = (runtime.name, view.name.lower(), group.lower(), address.partition)
    problem = _admit(conn.server.readers.get(key, set()), epoch, key,
                     conn.namespace.policy.readers_per_partition())
    if problem is not None:
        refuse(link, *problem)
        return None
    handler = ConsumeLink(conn, link, view.name, address.partition, start, epoch, key, principal)
    # After _admit: a receiver it displaced removed an emptied set from the registry.
    conn.server.add_reader(key, handler)
    return handler


def owner_level(properties) -> int | None:
    """The attach's owner level (``com.microsoft:epoch``, a long as the SDKs send it), or
    None; raises :class:`FilterError` for one of another type ("7", 1.5, true, a list)
    or past a long's range."""
    if not isinstance(properties, dict):
        return None
    epoch = properties.get(symbol(EPOCH), properties.get(EPOCH))
    if epoch is None:
        return None
    if not isinstance(epoch, int) or isinstance(epoch, bool) or not -(1 << 63) <= epoch < 1 << 63:
        raise FilterError(f"the owner level ({EPOCH}) must be a long, not {shortened(repr(epoch))}")
    return int(epoch)



def _consumer_group(runtime, hub: str, wanted: str) -> str | None:
    configured = runtime.model.hub(hub) if runtime.model is not None else None
    groups = configured.all_consumer_groups() if configured is not None else [DEFAULT_CONSUMER_GROUP]
    for g in groups:
        if g.lower() == wanted.lower():
            return g
    return None


def _admit(readers: set, epoch: int | None, key, most: int) -> tuple[str, str] | None:
    """Owner levels: an equal or higher one takes the partition (the service
    disconnects the older receiver of two with the same level, so a processor
    that takes over a partition at level 0 ends the one that held it); a lower
    one, or none against one, is refused; without them at most ``most`` readers."""
    where = f"partition {key[3]} of {key[1]} in consumer group {key[2]}"
    levels = [r.epoch for r in readers if r.epoch is not None]
    if epoch is None:
        if levels:
            return (LINK_STOLEN, f"a receiver with owner level {max(levels)} holds {where}; "
                                 "a receiver without an owner level cannot join it")
        if len(readers) >= most:
            return (RESOURCE_LIMIT, f"Exceeded the maximum number of allowed receivers per "
                                    f"partition in a consumer group which is {most}: {where} has "
                                    f"{len(readers)} receivers without an owner level")
        return None
    if levels and max(levels) > epoch:
        return (LINK_STOLEN, f"a receiver with the higher owner level {max(levels)} holds {where}; "
                             f"owner level {epoch} cannot take it")
    for other in list(readers):
        if other.epoch is None or other.epoch <= epoch:
            other.detach(LINK_STOLEN, f"a receiver with owner level {epoch} took {where}"
                         + (f" from owner level {other.epoch}" if other.epoch is not None else ""))
    return None


def _selector(link) -> str | None:
    data = link.remote_source.filter
    data.rewind()
    source_filter = data.get_object() if data.next() is not None else None
    if not isinstance(source_filter, dict):
        return None
    for name, value in source_filter.items():
        if str(name) == SELECTOR_FILTER or getattr(value, "descriptor", None) == symbol(SELECTOR_FILTER):
            return str(getattr(value, "value", value))
    return None


def start_offset(plog, selector: str | None) -> int:
    """The Kafka offset a selector starts at (no selector: the start of the retained
    stream, as the service starts a receiver without one). Raises :class:`FilterError`
    for a selector that is not one, :class:`PastTheEnd` for an offset or sequence number
    past the last event (a time past it starts at the end, as the service does)."""
    if selector is None:
        return plog.log_start_offset
    m = _SELECTOR.match(selector)
    if m is None:
        raise FilterError(f"selector {shortened(repr(selector))} is not one Event Hubs takes: "
                          "amqp.annotation.x-opt-offset|sequence-number|enqueued-time > or >= 'VALUE'")
    what, op, value = m.group(1).lower(), m.group(2), m.group(3)
    inclusive = op == ">="
    start, end = plog.log_start_offset, plog.log_end_offset
    if what == "offset":
        if value == "-1":
            return start
        if value == "@latest":
            return end
        if not _NUMBER.match(value):
            raise FilterError(f"offset {shortened(repr(value))} is not a number, -1 or @latest")
        wanted = int(value)
        if wanted > plog.last_event_offset_ever():
            _, where = last_event(plog)
            raise PastTheEnd(f"The supplied offset '{wanted}' is invalid. The last offset in "
                             f"the system is '{where[0] if where is not None else -1}'")
        found = plog.offset_at_event_offset(wanted if inclusive else wanted + 1)
        return min(max(found, start), end)
    if what == "sequence-number" and ":" in value:  # Java writes SEGMENT:N ('-1:N' without one)
        try:
            value = str(geo_offsets.parse_sequence(value).position)
        except geo_offsets.OffsetSyntaxError as exc:
            raise FilterError(str(exc)) from None
    if not _NUMBER.match(value):
        raise FilterError(f"{what} {shortened(repr(value))} is not a number")
    number = int(value)
    if what == "sequence-number":
        wanted = number if inclusive else number + 1
        if wanted > end:  # (the next event's, end, may be asked for: a receiver waits for it)
            raise PastTheEnd(f"The supplied sequence number '{number}' is invalid. The last "
                             f"sequence number in the system is '{last_event(plog)[0]}'")
        return min(max(wanted, start), end)
    return min(max(plog.offset_for_append_time(number, inclusive), start), end)


_ACCEPTED = int(Delivery.ACCEPTED)
# A receiver streaming a backlog settles what it sent at least this often (see settle_sent)
SETTLE_EVERY = 65536           # deliveries
SETTLE_EVERY_BYTES = 64 << 20  # bytes of events
_RECEIVE_FAULTS = ("detach-receiver", "link-stolen", "connection-forced", "withhold-flow")


# pn_delivery's tag, a pn_bytes_t {size_t size; const char *start}, as two 64-bit words
_TAGS_PACKABLE = _ffi.sizeof("pn_bytes_t") == 16 and _ffi.sizeof("size_t") == _ffi.sizeof("char *") == 8


def _tag_structs(names: list[bytes]) -> tuple:
    """``names`` as pn_delivery's tag arguments, and what must live while it is called
    with them. Tags of one length (a flow's, but when the numbers gain a digit) are one
    buffer and an array of pn_bytes_t pointing into it, both made in C loops: cffi
    converting a (size, pointer) tuple per delivery was a third of the call."""
    size = len(names[0])
    if not _TAGS_PACKABLE or len(names[-1]) != size:  # (consecutive numbers from 1: first and last tell)
        return [(len(tag), _ffi.from_buffer(tag)) for tag in names], None
    n = len(names)
    blob = b"".join(names)  # (pn_delivery copies its tag: needed only during the calls)
    base = int(_ffi.cast("uintptr_t", _ffi.from_buffer(blob)))
    words = array("Q", chain.from_iterable(zip(repeat(size, n), range(base, base + n * size, size))))
    return _ffi.from_buffer("pn_bytes_t[]", words), blob


class RunTagSlots:
    """A connection's buffer for a run's tags and the pn_bytes_t array pointing into it,
    made once (grown when a flow is larger) and filled per flow with one copy:
    pn_delivery copies its tag, so the next flow may write over them. Building the
    array per flow cost more than the pn_delivery calls it feeds."""

    def __init__(self) -> None:
        self.size = 0
        self.text = self.words = self.structs = None

    def tags(self, first: int, n: int):
        """``run_tag(first)`` .. ``run_tag(first + n - 1)`` as pn_delivery's arguments."""
        if n > self.size:
            size = max(n, 2 * self.size, 256)
            self.text = _ffi.new("char[]", 16 * size)
            if _TAGS_PACKABLE:
                base = int(_ffi.cast("uintptr_t", self.text))
                self.words = array("Q", chain.from_iterable(zip(repeat(16, size), range(base, base + 16 * size, 16))))
                self.structs = _ffi.from_buffer("pn_bytes_t[]", self.words)
            else:
                self.structs = _ffi.new("pn_bytes_t[]", size)
                for i in range(size):
                    self.structs[i].size, self.structs[i].start = 16, self.text + 16 * i
            self.size = size
        _ffi.memmove(self.text, run_tags_blob(first, n), 16 * n)
        return self.structs[0:n]


def _tag_number(tag: bytes) -> int:
    """The number of a receiver's delivery tag: ``e`` and digits, or a run's hex digits."""
    return int(tag[1:]) if tag[:1] in (b"e", "e") else int(tag, 16)


class ConsumeLink(LinkHandler):
    def __init__(self, conn: AmqpConnection, link, hub: str, partition: int, start: int,
                 epoch: int | None, key, principal=None) -> None:
        self.conn, self.link, self.hub, self.partition = conn, link, hub, partition
        self.principal = principal
        self.next_offset = start
        self.epoch = epoch
        self.key = key
        self.closed = False
        self._waiting = None
        self._backlog: list[bytes] = []   # encoded events read but not yet sent (credit ran out)
        # Deliveries sent unsettled, in order, until we settle them (see settle_sent): raw
        # pointers, valid while the link is (dropped in on_close); the first one's tag number.
        self._sent: list = []
        self._sent_tags: list[int] = []  # their tags' numbers
        self._sent_bytes = 0
        self._carried: set[int] = set()  # tag numbers of those sent through proton (not spliced)
        self._withheld = False  # an injected withhold-flow holds the events until it ends
        self.runtime_metric = RUNTIME_METRIC in conn.desired_capabilities(link.name)
        open_link(link)
        if self.epoch is not None:
            link.properties = {symbol(EPOCH): self.epoch}
        conn.watch_token(self, link, hub, LISTEN)

    # -- lifecycle ----------------------------------------------------------------------
    def on_close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._sent = []
        self._sent_tags = []
        self._sent_bytes = 0
        self._carried = set()
        self.conn.settling.discard(self)
        self.conn.forget_payloads(self)
        self._stop_waiting()
        self.conn.server.remove_reader(self.key, self)

    def _stop_waiting(self) -> None:
        if self._waiting is not None:
            fut, self._waiting = self._waiting, None
            topics = self.conn.namespace.topics if self.conn.namespace else None
            if topics is not None:
                topics.forget_waiter(fut, [(self.hub, self.partition)])
            fut.cancel()

    # -- sending ------------------------------------------------------------------------
    def on_flow(self) -> None:
        if self.closed or self._withheld:
            return
        link = self.link
        conn = self.conn
        # Proton's C calls directly: its Python Delivery wrapper, built per event,
        # was a third of the receive path's time (and cproton's wrappers of these
        # calls convert their arguments at a Python call's cost each).
        impl = link._impl
        settled = link.snd_settle_mode == Link.SND_SETTLED
        sent, sent_tags = self._sent, self._sent_tags
        credit, new_delivery, send, advance = (_pn.pn_link_credit, _pn.pn_delivery, _pn.pn_link_send,
                                               _pn.pn_link_advance)
        # Proton gets each delivery empty and the padder puts the event in its transfer
        # frame (frames.FramePadder): proton copied each event twice, a quarter of this
        # path. One that does not fit in a frame the client takes goes through proton.
        padder = conn.padder
        payloads = padder.payloads
        most = conn.largest_spliced()
        while credit(impl) > 0 and conn.writable and not self.closed:
            if not self._backlog and not self._read():
                # Nothing to send now (read to the end, or held by the egress quota): a drain
                # (a flow with drain=true, AMQP 1.0 2.6.7) has its credit handed back at once,
                # in a flow proton writes after the transfers. Once per read that finds nothing.
                if _pn.pn_link_get_drain(impl) and not self.closed:
                    _pn.pn_link_drained(impl)
                break
            plan = conn.fault_plan
            if plan is not None and plan.active and self._injected(plan):
                return
            # as many as the credit allows, in order (the backlog is popped from its end)
            backlog = self._backlog
            cut = len(backlog) - min(len(backlog), credit(impl))
            events = backlog[cut:]
            del backlog[cut:]
            events.reverse()
            n = len(events)
            nbytes = sum(map(len, events))
            # At most the connection's budget in a turn (SEND_BUDGET): the rest stays in the
            # backlog for the next turn, which the connection starts once this one is written
            size = nbytes + TRANSFER_BYTES * n
            room = SEND_BUDGET - conn.queued
            if size <= room:
                conn.queued += size
            else:
                events, nbytes = self._cut(events, room)
                n = len(events)
                conn.queued = SEND_BUDGET  # (this turn is over)
            first = conn.tags
            conn.tags = first + n
            numbers = range(first + 1, first + n + 1)
            carried = max(map(len, events)) > most
            # Every delivery made first, then each advanced in turn (proton's current delivery
            # is the first not yet advanced, the one pn_link_send writes to): the per-event
            # cffi calls run in map's C loop, not a Python loop's.
            if not carried:  # one run for the padder, tagged by number (frames.run_tag)
                if conn.run_tags is None:
                    conn.run_tags = RunTagSlots()
                tag_structs, held = conn.run_tags.tags(first + 1, n), None
            else:  # (not bare numbers: other nodes' replies use those)
                names = [b"e%d" % t for t in numbers]
                tag_structs, held = _tag_structs(names)  # (held: alive until the calls are done)
            deliveries = list(map(new_delivery, repeat(impl, n), tag_structs))
            del tag_structs, held
            if not carried:
                # Settled here (after advancing) even when the client asked for unsettled
                # transfers: proton forgets each delivery once its transfer is out, with no
                # settling pass later and no disposition of its own; the padder writes the
                # transfers unsettled and settle_sent writes their disposition.
                padder.add_run(self, first + 1, events, not settled)
                deque(map(advance, repeat(impl, n)), 0)
            else:
                for tag, number, event in zip(names, numbers, events):
                    if len(event) <= most:
                        payloads[tag] = (event, self, number)
                    else:
                        payloads[tag] = (None, self, number)  # (recorded written all the same)
                        if not settled:
                            self._carried.add(number)
                        send(impl, event, len(event))
                    advance(impl)
            if settled or not carried:
                deque(map(_pn.pn_delivery_settle, deliveries), 0)
            if not settled:
                if carried:
                    sent += deliveries
                    sent_tags.extend(numbers)
                self._sent_bytes += nbytes
        if not settled:  # (a link sending settled holds nothing to settle)
            held = len(sent) + padder.unsettled_count(self)
            if held and (self._waiting is not None or held >= SETTLE_EVERY
                         or self._sent_bytes >= SETTLE_EVERY_BYTES):
                conn.settling.add(self)  # settled in the connection's flush, once written

    def _cut(self, events: list, room: int) -> tuple[list, int]:
        """The first of ``events`` that fit in ``room`` bytes as on_flow counts them (at least
        one), and their own bytes; the others go back to the backlog, to be sent first.
        Once a turn at most: a Python loop over the events is no matter here."""
        ends = list(accumulate(len(event) + TRANSFER_BYTES for event in events))
        k = max(bisect_right(ends, room), 1)
        rest = events[k:]
        rest.reverse()
        self._backlog += rest
        return events[:k], ends[k - 1] - TRANSFER_BYTES * k

    def settle_sent(self) -> bool:
        """Settle, on our side, the deliveries whose transfer proton has written (the
        connection calls this after each ``pending`` while the link is in its
        ``settling``); True when it settled any in proton (which then writes a disposition).

        The SDKs attach in receive-settle-mode first and the Python SDK (pyamqp) never
        sends a disposition for what it receives, so a delivery left unsettled stays in
        proton with its buffer: about 3 KB of the broker's memory per 1 KiB event, for
        as long as the link lives. Settling frees it to proton's pool, but proton then
        tells the client in a disposition frame, and pyamqp reads frames in batches of
        its prefetch count and grants credit only when its credit is used up: one frame
        more than the transfers of a credit window leaves it waiting on its socket
        timeout (0.2 s) before its next flow. So a link settles when it has sent all it
        has (read to the partition's end, where the client waits anyway), or at least
        every :data:`SETTLE_EVERY` deliveries or :data:`SETTLE_EVERY_BYTES` (one such
        wait per that many). Never before the transfer is written: it would go out
        pre-settled, against the snd-settle-mode unsettled the client asked for.
        Settled as accepted: proton folds consecutive accepted settlements into one
        disposition (a range of ids), and writes one per delivery without an outcome.

        The deliveries of runs (all but a flow with an event too large for the padder) are
        settled in proton when made (on_flow) and their transfers written unsettled: for
        those the connection writes the same disposition frames proton would, from the
        delivery ids the padder saw (FramePadder.unsettled), at this same point."""
        padder = self.conn.padder
        ranges = padder.unsettled.pop(self, None)
        if ranges:
            self.conn.dispose(ranges)
        sent, tags = self._sent, self._sent_tags
        written = padder.written.get(self, 0)  # the last tag whose transfer is written
        # Proton writes a link's transfers in order: those up to the last written are out,
        # but for one proton carried itself (a large event), which may still be partly
        # in proton (its first frame, with the tag, written); it and those after wait.
        n = bisect_right(tags, written)
        carried = self._carried
        if carried and n:
            pending = _pn.pn_delivery_pending
            for i in range(n):
                if tags[i] in carried:
                    if pending(sent[i]):
                        n = i
                        break
                    carried.discard(tags[i])
        if n:
            done = sent[:n]
            # in map's C loop: two cffi calls per event, no Python loop around them
            deque(map(_pn.pn_delivery_update, done, repeat(_ACCEPTED, n)), 0)
            deque(map(_pn.pn_delivery_settle, done), 0)
            del sent[:n]
            del tags[:n]
        if not sent and not padder.unsettled_count(self):  # (its runs' transfers all written)
            self._sent_bytes = 0
            self.conn.settling.discard(self)
        return n > 0

    def _injected(self, plan) -> bool:
        """True when an injected fault ended the link (or its connection) instead of
        sending the events read (kafka_wire.fault_plan)."""
        key = self.key
        fault = plan.fire(_RECEIVE_FAULTS, {"namespace": key[0], "hub": self.hub,
                                            "partition": self.partition, "consumer_group": key[2],
                                            "client": self.conn.container, "link": self.link.name,
                                            "protocol": "amqp"})
        if fault is None:
            return False
        params = fault.params
        if fault.kind == "withhold-flow":  # the events read wait (on the broker's clock)
            self._withheld = True
            self.conn.services.clock.call_later(params["ms"], self._release)
            return True
        self._backlog = []
        if fault.kind == "connection-forced":
            self.conn.forced(params["description"])
        else:
            self.detach(params.get("condition", LINK_STOLEN), params["description"])
        return True

    def _release(self) -> None:
        self._withheld = False
        self._wake()

    def on_delivery(self, delivery) -> None:
        if delivery.updated:  # the client accepted (or released) an event: done with it
            if self._sent and _tag_number(delivery.tag) >= self._sent_tags[0]:
                return  # still in _sent: settle_sent settles it (settling it twice would not do)
            delivery.settle()

    def _read(self) -> bool:
        """Read the next events into the backlog; False (and wait) at the end."""
        runtime = self.conn.namespace
        plog = runtime.topics.log(self.hub, self.partition)
        if plog is None:
            _repeats.warn("amqp-deleted", client_address(self.conn.peer),
                          f"AMQP receiver of {self.hub}-{self.partition} from {self.conn.peer} "
                          f"detached: event hub {self.hub!r} was deleted")
            self.detach(NOT_FOUND, entity_not_found(runtime.name, self.hub,
                                                    f"event hub {self.hub!r} was deleted"))
            return False
        # Checked per read (a credit window, at most READ_BYTES), not only at the attach: a
        # hub made Disabled mid-read stops feeding its receivers, as the Kafka Fetch does.
        why = runtime.policy.disabled(self.hub, self.principal)
        if why is not None:
            _repeats.warn("amqp-disabled", client_address(self.conn.peer),
                          f"AMQP receiver of {self.hub}-{self.partition} from {self.conn.peer} "
                          f"detached: {why}")
            self.detach(ENTITY_DISABLED, why)
            return False
        delay = runtime.policy.egress_delay()
        if delay > 0:
            self.conn.services.clock.call_later(delay, self._wake)
            return False
        if self.next_offset > plog.log_end_offset and runtime.geo is not None:
            # A forced promotion cut the log back under this receiver: detach it (the SDK
            # re-attaches from its own position) rather than rewind to the start.
            self.detach(DETACH_FORCED, f"partition {self.partition} of {self.hub} now ends at "
                                       f"sequence number {plog.log_end_offset - 1}, before this "
                                       f"receiver's position {self.next_offset}: a forced "
                                       f"geo-replication promotion lost the events between")
            return False
        for _ in range(HIDDEN_READS):
            try:
                if self.next_offset < plog.log_start_offset:  # retention went past us: skip ahead
                    self.next_offset = plog.log_start_offset
                batches = plog.stored_batches(self.next_offset, READ_BYTES)
            except log_errors.OffsetOutOfRange:
                self.next_offset = plog.log_start_offset
                continue
            before = self.next_offset
            found = self._events(runtime, plog, batches)
            if found is None:  # (detached)
                return False
            if found:
                return True
            if (self.next_offset >= min(plog.log_end_offset, plog.last_stable_offset) or not batches
                    or self.next_offset == before):  # (nothing read: wait for the log to change)
                self._wait(plog)
                return False
        # Reads that found only markers and aborted transactions: the rest in a later turn of
        # the loop, so that a long run of them does not hold every other client.
        self.conn.services.clock.call_later(0, self._wake)
        return False

    def _events(self, runtime, plog, batches: list) -> bool | None:
        """Read ``batches`` (one read from ``next_offset``) into the backlog: True when
        it holds events, False when every batch was hidden, None when the receiver was
        detached (a batch that cannot be read)."""
        upper = plog.last_stable_offset
        first = self.next_offset
        committed = None  # made at the read's first transactional batch or marker: most meet none
        metric = self._metric(plog)
        # geo-replicated: offsets are SEGMENT:SEQUENCE (kafka_wire.amqp.georeplication)
        starts = None if runtime.geo is None else georeplication.history(runtime, self.hub,
                                                                         self.partition)
        offsets = None if starts is None else (lambda sequence: georeplication.offset_of(starts, sequence))
        where = (self.key[0], self.key[1], self.partition)
        shared = (self.conn.server.shared_events if not metric and offsets is None
                  and self.conn.server.partition_readers.get(where, 0) > 1 else None)
        events = []
        nbytes = 0
        for position, append_ms, data in batches:
            header = rb.parse_header(data, 0)
            if header.base_offset > self.next_offset:  # a gap compaction left: past it, as a fetch
                self.next_offset = header.base_offset
            if header.base_offset >= upper:
                break
            if header.attributes & (rb.CONTROL_BIT | rb.TRANSACTIONAL_BIT):
                if committed is None:  # (the read's end: one aborted-transaction search for all of it)
                    end = rb.parse_header(batches[-1][2], 0).last_offset + 1
                    committed = CommittedFilter(plog, first, min(upper, end))
                if committed.hidden(header):
                    self.next_offset = header.last_offset + 1
                    continue  # (not sent, so not charged as egress)
            nbytes += header.size
            skip = self.next_offset - header.base_offset
            amqp_headers = bool(header.attributes & rb.AMQP_HEADERS_BIT)
            try:
                if shared is not None and header.records_count == header.last_offset_delta + 1:
                    # (one record per offset delta from 0: the skip is an index)
                    cached = shared.events(
                        (where, header.base_offset, header.crc, position, append_ms), header.size,
                        lambda: batch_events(data, header, 0, position, append_ms, amqp_headers, b"", None))
                    events += cached[skip:] if skip > 0 else cached
                else:
                    events += batch_events(data, header, skip, position, append_ms, amqp_headers, metric,
                                           offsets)
            except log_errors.CorruptRecord as exc:  # records that do not decompress or parse
                known = _UNREADABLE.setdefault(plog, set())
                if header.base_offset in known:  # reported once: every reader goes on past it
                    nbytes -= header.size
                    self.next_offset = header.last_offset + 1
                    continue
                if len(known) < UNREADABLE_PER_LOG:
                    known.add(header.base_offset)
                log.error("AMQP receiver of %s-%d: the batch at offset %d cannot be read: %s; receivers "
                          "go on past it", self.hub, self.partition, header.base_offset, exc)
                self.detach(INTERNAL, f"the batch at sequence number {header.base_offset} cannot "
                                      f"be read: {exc}")
                return None
            except log_errors.LogError as exc:  # a codec that is not installed: the events are there
                log.error("AMQP receiver of %s-%d: the batch at offset %d cannot be read: %s",
                          self.hub, self.partition, header.base_offset, exc)
                self.detach(INTERNAL, f"the batch at sequence number {header.base_offset} cannot "
                                      f"be read: {exc}")
                return None
            self.next_offset = header.last_offset + 1
        if not events:
            return False
        events.reverse()  # popped from the end
        self._backlog = events
        runtime.policy.egress(nbytes, len(events), self.principal)
        self.conn.server.count_out(nbytes, len(events))
        observer = self.conn.services.observer
        if observer is not None:
            observer.on_events("amqp", runtime.name, self.hub, self.partition, False, len(events), nbytes)
        return True

    def _metric(self, plog) -> bytes:
        """Delivery annotations with the partition's last enqueued event, for
        receivers that asked for the runtime metric."""
        if not self.runtime_metric:
            return b""
        last, where = last_event(plog)  # (not log end - 1: that may be a transaction marker)
        offset = where[0] if where else -1
        runtime = self.conn.namespace
        if where and runtime.geo is not None:
            offset = georeplication.offset_of(georeplication.history(runtime, self.hub,
                                                                     self.partition), last)
        return runtime_metric_annotations(last, offset, where[1] if where else 0,
                                          self.conn.services.clock.now_ms())

    def _wait(self, plog) -> None:
        if self._waiting is not None:
            return
        topics = self.conn.namespace.topics
        self._waiting = topics.wait_for_data([(self.hub, self.partition)])
        self._waiting.add_done_callback(lambda fut: self._wake() if not fut.cancelled() else None)

    def _wake(self) -> None:
        self._waiting = None
        if self.closed or self.conn.engine is None:
            return
        self.on_flow()
        self.conn.pump()
