"""Links that send through a publisher (``HUB/Publishers/NAME``, EVENTHUBS.md §4): the
publisher's name is each event's partition key, an event keyed otherwise fails the
send (as a publisher token's Kafka produce with another key does), the name in the
address is matched without regard to case (as entity paths are) while the key stamped
is the name the token was issued for, and receivers see ``x-opt-publisher``."""
from __future__ import annotations

import time

import pytest
from azure.eventhub._pyamqp import SendClient
from azure.eventhub._pyamqp.authentication import SASTokenAuth
from azure.eventhub._pyamqp.error import ErrorCondition, MessageException, RetryPolicy
from azure.eventhub._pyamqp.message import BatchMessage
from proton import Delivery, Endpoint, Message, symbol

from kafka_wire.eventhubs import sas
from kafka_wire.eventhubs.partition_key import partition_for_key
from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.raw_amqp import RawAmqp

from .conftest import MULTI_TOML, ROOT, SENDER

HOST = "contoso.servicebus.windows.net"
KEY = symbol("x-opt-partition-key")
PUBLISHER = symbol("x-opt-publisher")


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("publishers") / "data", config_file=MULTI_TOML,
                        amqp=True) as b:
        yield b


_names = iter(range(10_000))


def fresh_hub(broker) -> str:
    name = f"pub{next(_names)}"
    broker.create_hub(name, 2)
    return name


class Client:
    """A raw AMQP connection that puts SAS tokens on $cbs, sends and receives."""

    def __init__(self, broker) -> None:
        self.raw = RawAmqp(broker.amqp_port, hostname=HOST)
        self.raw.open()
        self.ssn = self.raw.session()
        self.requests = 0

    def close(self) -> None:
        self.raw.close()

    def put_token(self, resource: str, policy: tuple[str, str]) -> int:
        uri = f"sb://{HOST}/{resource}"
        token = sas.generate(uri, policy[0], policy[1], int(time.time()) + 3600)
        self.requests += 1
        name = f"cbs-{self.requests}"
        reply = self.ssn.receiver(name + "-r")
        reply.source.address = "$cbs"
        reply.target.address = name + "-r"
        reply.open()
        reply.flow(1)
        send = self.sender("$cbs", name + "-s")
        send.delivery(name.encode())
        send.send(Message(id=self.requests, reply_to=name + "-r", body=token, properties={
            "operation": "put-token", "type": "servicebus.windows.net:sastoken", "name": uri}).encode())
        send.advance()

        def answered():
            d = reply.current
            return d is not None and d.readable and not d.partial

        self.raw.wait(answered)
        d = reply.current
        answer = Message()
        answer.decode(reply.recv(d.pending))
        reply.advance()
        d.settle()
        return answer.properties["status-code"]

    def sender(self, address: str, name: str):
        link = self.raw.sender(self.ssn, address, name)
        self.raw.wait(lambda: link.credit > 0 or link.state & Endpoint.REMOTE_CLOSED)
        return link

    def send(self, link, message: Message) -> Delivery:
        delivery = link.delivery(f"t{time.monotonic_ns()}".encode())
        link.send(message.encode())
        link.advance()
        self.raw.wait(lambda: delivery.remote_state or link.state & Endpoint.REMOTE_CLOSED)
        return delivery

    def received(self, hub: str, partition: int, count: int) -> list[Message]:
        """``count`` events of the partition, from its start."""
        link = self.ssn.receiver(f"r-{hub}-{partition}-{time.monotonic_ns()}")
        link.source.address = f"{hub}/ConsumerGroups/$Default/Partitions/{partition}"
        link.open()
        link.flow(count)
        got: list[Message] = []

        def more() -> bool:
            while True:
                d = link.current
                if d is None or not d.readable or d.partial:
                    return len(got) >= count
                m = Message()
                m.decode(link.recv(d.pending))
                link.advance()
                d.settle()
                got.append(m)

        self.raw.wait(more)
        link.close()
        return got

    def partition_ends(self, hub: str) -> list[int]:
        """Each partition's last sequence number (-1: empty), from $management."""
        ends = []
        for partition in range(2):
            self.requests += 1
            name = f"mgmt-{self.requests}"
            reply = self.ssn.receiver(name + "-r")
            reply.source.address = "$management"
            reply.target.address = name + "-r"
            reply.open()
            reply.flow(1)
            send = self.sender("$management", name + "-s")
            send.delivery(name.encode())
            send.send(Message(id=self.requests, reply_to=name + "-r", properties={
                "operation": "READ", "type": "com.microsoft:partition", "name": hub,
                "partition": str(partition)}).encode())
            send.advance()
            self.raw.wait(lambda: reply.current is not None and reply.current.readable
                          and not reply.current.partial)
            d = reply.current
            answer = Message()
            answer.decode(reply.recv(d.pending))
            reply.advance()
            d.settle()
            ends.append(answer.body["last_enqueued_sequence_number"])
        return ends


@pytest.fixture
def client(broker):
    c = Client(broker)
    yield c
    c.close()


def keyed(key: str | None, body: bytes = b"event") -> Message:
    return Message(body=body, inferred=True, annotations={KEY: key} if key is not None else None)


def annotations(message: Message) -> dict:
    return {str(k): v for k, v in message.annotations.items() if str(k) in (str(KEY), str(PUBLISHER))}


def test_an_event_keyed_other_than_its_publisher_fails_and_is_not_stored(broker, client):
    hub = fresh_hub(broker)
    assert client.put_token(f"{hub}/publishers/p1", SENDER) in (200, 202)
    link = client.sender(f"{hub}/publishers/p1", "pub")
    refused = client.send(link, keyed("other"))
    assert refused.remote_state == Delivery.REJECTED
    assert refused.remote.condition.name == "amqp:unauthorized-access"
    assert "'p1'" in refused.remote.condition.description
    assert client.send(link, keyed("p1", b"own key")).remote_state == Delivery.ACCEPTED
    assert client.send(link, keyed(None, b"no key")).remote_state == Delivery.ACCEPTED
    assert client.put_token(hub, ROOT) in (200, 202)
    partition = partition_for_key("p1", 2)
    ends = client.partition_ends(hub)
    assert ends[partition] == 1 and ends[1 - partition] == -1  # two events, both p1's
    got = client.received(hub, partition, 2)
    assert [bytes(m.body) for m in got] == [b"own key", b"no key"]
    assert [annotations(m) for m in got] == [{"x-opt-partition-key": "p1", "x-opt-publisher": "p1"}] * 2


def test_a_batch_through_a_publisher_fails_whole_if_one_event_is_keyed_otherwise(broker, client):
    """The SDK's own AMQP client sending the batch format (0x80013700) through a publisher:
    events without a key, or with the publisher's, are stored under it; a batch holding
    one event keyed otherwise fails, and none of its events is stored."""
    hub = fresh_hub(broker)
    host = f"127.0.0.1:{broker.amqp_port}"
    uri = f"sb://{host}/{hub}/publishers/p1"
    sender = SendClient(host, f"amqp://{host}/{hub}/publishers/p1", use_tls=False,
                        auth=SASTokenAuth(uri, uri, SENDER[0], SENDER[1]),
                        retry_policy=RetryPolicy(retry_total=0))
    with sender:
        sender.send_message(BatchMessage(data=[keyed(None, b"a").encode(), keyed("p1", b"b").encode()]))
        with pytest.raises(MessageException) as refused:
            sender.send_message(BatchMessage(data=[keyed("p1", b"c").encode(), keyed("p2", b"d").encode()]))
        assert refused.value.condition == ErrorCondition.UnauthorizedAccess
    assert client.put_token(hub, ROOT) in (200, 202)
    partition = partition_for_key("p1", 2)
    assert client.partition_ends(hub) == ([1, -1] if partition == 0 else [-1, 1])
    got = client.received(hub, partition, 2)
    assert [bytes(m.body) for m in got] == [b"a", b"b"]
    assert [annotations(m) for m in got] == [{"x-opt-partition-key": "p1", "x-opt-publisher": "p1"}] * 2


def test_an_address_in_another_case_names_the_same_publisher_and_its_events_take_the_tokens_name(
        broker, client):
    """Entity paths are case-insensitive, and so is a publisher's name in the address: a
    token for ``publishers/p1`` attaches ``Publishers/P1``. The partition key (and
    ``x-opt-publisher``) is the name the token was issued for, so one publisher's events
    share a partition however its clients spell the address; a key of the address's
    spelling is another key (keys are case-sensitive) and fails."""
    hub = fresh_hub(broker)
    assert client.put_token(f"{hub}/publishers/p1", SENDER) in (200, 202)
    link = client.sender(f"{hub}/Publishers/P1", "pub")
    assert link.state & Endpoint.REMOTE_ACTIVE
    assert client.send(link, keyed(None, b"y")).remote_state == Delivery.ACCEPTED
    assert client.send(link, keyed("p1", b"z")).remote_state == Delivery.ACCEPTED
    assert client.send(link, keyed("P1")).remote_state == Delivery.REJECTED
    other = client.sender(f"{hub}/Publishers/p2", "pub2")  # another publisher: refused
    assert other.state & Endpoint.REMOTE_CLOSED
    assert other.remote_condition.name == "amqp:unauthorized-access"
    assert client.put_token(hub, ROOT) in (200, 202)
    got = client.received(hub, partition_for_key("p1", 2), 2)
    assert [bytes(m.body) for m in got] == [b"y", b"z"]
    assert [annotations(m) for m in got] == [{"x-opt-partition-key": "p1", "x-opt-publisher": "p1"}] * 2


def test_a_hub_token_sending_through_a_publisher_is_held_to_its_key_too(broker, client):
    """Without a publisher's token (a hub's or namespace's Send right), the address names
    the publisher: its events are keyed and stamped with that name, and another key fails."""
    hub = fresh_hub(broker)
    assert client.put_token(hub, ROOT) in (200, 202)
    link = client.sender(f"{hub}/Publishers/dev-7", "pub")
    assert client.send(link, keyed("other")).remote_state == Delivery.REJECTED
    assert client.send(link, keyed(None, b"ok")).remote_state == Delivery.ACCEPTED
    # The stamp joins what else the reserved header keeps: the sender's own annotations,
    # properties, a body other than one data section.
    richer = Message(body="a value", subject="s", properties={"app": 1},
                     annotations={symbol("mine"): 2, PUBLISHER: "forged"})
    assert client.send(link, richer).remote_state == Delivery.ACCEPTED
    partition = partition_for_key("dev-7", 2)
    assert client.partition_ends(hub)[1 - partition] == -1
    plain, rich = client.received(hub, partition, 2)
    assert bytes(plain.body) == b"ok"
    assert annotations(plain) == {"x-opt-partition-key": "dev-7", "x-opt-publisher": "dev-7"}
    assert (rich.body, rich.subject, rich.properties) == ("a value", "s", {"app": 1})
    assert annotations(rich) == {"x-opt-partition-key": "dev-7", "x-opt-publisher": "dev-7"}
    assert rich.annotations[symbol("mine")] == 2


def test_a_sender_cannot_stamp_x_opt_publisher_itself(broker, client):
    """The service sets ``x-opt-publisher``: one a client writes on a hub link is dropped."""
    hub = fresh_hub(broker)
    assert client.put_token(hub, ROOT) in (200, 202)
    link = client.sender(f"{hub}/Partitions/0", "plain")
    forged = Message(body=b"f", inferred=True, annotations={PUBLISHER: "p1", symbol("mine"): 1})
    assert client.send(link, forged).remote_state == Delivery.ACCEPTED
    (got,) = client.received(hub, 0, 1)
    assert str(PUBLISHER) not in {str(k) for k in got.annotations}
    assert got.annotations[symbol("mine")] == 1
