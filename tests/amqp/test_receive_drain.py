"""A receiver's drain (a flow with drain=true, AMQP 1.0 §2.6.7): the broker sends what
it has for the credit, then hands the rest back at once (a flow with the delivery-count
advanced and credit 0) rather than holding it until events come. Neither Azure SDK
drains; qpid-proton, go-amqp (DrainCredit) and rhea clients do, to receive with a
timeout."""
from __future__ import annotations

import pytest
from proton import Endpoint, Message

from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.raw_amqp import RawAmqp
from tests.amqp.conftest import produce


@pytest.fixture(scope="module")
def broker(module_tmp):
    """An open namespace (no tokens needed), over Kafka and AMQP."""
    with EmulatedBroker(module_tmp / "data", amqp=True) as b:
        yield b


def _attach(c: RawAmqp, ssn, address: str, name: str):
    link = ssn.receiver(name)
    link.source.address = address
    link.open()
    c.wait(lambda: link.state & (Endpoint.REMOTE_ACTIVE | Endpoint.REMOTE_CLOSED))
    assert link.remote_condition is None
    return link


def _drained(link) -> bool:
    """The drain is complete: the credit left is that of the deliveries not yet taken."""
    return not link.draining() and link.credit == link.queued


def test_a_drain_with_no_event_to_send_returns_the_credit(broker: EmulatedBroker):
    broker.create_hub("drain-empty", 1)
    with RawAmqp(broker.amqp_port) as c:
        c.open()
        ssn = c.session()
        link = _attach(c, ssn, "drain-empty/ConsumerGroups/$Default/Partitions/0", "r")
        link.drain(10)
        c.wait(lambda: _drained(link), 10)  # before the fix: credit 10, draining, for ever
        assert link.queued == 0 and link.drained() == 10 and link.state & Endpoint.REMOTE_ACTIVE
        # the link reads on when given credit again (its wait for events was kept)
        produce(broker, "drain-empty", {0: [b"late"]})
        link.drain_mode = False
        link.flow(5)
        c.wait(lambda: link.queued == 1, 10)
        assert link.recv(link.current.pending)[-4:] == b"late"


def test_a_drain_sends_what_there_is_then_returns_the_rest(broker: EmulatedBroker):
    broker.create_hub("drain-some", 1)
    produce(broker, "drain-some", {0: [b"a", b"b", b"c"]})
    with RawAmqp(broker.amqp_port) as c:
        c.open()
        ssn = c.session()
        link = _attach(c, ssn, "drain-some/ConsumerGroups/$Default/Partitions/0", "r")
        link.drain(10)
        c.wait(lambda: _drained(link) and link.queued == 3, 10)
        assert link.drained() == 7 and link.state & Endpoint.REMOTE_ACTIVE


def test_a_drain_of_a_reply_link_returns_the_credit_no_reply_needs(broker: EmulatedBroker):
    broker.create_hub("drain-reply", 1)
    with RawAmqp(broker.amqp_port) as c:
        c.open()
        ssn = c.session()
        replies = ssn.receiver("replies")
        replies.source.address = "$management"
        replies.target.address = "replies"
        replies.open()
        c.wait(lambda: replies.state & (Endpoint.REMOTE_ACTIVE | Endpoint.REMOTE_CLOSED))
        replies.drain(5)
        c.wait(lambda: _drained(replies), 10)  # before the fix: credit 5, draining, for ever
        assert replies.drained() == 5
        requests = c.sender(ssn, "$management", "requests")
        c.wait(lambda: requests.credit > 0)
        request = requests.delivery(b"1")
        requests.send(Message(id=1, reply_to="replies", properties={
            "operation": "READ", "type": "com.microsoft:eventhub", "name": "drain-reply"}).encode())
        requests.advance()
        c.wait(lambda: request.settled, 10)  # answered: the reply waits for credit
        replies.drain(5)  # the reply, then the rest of the credit back
        c.wait(lambda: _drained(replies) and replies.queued == 1, 10)
        assert replies.drained() == 4
        reply = Message()
        reply.decode(replies.recv(replies.current.pending))
        assert reply.correlation_id == 1 and reply.properties["status-code"] == 200
