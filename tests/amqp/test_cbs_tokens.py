"""Tokens put on $cbs: one connection holds tokens for at most max_tokens audiences
(an audience is at most 1,024 characters), and a renewal that expires sooner than
the token it replaces ends the links it covers at its own expiry, not the old one's."""
from __future__ import annotations

import dataclasses

import pytest
from proton import Endpoint, Message

from kafka_wire.amqp.limits import ConnectionLimits
from kafka_wire.eventhubs import sas
from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.raw_amqp import RawAmqp

from .conftest import MULTI_TOML

HOST = "contoso.servicebus.windows.net"
LISTENER = ("listener", "bGlzdGVuLWtleQ==")
AUDIENCE = f"sb://{HOST}/orders"


def put_token(client: RawAmqp, ssn, token: str, audience: str) -> tuple[int, str]:
    """One put-token on its own pair of links: (status-code, status-description)."""
    replies = ssn.receiver(f"r-{client.sent}")
    replies.source.address, replies.target.address = "$cbs", replies.name
    replies.open()
    replies.flow(1)
    requests = client.sender(ssn, "$cbs", f"s-{client.sent}")
    client.wait(lambda: requests.credit > 0)
    requests.send(Message(reply_to=replies.name, body=token, properties={
        "operation": "put-token", "type": "servicebus.windows.net:sastoken", "name": audience}))
    delivery = client.wait(lambda: replies.current if replies.current is not None
                           and not replies.current.partial else None)
    answer = Message()
    answer.decode(replies.recv(delivery.pending))
    replies.advance()
    delivery.settle()
    client.detach(requests)
    client.detach(replies)
    return answer.properties["status-code"], answer.properties["status-description"]


@pytest.fixture
def broker(tmp_path):
    with EmulatedBroker(tmp_path / "data", config_file=MULTI_TOML, amqp=True,
                        virtual_clock=True) as b:
        yield b


def test_tokens_are_held_for_at_most_max_tokens_audiences(broker):
    server = broker.broker.amqp_server
    server.limits = dataclasses.replace(ConnectionLimits(), max_tokens=3)
    now = broker.clock.now_ms() // 1000
    token = sas.generate(AUDIENCE, *LISTENER, now + 3600)
    with RawAmqp(broker.amqp_port, hostname=HOST) as client:
        client.open()
        ssn = client.session()
        for i in range(3):
            assert put_token(client, ssn, token, f"{AUDIENCE}/ConsumerGroups/$Default/Partitions/{i}")[0] == 202
        status, why = put_token(client, ssn, token, f"{AUDIENCE}/ConsumerGroups/$Default/Partitions/3")
        assert status == 403 and "3 audiences" in why
        # A renewal under an audience already used is taken.
        assert put_token(client, ssn, token, f"{AUDIENCE}/ConsumerGroups/$Default/Partitions/0")[0] == 202
        # Once tokens expire, their audiences make room.
        short = sas.generate(AUDIENCE, *LISTENER, now + 60)
        assert put_token(client, ssn, short, f"{AUDIENCE}/ConsumerGroups/$Default/Partitions/1")[0] == 202
        broker.clock.advance(61_000)  # (under the 120 s idle timeout, which runs on this clock)
        assert put_token(client, ssn, token, f"{AUDIENCE}/ConsumerGroups/$Default/Partitions/3")[0] == 202
        assert not client.closed


@pytest.mark.parametrize("length, status", [(1024, 202), (1025, 400), (1_000_000, 400)])
def test_an_audience_over_1024_characters_is_refused(broker, length, status):
    now = broker.clock.now_ms() // 1000
    token = sas.generate(AUDIENCE, *LISTENER, now + 3600)
    audience = (AUDIENCE + "/" + "a" * length)[:length]
    with RawAmqp(broker.amqp_port, hostname=HOST) as client:
        client.open()
        ssn = client.session()
        assert put_token(client, ssn, token, audience)[0] == status
        assert not client.closed


def test_a_renewal_that_expires_sooner_ends_the_link_at_its_own_expiry(broker):
    now = broker.clock.now_ms() // 1000
    with RawAmqp(broker.amqp_port, hostname=HOST) as client:
        client.open()
        ssn = client.session()
        assert put_token(client, ssn, sas.generate(AUDIENCE, *LISTENER, now + 3600), AUDIENCE)[0] == 202
        link = ssn.receiver("events")
        link.source.address = "orders/ConsumerGroups/$Default/Partitions/0"
        link.open()
        client.wait(lambda: link.state & (Endpoint.REMOTE_ACTIVE | Endpoint.REMOTE_CLOSED))
        assert not link.state & Endpoint.REMOTE_CLOSED, link.remote_condition
        assert put_token(client, ssn, sas.generate(AUDIENCE, *LISTENER, now + 30), AUDIENCE)[0] == 202
        broker.clock.advance(90_000)  # the renewal expired; the first token is replaced
        client.wait(lambda: link.state & Endpoint.REMOTE_CLOSED, 10)
        assert link.remote_condition.name == "amqp:unauthorized-access"
        assert not client.closed


def test_a_token_within_the_skew_of_its_expiry_authorizes_links_to_the_skews_end(broker):
    # put-token took it (202), then every attach was refused: the door allows 15 minutes
    # of skew, the links' check did not.
    now = broker.clock.now_ms() // 1000
    with RawAmqp(broker.amqp_port, hostname=HOST) as client:
        client.open()
        ssn = client.session()
        late = sas.generate(AUDIENCE, *LISTENER, now - sas.SKEW_S + 60)  # 60 s of skew left
        assert put_token(client, ssn, late, AUDIENCE)[0] == 202
        link = ssn.receiver("events")
        link.source.address = "orders/ConsumerGroups/$Default/Partitions/0"
        link.open()
        client.wait(lambda: link.state & (Endpoint.REMOTE_ACTIVE | Endpoint.REMOTE_CLOSED))
        assert not link.state & Endpoint.REMOTE_CLOSED, link.remote_condition
        broker.clock.advance(61_000)
        client.wait(lambda: link.state & Endpoint.REMOTE_CLOSED, 10)
        assert link.remote_condition.name == "amqp:unauthorized-access"
        assert put_token(client, ssn, late, AUDIENCE)[0] == 401  # past the skew now
