"""An AMQP sender's message reaches AMQP receivers as it was sent: body type and
sections (several data sections, an amqp-value, an amqp-sequence), header,
message and delivery annotations, properties, application properties and footer,
sent by EventHubProducerClient and received by EventHubConsumerClient. Kafka
consumers see the documented mapping: the value is the body, and a plain data
body has no header of ours."""
from __future__ import annotations

import random

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.eventhub.amqp import AmqpAnnotatedMessage, AmqpMessageBodyType
from confluent_kafka import Consumer, TopicPartition

from kafka_wire.log import batch as rb
from kafka_wire.testing import EmulatedBroker

from .conftest import receive, sdk_cs

RESERVED = rb.AMQP_PROPERTIES_HEADER


def _message(body: dict, rng: random.Random) -> AmqpAnnotatedMessage:
    tag = rng.randrange(1 << 30)
    return AmqpAnnotatedMessage(
        **body,
        header={"priority": 7, "durable": True, "time_to_live": 60_000 + tag % 1000},
        footer={"footer-key": f"footer {tag}"},
        annotations={"x-user-annotation": f"ann {tag}", "x-count": tag},
        delivery_annotations={"x-delivery": f"da {tag}"},
        properties={"message_id": f"id-{tag}", "content_type": "application/x-test",
                    "subject": "fidelity", "correlation_id": f"corr-{tag}"},
        application_properties={"app": f"value {tag}", "n": tag, "flag": True},
    )


BODIES = {
    "data-sections": {"data_body": [b"first section", b"", b"\x00\x01third"]},
    "value": {"value_body": {"k": [1, "two", 3.5], "nested": {"a": None}}},
    "sequence": {"sequence_body": [[1, "a"], [2, "b"], [b"raw", True]]},
}


@pytest.fixture(scope="module")
def hub_broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("fidelity") / "data", amqp=True) as b:
        b.create_hub("fidelity", 1)
        b.create_hub("plain", 1)
        yield b


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def _sent_and_received(broker, hub: str, messages: list) -> list:
    """``messages`` sent in one batch, and the events a consumer reads back for them."""
    before = _end(broker, hub)
    with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub) as p:
        batch = p.create_batch(partition_id="0")
        for m in messages:
            batch.add(m)
        p.send_batch(batch)
    consumer = EventHubConsumerClient.from_connection_string(
        sdk_cs(broker), consumer_group="$Default", eventhub_name=hub)
    got = receive(consumer, before + len(messages), partition_id="0", starting_position="-1")
    return [event for _pid, event in got[before:]]


@pytest.mark.parametrize("kind", sorted(BODIES))
def test_each_body_type_comes_back_with_every_section(hub_broker, kind):
    rng = random.Random(f"fidelity-{kind}")
    sent = _message(BODIES[kind], rng)
    (event,) = _sent_and_received(hub_broker, "fidelity", [sent])
    got = event.raw_amqp_message
    assert got.body_type == sent.body_type
    if kind == "data-sections":
        assert list(got.body) == BODIES[kind]["data_body"]  # three sections, not one joined
    elif kind == "sequence":
        # three sequence sections (the SDK decodes strings to bytes, so both sides are plain)
        assert _plain(list(got.body)) == _plain(BODIES[kind]["sequence_body"])
    else:
        assert _plain(got.body) == BODIES[kind]["value_body"]
    assert (got.header.priority, got.header.durable, got.header.time_to_live) == \
           (sent.header.priority, sent.header.durable, sent.header.time_to_live)
    assert _plain(got.footer) == _plain(sent.footer)
    assert _plain(got.delivery_annotations) == _plain(sent.delivery_annotations)
    annotations = _plain(got.annotations)
    for k, v in _plain(sent.annotations).items():
        assert annotations[k] == v
    assert annotations["x-opt-sequence-number"] == event.sequence_number  # the service's, too
    for field in ("message_id", "content_type", "subject", "correlation_id"):
        assert _text(getattr(got.properties, field)) == _text(getattr(sent.properties, field))
    assert _plain(got.application_properties) == _plain(sent.application_properties)


def _plain(value):
    """Decoded AMQP as plain Python (the SDK hands back bytes for strings in places)."""
    if isinstance(value, dict):
        return {_text(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return _text(value)


def _end(broker, hub: str) -> int:
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "ends"})
    try:
        return c.get_watermark_offsets(TopicPartition(hub, 0), timeout=10)[1]
    finally:
        c.close()


def _records(broker, hub: str) -> list:
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"read-{hub}",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(hub, 0, 0)])
        end = _end(broker, hub)
        out = []
        while len(out) < end:
            m = c.poll(10)
            assert m is not None, f"{len(out)} of {end} records"
            out.append(m)
        return out
    finally:
        c.close()


def test_kafka_consumers_see_the_body_and_a_plain_event_unchanged(hub_broker):
    rng = random.Random("fidelity-kafka")
    several = _message(BODIES["data-sections"], rng)
    _sent_and_received(hub_broker, "plain", [EventData(b"plain body"), several])
    plain, joined = _records(hub_broker, "plain")[-2:]
    assert plain.value() == b"plain body" and not plain.headers()  # as before: no header of ours
    assert joined.value() == b"".join(BODIES["data-sections"]["data_body"])
    names = [n for n, _ in joined.headers()]
    assert RESERVED in names and "app" in names


def test_a_plain_event_is_what_it_was(hub_broker):
    (event,) = _sent_and_received(hub_broker, "plain", [EventData(b"x")])
    got = event.raw_amqp_message
    assert got.body_type == AmqpMessageBodyType.DATA and list(got.body) == [b"x"]
    assert not got.footer and not got.delivery_annotations
