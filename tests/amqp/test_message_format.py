"""A transfer is a batch by its message-format, not by what its body holds: format 0 is
one event whatever its body is (a bridge forwarding encoded AMQP messages, a payload
that happens to begin 00 53 ...), 0x80013700 (the SDKs' ``send_batch``) is the events
its data sections encode and is refused (``amqp:decode-error``) when they encode none,
any other format is refused (``amqp:not-implemented``). Sent with the SDK's own AMQP
client (azure.eventhub._pyamqp), which writes the format its message class carries;
read back over AMQP and over Kafka, byte for byte."""
from __future__ import annotations

import time

import pytest
from azure.eventhub import EventData
from azure.eventhub._pyamqp import SendClient
from azure.eventhub._pyamqp.authentication import SASTokenAuth
from azure.eventhub._pyamqp.error import ErrorCondition, MessageException, RetryPolicy
from azure.eventhub._pyamqp.message import BatchMessage, Message
from proton import Message as ProtonMessage

from .conftest import ROOT
from .pyamqp_raw import receive_client
from .test_cross_protocol import kafka_read
from .test_sdk_python import producer

_names = iter(range(10_000))


def fresh_hub(broker) -> str:
    name = f"fmt{next(_names)}"
    broker.create_hub(name, 1)
    return name


def encoded(body: bytes, **properties) -> bytes:
    """An AMQP message's encoding (what a bridge forwarding raw messages carries)."""
    return bytes(ProtonMessage(body=body, properties=properties or None).encode())


def sender(broker, hub: str) -> SendClient:
    host = f"127.0.0.1:{broker.amqp_port}"
    uri = f"sb://{host}/{hub}"
    return SendClient(host, f"amqp://{host}/{hub}", use_tls=False,
                      auth=SASTokenAuth(uri, uri, ROOT[0], ROOT[1]),
                      retry_policy=RetryPolicy(retry_total=0))


def amqp_read(broker, hub: str, count: int, timeout: float = 20.0) -> list:
    """The partition's events from its start, as a pyamqp receiver gets them; waits a
    moment past ``count`` so that one event too many shows."""
    client = receive_client(broker, f"{hub}/ConsumerGroups/$Default/Partitions/0")
    got: list = []
    with client:
        deadline = time.monotonic() + timeout
        while len(got) < count and time.monotonic() < deadline:
            got += client.receive_message_batch(max_batch_size=100, timeout=1)
        got += client.receive_message_batch(max_batch_size=100, timeout=0.5)
    return got


class OtherFormat(Message):
    _code = 0x00013701  # Microsoft's vendor code, another format than the batch's


PLAIN_BODIES = [
    [encoded(b"inner")],                                           # one encoded message
    [encoded(b"first", a=1), encoded(b"second"), encoded(b"")],   # a section each
    [encoded(b"x") + encoded(b"y")],                                # two in one section
]


@pytest.mark.parametrize("sections", PLAIN_BODIES, ids=["one", "sections", "concatenated"])
def test_a_plain_message_whose_body_encodes_messages_is_one_event(broker, sections):
    hub = fresh_hub(broker)
    with sender(broker, hub) as client:
        client.send_message(Message(data=sections))
    (event,) = amqp_read(broker, hub, 1)
    assert list(event.data) == sections
    (record,) = kafka_read(broker, hub, 0, 1)
    assert record.value() == b"".join(sections)


def test_the_sdks_single_send_of_an_encoded_message_is_one_event(broker):
    """``send_event`` (the Python SDK sends one event as format 0) with a body that is an
    encoded AMQP message; then a ``send_batch`` of such bodies is one event each."""
    hub = fresh_hub(broker)
    bodies = [encoded(b"one"), encoded(b"two", k="v"), encoded(b"three")]
    with producer(broker, hub) as p:
        p.send_event(EventData(bodies[0]))
        batch = p.create_batch()
        for body in bodies:
            batch.add(EventData(body))
        p.send_batch(batch)
    got = amqp_read(broker, hub, 4)
    assert [b"".join(m.data) for m in got] == [bodies[0], *bodies]
    assert [m.value() for m in kafka_read(broker, hub, 0, 4)] == [bodies[0], *bodies]


def test_a_batch_format_message_is_split_and_one_whose_sections_are_not_messages_is_refused(broker):
    hub = fresh_hub(broker)
    with sender(broker, hub) as client:
        client.send_message(BatchMessage(data=[encoded(b"a"), encoded(b"b")]))
        with pytest.raises(MessageException) as refused:
            client.send_message(BatchMessage(data=[b"not an encoded message"]))
        assert refused.value.condition == ErrorCondition.DecodeError
        client.send_message(BatchMessage(data=[encoded(b"c")]))
    got = amqp_read(broker, hub, 3)
    assert [m.value for m in got] == [b"a", b"b", b"c"]  # (proton encodes bytes as an amqp-value)


def test_another_message_format_is_refused(broker):
    hub = fresh_hub(broker)
    with sender(broker, hub) as client:
        with pytest.raises(MessageException) as refused:
            client.send_message(OtherFormat(data=[b"payload"]))
        assert refused.value.condition == ErrorCondition.NotImplemented
        client.send_message(Message(data=[b"after"]))  # the link goes on
    assert [b"".join(m.data) for m in amqp_read(broker, hub, 1)] == [b"after"]
