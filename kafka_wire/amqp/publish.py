"""Links that send events: to ``HUB`` (round robin, or by partition key with
Event Hubs' hash), ``HUB/Partitions/ID``, or ``HUB/Publishers/NAME``.

Each transfer (one message, or a batch-format message of many) is one
RecordBatch appended to the partition's log, after the namespace's policy
admits it (the Send right, the tier's rules, a publisher's key, the
throughput units shared with Kafka traffic). It is settled ``accepted`` once
the append returned, which is when a Kafka ``acks=all`` produce is answered;
a throttled publication is settled after the throttle time, as the service
holds a throttled send.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import kafka.errors as Errors
from proton import Condition, Delivery

from kafka_wire.amqp.connection import INTERNAL, NOT_ALLOWED, NOT_FOUND, UNAUTHORIZED, LinkHandler, refuse
from kafka_wire.amqp.messages import MessageError, batch_messages, decode_message, records_batch
from kafka_wire.amqp.nodes import hub_for, open_link, received
from kafka_wire.context import SEND
from kafka_wire.eventhubs.partition_key import partition_for_key
from kafka_wire.errors import for_log_error
from kafka_wire.log import errors as log_errors
from kafka_wire.log.batch import summarize, validate_records

if TYPE_CHECKING:
    from kafka_wire.amqp.addresses import Address
    from kafka_wire.amqp.connection import AmqpConnection

log = logging.getLogger(__name__)

CREDIT = 500
SEND_TIMEOUT_MS = 60_000  # the SDKs' default operation timeout: a longer throttle is refused
MESSAGE_SIZE_EXCEEDED = "amqp:link:message-size-exceeded"
SERVER_BUSY = "com.microsoft:server-busy"
_DENIED = {Errors.TopicAuthorizationFailedError.errno, Errors.ClusterAuthorizationFailedError.errno}
_TOO_LARGE = {Errors.MessageSizeTooLargeError.errno, Errors.RecordListTooLargeError.errno}


def attach(conn: AmqpConnection, link, address: Address) -> LinkHandler | None:
    runtime = conn.namespace
    view = hub_for(conn, link, address)
    if view is None:
        return None
    principal, why = conn.principal_for(view.name, SEND)
    if why is not None:
        refuse(link, UNAUTHORIZED, why)
        return None
    if principal is not None and principal.publisher is not None and \
            (address.publisher or "").lower() != principal.publisher.lower():
        refuse(link, UNAUTHORIZED, f"a token for publisher {principal.publisher!r} may only send "
                                   f"to {view.name}/Publishers/{principal.publisher}")
        return None
    return PublishLink(conn, link, view.name, address, principal)


class PublishLink(LinkHandler):
    def __init__(self, conn: AmqpConnection, link, hub: str, address: Address, principal) -> None:
        self.conn, self.link, self.hub, self.principal = conn, link, hub, principal
        self.partition = address.partition
        self.publisher = address.publisher
        self.limit = conn.namespace.policy.max_publication_bytes()
        self.closed = False
        open_link(link)
        link.max_message_size = self.limit
        link.flow(CREDIT)
        conn.watch_token(self, link, hub, SEND)

    def on_close(self) -> None:
        self.closed = True

    def on_delivery(self, delivery) -> None:
        raw = received(self.link, delivery)
        if raw is None:
            return
        link = self.link
        if link.credit < CREDIT // 2:
            link.flow(CREDIT - link.credit)
        if delivery.settled and delivery.remote_state == Delivery.REJECTED:
            return
        condition = self._publish(raw, delivery)
        if condition is not None:
            delivery.local.condition = condition
            delivery.update(Delivery.REJECTED)
            delivery.settle()

    def _publish(self, raw: bytes, delivery) -> Condition | None:
        """Append the transfer; None when done (settled here or after a throttle)."""
        conn = self.conn
        runtime = conn.namespace
        if len(raw) > self.limit:
            return Condition(MESSAGE_SIZE_EXCEEDED, f"the message is {len(raw)} bytes; event hub "
                             f"{self.hub!r} accepts at most {self.limit} bytes per send")
        try:
            outer = decode_message(raw)
            messages = batch_messages(outer) or [outer]
        except MessageError as exc:
            return Condition("amqp:decode-error", str(exc))
        if not messages:
            return Condition(NOT_ALLOWED, "an empty batch")
        if self.publisher is not None:
            messages = [m._replace(partition_key=self.publisher) for m in messages]
        view = runtime.topics.get(self.hub)
        if view is None:
            return Condition(NOT_FOUND, f"event hub {self.hub!r} was deleted")
        partition = self._partition(messages[0].partition_key, view.partitions)
        now_ms = conn.services.clock.now_ms()
        records = records_batch(messages, now_ms)
        headers = validate_records(records)
        admission = runtime.policy.produce(
            self.principal, self.hub, summarize(headers, len(records)), SEND_TIMEOUT_MS,
            conn.container, lambda: [m.partition_key.encode() if m.partition_key is not None else None
                                     for m in messages], kafka=False)
        if admission.refusal:
            if admission.busy:  # over the throughput units for longer than a send waits
                return Condition(SERVER_BUSY, admission.refusal[1])
            return _condition(*admission.refusal)
        try:
            runtime.topics.append(self.hub, partition, records, now_ms, headers)
        except log_errors.LogError as exc:
            code = for_log_error(exc)
            if code == Errors.KafkaStorageError.errno:
                log.error("AMQP append to %s-%d failed: %s", self.hub, partition, exc)
            return _condition(code, str(exc))
        conn.server.count_in(len(raw), len(messages))
        observer = conn.services.observer
        if observer is not None:
            observer.on_amqp(runtime.name, self.hub, partition, True, len(messages), len(records))
        if admission.throttle_ms > 0:
            conn.services.clock.call_later(admission.throttle_ms, lambda: self._accept(delivery))
        else:
            self._accept(delivery)
        return None

    def _accept(self, delivery) -> None:
        if self.closed or self.conn.engine is None:
            return
        delivery.update(Delivery.ACCEPTED)
        delivery.settle()
        self.conn.pump()

    def _partition(self, key: str | None, partitions: int) -> int:
        if self.partition is not None:
            return self.partition
        if key is not None:
            return partition_for_key(key, partitions)
        return self.conn.server.next_partition(self.conn.namespace.name, self.hub, partitions)


def _condition(code: int, message: str) -> Condition:
    """A policy's or the log's answer (a Kafka error code) as the AMQP error Event Hubs sends."""
    if code in _DENIED:
        return Condition(UNAUTHORIZED, message)
    if code in _TOO_LARGE:
        return Condition(MESSAGE_SIZE_EXCEEDED, message)
    if code == Errors.KafkaStorageError.errno:
        return Condition(INTERNAL, message)
    return Condition(NOT_ALLOWED, message)
