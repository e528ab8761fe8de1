"""Events of unusual shapes in an SDK batch: one whose encoding is empty (an
AmqpAnnotatedMessage without a body, which EventDataBatch.add takes and counts) is an
event with no body, never a reason to take the batch for one message; an application
property named as the broker's reserved header (``x-opt-amqp-properties``) is the
application's, delivered back as sent."""
from __future__ import annotations

import json
import threading
import urllib.request

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.eventhub.amqp import AmqpAnnotatedMessage
from confluent_kafka import Consumer, TopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch
from proton import Message

from kafka_wire.capture.events import EventBatch, decode_batch
from kafka_wire.amqp.messages import batch_messages, decode_message, encode_event, is_batch, split_batch
from kafka_wire.eventhubs.events import Incoming, records_batch
from kafka_wire.log import batch as rb
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import sdk_cs, wait_for
from tests.amqp.test_messages import amqp_values, decoded, encoded

RESERVED = rb.AMQP_PROPERTIES_HEADER


def _read_amqp(broker: EmulatedBroker, hub: str, count: int) -> list:
    client = EventHubConsumerClient.from_connection_string(sdk_cs(broker), consumer_group="$Default",
                                                           eventhub_name=hub)
    got: list = []
    thread = threading.Thread(target=client.receive_batch, kwargs=dict(
        on_event_batch=lambda ctx, events: got.extend(events), partition_id="0",
        starting_position="-1", max_batch_size=100, max_wait_time=1), daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: len(got) >= count, timeout=30), f"{len(got)} of {count} received"
    finally:
        client.close()
        thread.join(30)
    return got


def _read_kafka(broker: EmulatedBroker, hub: str, count: int) -> list:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "shapes",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(hub, 0, 0)])
    out: list = []
    try:
        for _ in range(100):  # bounded: 0.2 s each
            for m in consumer.consume(100, 0.2):
                assert m.error() is None, m.error()
                out.append(m)
            if len(out) >= count:
                break
    finally:
        consumer.close()
    return out


def test_an_event_without_a_body_in_a_batch_is_one_event_with_no_body(tmp_path):
    with EmulatedBroker(tmp_path / "data", amqp=True) as broker:
        broker.create_hub("shapes", 1)
        with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name="shapes") as p:
            for empty in (AmqpAnnotatedMessage(data_body=[]), AmqpAnnotatedMessage(value_body=None)):
                batch = p.create_batch(partition_id="0")
                for event in (EventData("first"), empty, EventData("third")):
                    batch.add(event)
                p.send_batch(batch)
            assert p.get_partition_properties("0")["last_enqueued_sequence_number"] == 5
        got = _read_amqp(broker, "shapes", 6)
        assert [b"".join(e.body) for e in got] == [b"first", b"", b"third"] * 2
        assert [m.value() for m in _read_kafka(broker, "shapes", 6)] == [b"first", None, b"third"] * 2


def test_an_application_property_named_as_the_reserved_header_is_delivered(tmp_path):
    with EmulatedBroker(tmp_path / "data", amqp=True, http=True) as broker:
        broker.create_hub("names", 1)
        plain = EventData("one")
        plain.properties = {RESERVED: "user value", "other": "kept"}
        with_id = EventData("two")
        with_id.properties = {RESERVED: "user value 2"}
        with_id.message_id = "mid-2"
        with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name="names") as p:
            p.send_batch([plain, with_id], partition_id="0")
        got = _read_amqp(broker, "names", 2)
        assert [e.properties for e in got] == [{RESERVED.encode(): b"user value", b"other": b"kept"},
                                               {RESERVED.encode(): b"user value 2"}]
        assert [e.message_id for e in got] == [None, "mid-2"]
        # Kafka consumers see the property as a header (AMQP-encoded), and the reserved one last.
        records = _read_kafka(broker, "names", 2)
        assert [m.headers()[0] for m in records] == [(RESERVED, encoded("user value")),
                                                     (RESERVED, encoded("user value 2"))]
        assert all(m.headers()[-1][0] == RESERVED for m in records)
        # Capture's files and the console show it among the properties too (only the last
        # header of that name is the front ends' own).
        plog = broker.broker.services.default.topics.log("names", 0)
        captured = EventBatch()
        for position, append_ms, data in broker.call(lambda: plog.stored_batches(0, 1 << 20)):
            decode_batch(data, position, append_ms, captured)
        assert [dict(h) for h in captured.headers] == [{RESERVED: "user value", "other": "kept"},
                                                       {RESERVED: "user value 2"}]
        ns = broker.broker.services.default.name
        url = f"{broker.http_url}/api/namespaces/{ns}/hubs/names/partitions/0/events?from=earliest"
        with urllib.request.urlopen(url, timeout=20) as answer:
            shown = json.loads(answer.read())["events"]
        assert [[(h["name"], h["value"]) for h in e["headers"]] for e in shown] == [
            [(RESERVED, "user value"), ("other", "kept")], [(RESERVED, "user value 2")]]
        assert shown[1]["properties"]["message_id"] == "mid-2"


def _batch(sections: list[bytes]) -> bytes:
    raw = bytes(Message(body=None).encode())
    for section in sections:
        raw += b"\x00\x53\x75\xb0" + len(section).to_bytes(4, "big") + section
    return raw


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.one_of(st.just(b""), st.binary(max_size=40).map(
    lambda b: bytes(Message(body=b, inferred=True).encode()))), min_size=1, max_size=6))
def test_every_section_of_a_batch_is_one_event_empty_ones_included(sections):
    message = decode_message(_batch(sections))
    found = batch_messages(message)
    if sections == [b""]:  # one empty data section: a plain message's empty body
        assert found is None and not is_batch(message)
        return
    assert found is not None and is_batch(message)
    assert len(found) == len(sections)
    assert found == split_batch(message)
    assert [m.body is None for m in found] == [s == b"" for s in sections]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(props=st.lists(st.tuples(st.sampled_from([RESERVED, "a", "b"]), amqp_values), max_size=4),
       message_id=st.one_of(st.none(), st.text(min_size=1, max_size=20)),
       body=st.binary(max_size=50))
def test_application_properties_of_any_name_come_back_as_sent(props, message_id, body):
    """A message with application properties (the reserved name among them, or not) and
    maybe a properties section, stored and delivered: the receiver gets both back."""
    sent = Message(body=body, inferred=True, id=message_id)
    sent.properties = dict(props)
    (incoming,) = [decode_message(bytes(sent.encode()))]
    (record,) = list(DefaultRecordBatch(bytes(records_batch([incoming], now_ms=1_700_000_000_000))))
    assert sum(1 for name, _v in record.headers if name == RESERVED) <= 2
    back = decoded(encode_event(0, 0, 0, record.key, record.value, record.headers, True))
    assert (back.properties or {}) == dict(props)
    assert back.id == message_id
    assert bytes(back.body) == body


def test_a_kafka_record_with_a_header_of_the_reserved_name_is_read_as_its_headers():
    """A batch a Kafka client wrote (no AMQP flag): every header an application property."""
    headers = [(RESERVED, b"kafka's"), ("x", b"1")]
    back = decoded(encode_event(0, 0, 0, None, b"v", headers, False))
    assert back.properties == {RESERVED: b"kafka's", "x": b"1"}


def test_an_old_record_with_the_reserved_header_last_still_restores_it():
    """What records_batch always wrote: the reserved header last, read as the sections."""
    incoming = decode_message(bytes(Message(body=b"x", inferred=True, id="m1").encode()))
    assert isinstance(incoming, Incoming) and incoming.amqp_only is not None
    (record,) = list(DefaultRecordBatch(bytes(records_batch([incoming], now_ms=1))))
    assert [name for name, _v in record.headers] == [RESERVED]
    assert decoded(encode_event(0, 0, 0, None, record.value, record.headers, True)).id == "m1"
