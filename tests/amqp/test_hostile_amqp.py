"""Clients that try to exhaust the broker: a message far over the size limit, links
and sessions by the thousand, a connection that never authenticates. Each gets
the AMQP condition Event Hubs sends (or a close), costs the broker bounded memory,
and leaves the broker serving everyone else. The limits are lowered for the tests
through ``AmqpServer.limits`` (see ``kafka_wire/amqp/limits.py``)."""
from __future__ import annotations

import asyncio
import dataclasses
import socket
import struct

import pytest
from azure.eventhub import EventData, EventHubProducerClient
from proton import Data, Delivery, Described, Endpoint, Message, uint, ulong

from kafka_wire.amqp.limits import ConnectionLimits
from kafka_wire.testing import EmulatedBroker

from .conftest import MULTI_TOML, SENDER, sdk_cs, wait_for
from kafka_wire.testing.raw_amqp import RawAmqp
from .test_bad_input import frames

MB = 1024 * 1024
LIMIT = 1 * MB  # the default namespace's (Standard) publication limit


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("hostile") / "data", amqp=True) as b:
        b.create_hub("hub", 1)
        yield b


@pytest.fixture
def limits(broker):
    """Set the server's connection limits for one test: ``limits(max_links=5)``."""
    server = broker.broker.amqp_server

    def set_limits(**changes) -> ConnectionLimits:
        server.limits = dataclasses.replace(ConnectionLimits(), **changes)
        return server.limits

    yield set_limits
    server.limits = ConnectionLimits()


def on_loop(broker, fn):
    """``fn()`` run on the broker's loop (its objects are not for other threads)."""
    async def call():
        return fn()
    return asyncio.run_coroutine_threadsafe(call(), broker._loop).result(10)


def server_side(broker, client: RawAmqp):
    """The broker's AmqpConnection for ``client``."""
    host, port = client.sock.getsockname()[:2]
    peer = f"{host}:{port}"
    return wait_for(lambda: on_loop(broker, lambda: next(
        (c for c in broker.broker.amqp_server.connections if c.peer == peer), None)))


def held(conn) -> dict[str, int]:
    """What one connection holds for its peer (run on the loop): our handlers and
    bookkeeping, and the sessions and links proton itself still lists."""
    def count(first):
        n, item = 0, first
        while item:
            n, item = n + 1, item.next(0)
        return n
    return {"handlers": len(conn.handlers), "links": len(conn.links), "sessions": len(conn.sessions),
            "proton_links": count(conn.connection.link_head(0)),
            "proton_sessions": count(conn.connection.session_head(0)),
            "arriving_bytes": conn._partial_bytes}


def sdk_send(broker, body: bytes = b"still serving") -> None:
    with EventHubProducerClient.from_connection_string(
            broker.amqp_connection_string(), eventhub_name="hub", retry_total=0) as producer:
        producer.send_batch([EventData(body)], partition_id="0")


# -- a message far over the limit -------------------------------------------------------

def test_a_huge_message_is_refused_at_its_first_frame_past_the_limit_and_the_rest_dropped(broker):
    body = Message(body=b"\xab" * (30 * MB)).encode()  # 30 times the limit
    with RawAmqp(broker.amqp_port) as client:
        client.open()
        ssn = client.session()
        link = client.sender(ssn, "hub/Partitions/0", "big")
        assert link.remote_max_message_size == LIMIT  # advertised on the attach
        client.wait(lambda: link.credit > 0)
        delivery = link.delivery(b"big")
        link.send(body)
        link.advance()
        conn = server_side(broker, client)
        # Write 2 MB, then wait for the verdict before writing more: the refusal must
        # come while most of the message is still on the client's side.
        while client.sent < 2 * LIMIT:
            client.send_some()
        sent_before = client.sent
        client.paused = True  # hold the rest back while waiting
        client.wait(lambda: delivery.remote_state == Delivery.REJECTED)
        assert delivery.remote.condition.name == "amqp:link:message-size-exceeded"
        assert str(LIMIT) in delivery.remote.condition.description
        assert sent_before < len(body) / 10
        # The other 28 MB still arrive, and are dropped as they come.
        client.paused = False
        client.wait(lambda: client.transport.pending() <= 0, timeout=60)
        # The link takes the next message, the connection stays open.
        small = link.delivery(b"small")
        link.send(Message(body=b"small").encode())
        link.advance()
        client.wait(lambda: small.remote_state == Delivery.ACCEPTED)
        assert not client.closed
        assert on_loop(broker, lambda: held(conn))["arriving_bytes"] == 0
    sdk_send(broker)


def test_messages_arriving_at_once_are_held_to_the_connections_budget(broker, limits):
    limits(max_arriving_bytes=3 * MB)
    with RawAmqp(broker.amqp_port) as client:
        client.open()
        ssn = client.session()
        links = [client.sender(ssn, "hub/Partitions/0", f"part-{i}") for i in range(5)]
        client.wait(lambda: all(link.credit > 0 for link in links))
        # Five messages, each under the limit, written interleaved a quarter at a time: no
        # more than 3 MB of them may wait in the broker at once, so at least one is refused
        # (all five are partly there after three rounds) and at least three are not (three
        # fit). The verdicts are read at the end.
        raw = Message(body=b"\x01" * (LIMIT - 4096)).encode()
        quarter = len(raw) // 4 + 1
        deliveries = [link.delivery(str(i).encode()) for i, link in enumerate(links)]
        for start in range(0, len(raw), quarter):
            for link in links:
                link.send(raw[start:start + quarter])
            while client.send_some():
                pass
        for link in links:
            link.advance()
        client.wait(lambda: all(d.remote_state in (Delivery.ACCEPTED, Delivery.REJECTED)
                                for d in deliveries), timeout=30)
        states = [d.remote_state for d in deliveries]
        refused = [d.remote.condition.name for d in deliveries if d.remote_state == Delivery.REJECTED]
        assert states.count(Delivery.ACCEPTED) >= 3 and refused, states
        assert set(refused) == {"amqp:resource-limit-exceeded"}
        conn = server_side(broker, client)
        assert on_loop(broker, lambda: held(conn))["arriving_bytes"] == 0


# -- links and sessions -----------------------------------------------------------------

def test_thousands_of_attach_detach_cycles_leave_nothing_behind(broker):
    with RawAmqp(broker.amqp_port) as client:
        client.open()
        ssn = client.session()
        conn = server_side(broker, client)
        for i in range(2000):
            link = client.sender(ssn, "hub", f"cycle-{i}")
            assert link.state & Endpoint.REMOTE_ACTIVE, link.remote_condition
            client.detach(link)
        # A session per link, ended without detaching it (what pyamqp does on close).
        for i in range(300):
            other = client.session()
            client.sender(other, "hub", f"in-session-{i}")
            other.close()
            client.wait(lambda: other.state & Endpoint.REMOTE_CLOSED)
            other.free()
        counts = wait_for(lambda: (lambda h: h if h["links"] == h["proton_links"] == 0 else None)(
            on_loop(broker, lambda: held(conn))))
        assert counts == {"handlers": 0, "links": 0, "sessions": 1, "proton_links": 0,
                          "proton_sessions": 1, "arriving_bytes": 0}, counts
        assert not client.closed


def test_an_attach_past_the_link_cap_is_refused_with_resource_limit_exceeded(broker, limits):
    limits(max_links=5)
    with RawAmqp(broker.amqp_port) as client:
        client.open()
        ssn = client.session()
        links = [client.sender(ssn, "hub", f"l{i}") for i in range(5)]
        assert all(link.state & Endpoint.REMOTE_ACTIVE for link in links)
        extra = client.sender(ssn, "hub", "one-too-many")
        client.wait(lambda: extra.state & Endpoint.REMOTE_CLOSED)
        assert extra.remote_condition.name == "amqp:resource-limit-exceeded"
        assert "5 links" in extra.remote_condition.description
        client.detach(extra)
        client.detach(links[0])  # room for one again
        again = client.sender(ssn, "hub", "again")
        assert again.state & Endpoint.REMOTE_ACTIVE, again.remote_condition
        assert not client.closed
        conn = server_side(broker, client)
        assert on_loop(broker, lambda: held(conn))["links"] == 5


def _frame(code: int, fields: list, channel: int = 0) -> bytes:
    d = Data()
    d.put_object(Described(ulong(code), fields))
    body = bytes(d.encode())
    return struct.pack(">IBBH", 8 + len(body), 2, 0, channel) + body


def _begins(answer: bytes) -> list:
    return [p for _, p in frames(answer[8:]) if int(p.descriptor) in (0x11, 0x17, 0x18)]


def test_a_begin_past_the_session_cap_is_ended_and_refusals_ignored_close(broker, limits):
    # Written by hand: proton's own client would not begin past the server's sessions.
    limits(max_sessions=3)
    begins = b"".join(_frame(0x11, [None, uint(0), uint(100), uint(100)], channel=ch)
                      for ch in range(7))
    with socket.create_connection(("127.0.0.1", broker.amqp_port), timeout=10) as s:
        s.sendall(b"AMQP\x00\x01\x00\x00" + _frame(0x10, ["hostile"]) + begins)
        answer = bytearray()
        while chunk := s.recv(65536):  # the broker closes: the peer ignored 4 refusals
            answer += chunk
    performatives = _begins(bytes(answer))
    kinds = [int(p.descriptor) for p in performatives]
    assert kinds.count(0x11) == 7, kinds  # every begin is answered...
    ends = [p for p in performatives if int(p.descriptor) == 0x17]
    assert len(ends) == 3, kinds  # ...the 4th to 6th with an end, the 7th with a close
    assert all(str(e.value[0].value[0]) == "amqp:resource-limit-exceeded" for e in ends)
    close = performatives[-1]
    assert int(close.descriptor) == 0x18
    assert str(close.value[0].value[0]) == "amqp:resource-limit-exceeded"
    sdk_send(broker)


def test_a_session_past_the_cap_can_be_begun_once_one_ends(broker, limits):
    limits(max_sessions=2)
    with RawAmqp(broker.amqp_port) as client:
        client.open()
        first, second = client.session(), client.session()
        assert first.state & second.state & Endpoint.REMOTE_ACTIVE
        third = client.session()
        client.wait(lambda: third.state & Endpoint.REMOTE_CLOSED)
        assert third.remote_condition.name == "amqp:resource-limit-exceeded"
        third.close()
        first.close()
        client.wait(lambda: first.state & Endpoint.REMOTE_CLOSED)
        fourth = client.session()
        assert fourth.state & Endpoint.REMOTE_ACTIVE and not fourth.state & Endpoint.REMOTE_CLOSED
        assert client.sender(fourth, "hub", "works").state & Endpoint.REMOTE_ACTIVE


# -- authentication ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """Namespace contoso (SAS policies: authentication required)."""
    with EmulatedBroker(tmp_path_factory.mktemp("secured") / "data", config_file=MULTI_TOML,
                        amqp=True) as b:
        yield b


def test_a_connection_that_puts_no_token_is_closed_unauthorized(secured):
    server = secured.broker.amqp_server
    # Long enough for the SDK to put its token right after opening, on a busy machine.
    server.limits = ConnectionLimits(unauthenticated_timeout_s=1.0)
    try:
        with EventHubProducerClient.from_connection_string(sdk_cs(secured), eventhub_name="orders",
                                                           retry_total=0) as producer:
            producer.get_partition_ids()  # a token on $cbs, then $management
            before = {c.id for c in on_loop(secured, lambda: list(server.connections))}
            with RawAmqp(secured.amqp_port) as idle:
                idle.open()  # and then nothing
                idle.wait(lambda: idle.closed, timeout=10)
                assert idle.conn.remote_condition.name == "amqp:unauthorized-access"
                assert "$cbs" in idle.conn.remote_condition.description
            # Opened earlier, with a token: still open, its deadline long past.
            now = {c.id for c in on_loop(secured, lambda: list(server.connections))}
            assert before <= now
            producer.send_batch([EventData(b"authenticated")], partition_id="0")
            assert {c.id for c in on_loop(secured, lambda: list(server.connections))} >= before
    finally:
        server.limits = ConnectionLimits()


def test_sasl_plain_credentials_count_as_authenticated(secured):
    server = secured.broker.amqp_server
    server.limits = ConnectionLimits(unauthenticated_timeout_s=0.5)
    try:
        with RawAmqp(secured.amqp_port, user=SENDER[0], password=SENDER[1]) as plain:
            plain.open()
            ssn = plain.session()
            with RawAmqp(secured.amqp_port) as idle:  # opened later: closed first
                idle.open()
                idle.wait(lambda: idle.closed, timeout=10)
                assert idle.conn.remote_condition.name == "amqp:unauthorized-access"
            link = plain.sender(ssn, "orders/Partitions/0", "plain")
            assert link.state & Endpoint.REMOTE_ACTIVE, link.remote_condition
            delivery = link.delivery(b"1")
            link.send(Message(body=b"with PLAIN").encode())
            link.advance()
            plain.wait(lambda: delivery.remote_state == Delivery.ACCEPTED)
            assert not plain.closed
    finally:
        server.limits = ConnectionLimits()


# -- $management requests whose replies are never taken -----------------------------------

def test_requests_stop_getting_credit_while_their_replies_are_not_taken(broker):
    from kafka_wire.amqp.nodes import REQUEST_CREDIT, ReplyLink

    request = Message(reply_to="replies", properties={
        "operation": "READ", "type": "com.microsoft:eventhub", "name": "hub"})
    with RawAmqp(broker.amqp_port) as client:
        client.open()
        ssn = client.session()
        replies = ssn.receiver("replies")
        replies.source.address, replies.target.address = "$management", "replies"
        replies.open()  # and no credit: the replies pile up on the broker's side
        requests = client.sender(ssn, "$management", "requests")
        conn = server_side(broker, client)

        def queued() -> int:
            return on_loop(broker, lambda: sum(len(h.queue) for h in conn.handlers
                                               if isinstance(h, ReplyLink)))
        sent = 0
        for _ in range(50 * REQUEST_CREDIT):  # (bounded: stops when credit is not renewed)
            if requests.credit == 0:
                # Not a time limit: once the broker has made a reply to every request,
                # a round trip (a link attached and answered) brings any credit it gave.
                client.wait(lambda: queued() == sent, 30)
                client.sender(ssn, "$management", f"probe-{sent}")
                if requests.credit == 0:
                    break
            request.id = sent
            requests.send(request).settle()
            sent += 1
        assert requests.credit == 0 and sent <= 2 * REQUEST_CREDIT, sent
        assert queued() == sent
        # Taking the replies gives the requests their credit back.
        replies.flow(sent)
        client.wait(lambda: replies.queued >= sent, 30)
        assert client.wait(lambda: requests.credit > 0, 10)
        assert not client.closed
    sdk_send(broker)
