"""Links that send events: to ``HUB`` (round robin, or by partition key with
Event Hubs' hash), ``HUB/Partitions/ID``, or ``HUB/Publishers/NAME`` (each event
keyed with the publisher's name, which an event's own key must equal, and stamped
``x-opt-publisher``).

Each transfer is one RecordBatch: a message of format 0 is one event, whatever its
body holds (a bridge may forward encoded AMQP messages as bodies); one of the batch
format 0x80013700 (what the SDKs' ``send_batch`` sends) is the events its data
sections encode, and refused (``amqp:decode-error``) if they do not; any other
format is refused (``amqp:not-implemented``). The format is the transfer's, read by
:class:`~kafka_wire.amqp.input_frames.InputFrames`. The RecordBatch is appended to
the partition's log after the namespace's policy admits it (the Send right, the
tier's rules, a publisher's key, the throughput units shared with Kafka traffic).
It is settled ``accepted`` once the append returned, which is when a Kafka
``acks=all`` produce is answered; a throttled publication is settled after the
throttle time, as the service holds a throttled send.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from proton import Condition, Delivery

from kafka_wire.amqp.connection import (DECODE_ERROR, NOT_ALLOWED, NOT_FOUND, RESOURCE_LIMIT,
                                        SERVER_BUSY, UNAUTHORIZED, LinkHandler, condition_for, refuse)
from kafka_wire.amqp.messages import (BATCH_FORMAT, MessageError, batch_messages, decode_message,
                                      plain_batch)
from kafka_wire.amqp.nodes import hub_for, open_link, received_view
from kafka_wire.eventhubs.refusals import Denial
from kafka_wire.eventhubs.rights import SEND
from kafka_wire.eventhubs.publication import choose_partition, publish

if TYPE_CHECKING:
    from kafka_wire.amqp.addresses import Address
    from kafka_wire.amqp.connection import AmqpConnection

CREDIT = 500
_SEND_FAULTS = ("server-busy", "quota-exceeded", "detach-sender", "connection-forced",
                "delay-disposition", "withhold-flow")
NOT_IMPLEMENTED = "amqp:not-implemented"
SEND_TIMEOUT_MS = 60_000  # the SDKs' default operation timeout: a longer throttle is refused


def attach(conn: AmqpConnection, link, address: Address) -> LinkHandler | None:
    view = hub_for(conn, link, address)
    if view is None:
        return None
    principal, why = conn.principal_for(view.name, SEND)
    if why is not None:
        refuse(link, UNAUTHORIZED, why)
        return None
    publisher = address.publisher
    if principal is not None and principal.publisher is not None:
        # A publisher's name in the address is matched without regard to case, as entity
        # paths are; its events are keyed (and stamped) with the name the token was issued
        # for, so one publisher's events share a partition however a client spells the
        # address. (Without a publisher's token, the address's name is the publisher.)
        if (publisher or "").lower() != principal.publisher.lower():
            refuse(link, UNAUTHORIZED, f"a token for publisher {principal.publisher!r} may only "
                                       f"send to {view.name}/Publishers/{principal.publisher}")
            return None
        publisher = principal.publisher
    return PublishLink(conn, link, view.name, address, principal, publisher)


class PublishLink(LinkHandler):
    def __init__(self, conn: AmqpConnection, link, hub: str, address: Address, principal,
                 publisher: str | None = None) -> None:
        self.conn, self.link, self.hub, self.principal = conn, link, hub, principal
        self.partition = address.partition
        self.publisher = publisher  # (events through a publisher: the general path below)
        # Advertised on the attach (the SDKs size their batches by it) and enforced by the
        # connection as the frames of a message arrive.
        self.max_message_bytes = conn.namespace.policy.max_publication_bytes()
        self.closed = False
        self.withheld = False  # an injected withhold-flow: no credit renewed until it ends
        open_link(link)
        link.max_message_size = self.max_message_bytes
        link.flow(CREDIT)
        conn.watch_token(self, link, hub, SEND)

    def on_close(self) -> None:
        self.closed = True

    def on_delivery(self, delivery) -> None:
        raw = received_view(self.link, delivery)
        if raw is None:
            return
        link = self.link
        if link.credit < CREDIT // 2 and not self.withheld:
            link.flow(CREDIT - link.credit)
        if delivery.settled and delivery.remote_state == Delivery.REJECTED:
            return
        condition = self._publish(raw, delivery)
        if condition is not None:
            delivery.local.condition = condition
            delivery.update(Delivery.REJECTED)
            delivery.settle()

    def _publish(self, raw: memoryview, delivery) -> Condition | None:
        """Append the transfer (a view of a buffer reused for the next one: nothing of
        it is kept past the append); None when done (settled here or after a throttle)."""
        conn = self.conn
        runtime = conn.namespace
        message_format = delivery.kw_format  # (set when the delivery was first seen)
        if message_format != BATCH_FORMAT and message_format != 0:
            return Condition(NOT_IMPLEMENTED, f"message format {message_format:#x} is not taken: "
                                              f"send 0 (one event) or {BATCH_FORMAT:#x} (a batch)")
        # Nearly every transfer is a batch of events that are a body and at most a
        # partition key: read in one pass. Any other goes through the general decoder.
        batch = message_format == BATCH_FORMAT
        messages = plain_batch(raw) if batch and self.publisher is None else None
        if messages is not None:
            key = messages.key
        else:
            try:
                outer = decode_message(raw)
            except MessageError as exc:
                return Condition(DECODE_ERROR, str(exc))
            if batch:
                messages = batch_messages(outer, batch_format=True)
                if messages is None:
                    return Condition(DECODE_ERROR, f"a message of the batch format ({BATCH_FORMAT:#x}) "
                                                   "must hold data sections that each encode one "
                                                   "message: send another format for one event")
            else:
                messages = [outer]
            if not messages:
                return Condition(NOT_ALLOWED, "an empty batch")
            if self.publisher is not None:
                messages = runtime.policy.publisher_events(self.publisher, messages)
                if isinstance(messages, Denial):
                    return condition_for(messages)
            key = messages[0].partition_key
        view = runtime.topics.get(self.hub)
        if view is None:
            return Condition(NOT_FOUND, f"event hub {self.hub!r} was deleted")
        partition = choose_partition(self.partition, key, view.partitions,
                                     lambda: runtime.next_partition(self.hub, view.partitions))
        plan = conn.fault_plan
        if plan is not None and plan.active:
            fault = plan.fire(_SEND_FAULTS, {"namespace": runtime.name, "hub": self.hub,
                                             "partition": partition, "client": conn.container,
                                             "link": self.link.name, "protocol": "amqp"})
            if fault is not None and fault.kind not in ("delay-disposition", "withhold-flow"):
                return self._injected(fault)
        else:
            fault = None
        done = publish(conn.services, runtime, self.principal, self.hub, partition, messages,
                       len(raw), SEND_TIMEOUT_MS, conn.container, "amqp")
        if done.denial is not None:
            return condition_for(done.denial)
        conn.server.count_in(len(raw), len(messages))
        held_ms = done.throttle_ms
        if fault is not None:  # stored; the disposition (or the next credit) is held
            held_ms += self._withhold(fault)
        if held_ms > 0:
            conn.services.clock.call_later(held_ms, lambda: self._accept(delivery))
        else:
            self._accept(delivery)
        return None

    def _injected(self, fault) -> Condition | None:
        """An injected fault instead of the append (kafka_wire.fault_plan)."""
        params = fault.params
        if fault.kind == "server-busy":
            return Condition(SERVER_BUSY, params["description"])
        if fault.kind == "quota-exceeded":
            return Condition(RESOURCE_LIMIT, params["description"])
        if fault.kind == "detach-sender":
            self.detach(params["condition"], params["description"])
        else:  # connection-forced
            self.conn.forced(params["description"])
        return None

    def _withhold(self, fault) -> int:
        """An injected delay-disposition (its ms, to hold this send's settlement) or
        withhold-flow (the link's credit taken back, none given for its ms: the client's
        next sends wait)."""
        if fault.kind == "delay-disposition":
            return fault.params["ms"]
        self.withheld = True
        link = self.link
        if link.credit > 0:
            link.flow(-link.credit)  # a receiver may take back the credit it gave (2.6.7)
        self.conn.services.clock.call_later(fault.params["ms"], self._release)
        return 0

    def _release(self) -> None:
        self.withheld = False
        if not self.closed and self.conn.engine is not None:
            self.link.flow(CREDIT - self.link.credit)
            self.conn.pump()

    def _accept(self, delivery) -> None:
        if self.closed or self.conn.engine is None:
            return
        delivery.update(Delivery.ACCEPTED)
        delivery.settle()
        self.conn.pump()
