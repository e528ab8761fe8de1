"""Which node a link attaches to, and the request/reply plumbing of the
``$cbs`` and ``$management`` nodes.

A client talks to a request/reply node over two links: it sends requests on
a link whose target is the node, and reads replies on a link whose source is
the node. A reply goes to the reply link whose target is the request's
``reply-to`` (any reply link of that node if none matches), correlated by the
request's message id.
"""
from __future__ import annotations

import logging
import threading
from collections import deque
from typing import TYPE_CHECKING, Callable

from cproton import PN_EOS
from cproton import ffi as _ffi
from cproton import lib as _pn
from proton import Condition, Delivery, Link, Message

from kafka_wire.amqp import addresses
from kafka_wire.amqp.connection import DECODE_ERROR, ENTITY_DISABLED, NOT_FOUND, LinkHandler, refuse
from kafka_wire.eventhubs.rights import SEND
from kafka_wire.log_lines import shortened

if TYPE_CHECKING:
    from kafka_wire.amqp.connection import AmqpConnection

log = logging.getLogger(__name__)

REQUEST_CREDIT = 100
ARGUMENT_OUT_OF_RANGE = "com.microsoft:argument-out-of-range"

Answer = Callable[["AmqpConnection", Message], Message]


def attach(conn: AmqpConnection, link, address: addresses.Address) -> LinkHandler | None:
    """Open ``link`` on the node it addresses; its handler, or None if refused."""
    from kafka_wire.amqp import cbs, consume, management, publish

    if address.node in (addresses.CBS, addresses.MANAGEMENT):
        answer = cbs.answer if address.node == addresses.CBS else management.answer
        if link.is_receiver:
            return RequestLink(conn, link, answer, address.node)
        return ReplyLink(conn, link, address.node)
    plan = conn.fault_plan
    if address.partition is not None and plan is not None and plan.active and \
            _unavailable(conn, plan, link, address):
        return None
    if link.is_receiver:
        if _sender_of_disabled_hub(conn, link, address):
            return None
        return publish.attach(conn, link, address)
    if address.consumer_group is None or address.partition is None:
        refuse(link, NOT_FOUND, f"receive from {address.node}/ConsumerGroups/GROUP/Partitions/ID, "
                                f"not from {link.remote_source.address!r}")
        return None
    return consume.attach(conn, link, address)


def _sender_of_disabled_hub(conn: AmqpConnection, link, address: addresses.Address) -> bool:
    """A sender's attach to a Disabled hub (or by a principal whose application group is
    disabled) refused with com.microsoft:entity-disabled, as a receiver's is and as one
    attached before the change is detached (AmqpConnection.hubs_changed); True when it
    was. An unknown hub or a missing right is left to publish.attach to refuse."""
    view = conn.namespace.topics.hub(address.node)
    if view is None:
        return False
    principal, why = conn.principal_for(view.name, SEND)
    if why is not None:
        return False
    why = conn.namespace.policy.disabled(view.name, principal)
    if why is None:
        return False
    refuse(link, ENTITY_DISABLED, why)
    return True


def _unavailable(conn: AmqpConnection, plan, link, address: addresses.Address) -> bool:
    """An injected partition-unavailable: the attach of a receiver or partition sender
    refused (kafka_wire.fault_plan); True when it was."""
    view = conn.namespace.topics.hub(address.node)
    fault = plan.fire(("partition-unavailable",), {
        "namespace": conn.namespace.name, "hub": view.name if view is not None else address.node,
        "partition": address.partition,
        "consumer_group": None if link.is_receiver or address.consumer_group is None
        else address.consumer_group.lower(),
        "client": conn.container, "link": link.name, "protocol": "amqp"})
    if fault is None:
        return False
    refuse(link, fault.params["condition"], fault.params["description"])
    return True


def open_link(link) -> None:
    """Echo the peer's terminus and settlement modes, and open."""
    if link.is_receiver:
        link.target.copy(link.remote_target)
        link.source.copy(link.remote_source)
    else:
        link.source.copy(link.remote_source)
        link.target.copy(link.remote_target)
    link.snd_settle_mode = link.remote_snd_settle_mode
    link.rcv_settle_mode = link.remote_rcv_settle_mode
    link.open()


def entity_not_found(namespace: str, entity: str, why: str) -> str:
    """A not-found description in the service's words, which the SDKs match
    (@azure/event-hubs makes it MessagingEntityNotFoundError), then ours."""
    return f"The messaging entity '{namespace}/{entity}' could not be found: {why}"


def hub_for(conn: AmqpConnection, link, address: addresses.Address):
    """The hub (and partition, if any) a link addresses, or None after refusing the link.
    The address may name the hub in any case, as on Event Hubs: the view's name is the
    hub's own, for everything after (logs, rights, checkpoints, metrics)."""
    runtime = conn.namespace
    view = runtime.topics.hub(address.node)
    if view is None:
        refuse(link, NOT_FOUND, entity_not_found(runtime.name, address.node,
                                                 f"event hub {address.node!r} does not exist in "
                                                 f"namespace {runtime.name!r}"))
        return None
    if address.partition is not None and address.partition >= view.partitions:
        # The service's condition and words for a partition id out of range.
        refuse(link, ARGUMENT_OUT_OF_RANGE,
               f"The specified partition is invalid for an EventHub partition sender or receiver. "
               f"It should be between 0 and {view.partitions - 1}: event hub {view.name!r} has no "
               f"partition {address.partition}")
        return None
    return view


def received(link, delivery) -> bytearray | None:
    """A transfer's whole message, once its last frame is in (None before)."""
    size = _complete(delivery)
    if size is None:
        return None
    raw = bytearray(size)
    n = _recv(link, raw, size)
    return None if n is None else raw[:n] if n < size else raw


def received_view(link, delivery) -> memoryview | None:
    """:func:`received`'s message as a view of a buffer this thread reuses: valid until
    the thread's next call, and the caller must keep nothing of it past its own.

    A megabyte allocated per batch, with the batch's records allocated beside it, is
    handed back to the system by the allocator and faulted in again each time: that
    and cproton's wrapper of ``pn_link_recv`` (``Receiver.recv``: a zeroed buffer, then
    a copy of it) were a sixth of the broker's time on the send path."""
    size = _complete(delivery)
    if size is None:
        return None
    buf = getattr(_scratch, "buf", None)
    if buf is None or len(buf) < size or _exported(buf):
        buf = bytearray(size)
        if size <= MAX_SCRATCH:
            _scratch.buf = buf
    n = _recv(link, buf, size)
    return None if n is None else memoryview(buf)[:n]


MAX_SCRATCH = 4 << 20  # a larger message gets a buffer of its own
_scratch = threading.local()  # (one receive buffer per broker loop: tests run several)


def _exported(buf: bytearray) -> bool:
    """Is a view of ``buf`` still alive (kept past its use)? Then it is not reused."""
    try:
        buf.append(0)  # a bytearray with views cannot change size
    except BufferError:
        return True
    buf.pop()
    return False


def _complete(delivery) -> int | None:
    """The size of ``delivery``'s message, once all of it is in."""
    impl = delivery._impl
    if not _pn.pn_delivery_readable(impl) or _pn.pn_delivery_partial(impl):
        return None
    return _pn.pn_delivery_pending(impl)


def _recv(link, buf: bytearray, size: int) -> int | None:
    """Read the current delivery's ``size`` bytes into ``buf`` (proton's C call, as
    consume.py makes them) and move past it; how many came, None if none did."""
    n = _pn.pn_link_recv(link._impl, _ffi.from_buffer(buf), size)
    if n == PN_EOS:  # (as Receiver.recv: nothing to read)
        link.advance()
        return None
    link._check(n)
    link.advance()
    return n


class RequestLink(LinkHandler):
    def __init__(self, conn: AmqpConnection, link, answer: Answer, node: str) -> None:
        self.conn, self.link, self.answer, self.node = conn, link, answer, node
        open_link(link)
        link.flow(REQUEST_CREDIT)

    def on_delivery(self, delivery) -> None:
        raw = received(self.link, delivery)
        if raw is None:
            return
        request = Message()
        try:
            request.decode(raw)
        except Exception as exc:  # proton's MessageException
            # Say why: pyamqp reads the fields of a rejected outcome's error.
            delivery.local.condition = Condition(DECODE_ERROR, shortened(
                f"the {self.node} request is not an AMQP message: {exc}", 500))
            delivery.update(Delivery.REJECTED)
            delivery.settle()
            log.warning("AMQP connection from %s: an undecodable %s request: %s",
                        self.conn.peer, self.node, shortened(str(exc), 200))
            return
        reply = self.answer(self.conn, request)
        delivery.update(Delivery.ACCEPTED)
        delivery.settle()
        reply.correlation_id = request.id
        if request.reply_to:
            reply.address = request.reply_to
        self.conn_reply(reply, request.reply_to)
        self.renew_credit()

    def renew_credit(self) -> None:
        """Top the client's credit up, unless the replies its reply links have no credit
        for number REQUEST_CREDIT: a client that never takes its replies cannot make the
        broker hold them without bound (it may send what credit it holds, no more)."""
        link = self.link
        if link.credit >= REQUEST_CREDIT // 2 or not link.state & link.LOCAL_ACTIVE:
            return
        if sum(len(h.queue) for h in self.reply_links()) < REQUEST_CREDIT:
            link.flow(REQUEST_CREDIT - link.credit)

    def reply_links(self) -> list[ReplyLink]:
        return [h for h in self.conn.handlers if isinstance(h, ReplyLink) and h.node == self.node]

    def conn_reply(self, reply: Message, reply_to: str | None) -> None:
        links = self.reply_links()
        for handler in links:
            if reply_to and handler.link.remote_target.address == reply_to:
                handler.send(reply)
                return
        if links:
            links[0].send(reply)


class ReplyLink(LinkHandler):
    def __init__(self, conn: AmqpConnection, link, node: str) -> None:
        self.conn, self.link, self.node = conn, link, node
        self.queue: deque[bytes] = deque()
        self._tags = 0
        open_link(link)

    def send(self, reply: Message) -> None:
        self.queue.append(bytes(reply.encode()))
        self.on_flow()

    def on_flow(self) -> None:
        link = self.link
        backlog = len(self.queue)
        while self.queue and link.credit > 0:
            self._tags += 1
            delivery = link.delivery(str(self._tags).encode())
            link.send(self.queue.popleft())
            link.advance()
            if link.snd_settle_mode == Link.SND_SETTLED:
                delivery.settle()
        if not self.queue and link.drain_mode:  # a drain (AMQP 1.0 2.6.7): no reply due, credit back
            link.drained()
        if backlog > len(self.queue):  # replies left: the requests held back may come
            for handler in [h for h in self.conn.handlers if isinstance(h, RequestLink)
                            and h.node == self.node]:
                handler.renew_credit()

    def on_delivery(self, delivery) -> None:
        if delivery.updated:  # the client settled a reply
            delivery.settle()
