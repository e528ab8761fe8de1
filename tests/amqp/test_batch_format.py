"""Only a message of Microsoft's batch format (message-format 0x80013700, what both
Azure SDKs send for every batch) is split into the events its data sections hold. A
plain message (format 0: the Java SDK's single event, the Python SDK's ``send_event``,
any AMQP client) whose body happens to be an encoded AMQP message (a bridge forwarding
raw AMQP, say) is one event, stored as sent: its body and its own properties.

The format is read from the client's transfer frames (``InputFrames``/``SentFormats``:
proton's binding does not give it), so a property test holds that reading to the
frames, however the reads cut them."""
from __future__ import annotations

import struct

import pytest
from azure.eventhub import EventData, EventHubProducerClient
from azure.eventhub._pyamqp import SendClient
from azure.eventhub._pyamqp.authentication import SASTokenAuth
from azure.eventhub._pyamqp.error import RetryPolicy
from azure.eventhub._pyamqp.message import BatchMessage
from azure.eventhub._pyamqp.message import Message as PyamqpMessage
from confluent_kafka import Consumer, TopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st
from proton import Data, Described, Endpoint, Message, uint, ulong

from kafka_wire.amqp.input_frames import InputFrames
from kafka_wire.amqp.messages import BATCH_FORMAT
from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.raw_amqp import RawAmqp

from .conftest import ROOT


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("format") / "data", amqp=True) as b:
        yield b


_hubs = iter(range(1000))


def new_hub(broker) -> str:
    name = f"fmt{next(_hubs)}"
    broker.create_hub(name, 1)
    return name


def encoded(body: bytes, properties: dict | None = None) -> bytes:
    return bytes(Message(body=body, properties=properties, inferred=True).encode())


def stored(broker, hub: str, timeout: float = 10.0, raw: list | None = None) -> list[Message]:
    """Every event of the hub's partition 0 (each send was settled after its append: the
    log holds them all), as an AMQP receiver gets it (``raw``: their bytes are added)."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "hw"})
    try:  # (the Kafka high watermark: how many events the partition holds)
        count = consumer.get_watermark_offsets(TopicPartition(hub, 0), timeout=10, cached=False)[1]
    finally:
        consumer.close()
    with RawAmqp(broker.amqp_port) as client:
        client.open()
        ssn = client.session()
        link = ssn.receiver("r")
        link.source.address = f"{hub}/ConsumerGroups/$Default/Partitions/0"
        link.open()
        link.flow(count)
        got: list[Message] = []

        def more() -> bool:
            while True:
                delivery = link.current
                if delivery is None or not delivery.readable or delivery.partial:
                    return len(got) >= count or bool(link.state & Endpoint.REMOTE_CLOSED)
                message = Message()
                data = link.recv(delivery.pending)
                message.decode(data)
                if raw is not None:
                    raw.append(bytes(data))
                link.advance()
                delivery.settle()
                got.append(message)

        client.wait(more, timeout)
        return got


def test_an_sdk_batch_still_splits_into_its_events_with_their_properties(broker):
    hub = new_hub(broker)
    events = []
    for i in range(3):
        event = EventData(f"event {i}".encode())
        event.properties = {"n": i, "kind": "sdk"}
        events.append(event)
    with EventHubProducerClient.from_connection_string(broker.amqp_connection_string(),
                                                       eventhub_name=hub) as producer:
        producer.send_batch(events, partition_id="0")
    got = stored(broker, hub)
    assert [bytes(m.body) for m in got] == [b"event 0", b"event 1", b"event 2"]
    assert [{str(k): v for k, v in m.properties.items()} for m in got] == \
        [{"n": i, "kind": "sdk"} for i in range(3)]


def test_an_sdk_event_whose_body_is_an_encoded_message_is_stored_as_sent(broker):
    """``send_event`` sends one plain message (format 0), not a batch."""
    hub = new_hub(broker)
    body = encoded(b"inner body", {"inner": 1})
    event = EventData(body)
    event.properties = {"outer": "yes"}
    with EventHubProducerClient.from_connection_string(broker.amqp_connection_string(),
                                                       eventhub_name=hub) as producer:
        producer.send_event(event, partition_id="0")
    (got,) = stored(broker, hub)
    assert bytes(got.body) == body
    assert {str(k): v for k, v in got.properties.items()} == {"outer": "yes"}


@pytest.mark.parametrize("sections", [1, 2], ids=["one-data-section", "two-data-sections"])
def test_a_plain_message_whose_body_is_encoded_messages_is_stored_as_sent(broker, sections):
    """A raw client's plain message (proton writes format 0): one data section holding an
    encoded message (the general decoder's case), or several each holding one (the shape
    the send path's one-pass reader takes)."""
    hub = new_hub(broker)
    inner = [encoded(f"inner {i}".encode()) for i in range(sections)]
    if sections == 1:
        message = Message(body=inner[0], properties={"app": "prop"}, inferred=True)
        raw = bytes(message.encode())
    else:  # data sections, one after another, as the batch format lays them out
        raw = b"".join(b"\x00\x53\x75\xa0" + bytes((len(b),)) + b for b in inner)
    with RawAmqp(broker.amqp_port) as client:
        client.open()
        ssn = client.session()
        link = client.sender(ssn, f"{hub}/Partitions/0", "plain")
        client.wait(lambda: link.credit > 0)
        delivery = link.delivery(b"t1")
        link.send(raw)
        link.advance()
        client.wait(lambda: delivery.remote_state)
        assert delivery.remote_state == delivery.ACCEPTED
    received: list[bytes] = []
    (got,) = stored(broker, hub, raw=received)
    if sections == 1:
        assert bytes(got.body) == inner[0]
        assert {str(k): v for k, v in got.properties.items()} == {"app": "prop"}
    else:  # the body kept its shape: the data sections as sent
        assert received[0].endswith(raw)


def pyamqp_sender(broker, hub: str) -> SendClient:
    """The SDK's own AMQP client (below EventHubProducerClient), with a token put on $cbs
    as the SDK does (an open namespace takes any key)."""
    host = f"127.0.0.1:{broker.amqp_port}"
    uri = f"sb://{host}/{hub}"
    auth = SASTokenAuth(uri, uri, ROOT[0], ROOT[1])
    return SendClient(host, f"amqp://{host}/{hub}/Partitions/0", auth=auth, use_tls=False,
                      retry_policy=RetryPolicy(retry_total=0))


def test_a_batch_format_message_splits_and_a_plain_one_does_not_on_one_link(broker):
    """pyamqp writes each message's own format: a BatchMessage (0x80013700) is split,
    a Message (0) with the same body is not, alternately on one link."""
    hub = new_hub(broker)
    inner = [encoded(b"first", {"i": 1}), encoded(b"second", {"i": 2})]
    with pyamqp_sender(broker, hub) as client:
        client.send_message(BatchMessage(data=inner))
        client.send_message(PyamqpMessage(data=inner))
        client.send_message(BatchMessage(data=inner))
    received: list[bytes] = []
    got = stored(broker, hub, raw=received)
    assert len(got) == 5
    assert [bytes(got[i].body) for i in (0, 1, 3, 4)] == [b"first", b"second"] * 2
    assert [dict(got[i].properties) for i in (0, 1, 3, 4)] == [{"i": 1}, {"i": 2}] * 2
    assert received[2].endswith(b"".join(  # the plain one, as sent
        b"\x00\x53\x75\xa0" + bytes((len(b),)) + b for b in inner))


# -- the reading of formats from the frames ------------------------------------------------
HEADER = b"AMQP\x00\x01\x00\x00"


def frame(code: int, fields: list, payload: bytes = b"", channel: int = 0) -> bytes:
    d = Data()
    d.put_object(Described(ulong(code), fields))
    body = bytes(d.encode()) + payload
    return struct.pack(">IBBH", 8 + len(body), 2, 0, channel) + body


@st.composite
def conversations(draw):
    """Frames of a client sending on two links of session 1 (and receiving on a third):
    deliveries of one or more transfers, each its format on its first; and what the
    scanner should hold for each sending link, oldest first."""
    out = [frame(0x10, ["c"]), frame(0x11, [None, uint(0), uint(100), uint(100)], b"", 1)]
    for handle, name, role in ((0, "s0", False), (1, "s1", False), (2, "r2", True)):
        out.append(frame(0x12, [name, uint(handle), role, None, None, None, None], b"", 1))
    want: dict[str, list] = {"s0": [], "s1": []}
    tag = 0
    for _ in range(draw(st.integers(1, 12))):
        handle = draw(st.integers(0, 2))
        fmt = draw(st.sampled_from([0, BATCH_FORMAT, 1, 0x12345678]))
        tag += 1
        parts = draw(st.integers(1, 3))
        for part in range(parts):
            more = part < parts - 1
            first = part == 0
            # Continuations may repeat the tag and format, or leave them out.
            repeat = not first and draw(st.booleans())
            fields = [uint(handle), uint(tag) if first else None,
                      struct.pack(">I", tag) if first or repeat else None,
                      uint(fmt) if first or repeat else None, False, more]
            out.append(frame(0x14, fields, b"x" * draw(st.integers(0, 600)), 1))
        if handle != 2:
            want[f"s{handle}"].append((struct.pack(">I", tag), fmt))
    return out, want


@settings(max_examples=200, deadline=None, derandomize=True)
@given(conversations(), st.lists(st.integers(0, 20000), max_size=12))
def test_the_format_of_each_delivery_begun_on_a_sending_link_is_read_whatever_the_cuts(conv, cuts):
    frames, want = conv
    data = HEADER + b"".join(frames)
    scanner = InputFrames(max_frame=65536)
    bounds = [0, *sorted(c for c in cuts if c < len(data)), len(data)]
    passed = []
    for a, b in zip(bounds, bounds[1:]):
        passed += scanner.feed_parts(data[a:b])
    assert b"".join(passed) == data
    assert set(scanner.sent_formats) == {"s0", "s1"}
    for name, entries in want.items():
        assert list(scanner.sent_formats[name].entries) == entries
        for tag, fmt in entries:  # each looked up once, in turn
            assert scanner.sent_formats[name].format_of(tag) == fmt


def test_a_sending_link_is_forgotten_at_its_detach_and_its_session_end():
    scanner = InputFrames(max_frame=65536)
    scanner.feed(HEADER + frame(0x10, ["c"]) + frame(0x11, [None, uint(0), uint(100), uint(100)], b"", 1)
                 + frame(0x12, ["a", uint(0), False], b"", 1) + frame(0x12, ["b", uint(1), False], b"", 1))
    assert set(scanner.sent_formats) == {"a", "b"}
    scanner.feed(frame(0x16, [uint(0), True], b"", 1))
    assert set(scanner.sent_formats) == {"b"}
    scanner.feed(frame(0x17, [], b"", 1))
    assert scanner.sent_formats == {} and scanner._sending == {}
