"""The public hypothesis strategies produce what they promise, checked against the broker."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.eventhubs.connection_string import parse as parse_connection_string
from kafka_wire.testing import strategies as kw
from kafka_wire.topics import topic_name_error


@given(kw.topic_names())
def test_topic_names_are_legal(name):
    assert topic_name_error(name) is None


@given(kw.illegal_topic_names())
def test_illegal_topic_names_are_refused(name):
    assert topic_name_error(name) is not None


@settings(max_examples=30, deadline=None)
@given(st.lists(kw.records(max_value=64), min_size=1, max_size=20))
def test_generated_records_round_trip_through_the_broker(kafka_wire_session, records):
    from confluent_kafka import Consumer, Producer, TopicPartition
    import uuid

    topic = f"prop-{uuid.uuid4().hex[:8]}"
    kafka_wire_session.create_hub(topic)
    p = Producer({"bootstrap.servers": kafka_wire_session.bootstrap_servers, "acks": "all",
                  "message.timeout.ms": 10000})
    for r in records:
        kwargs = {"timestamp": r.timestamp_ms} if r.timestamp_ms is not None else {}
        p.produce(topic, value=r.value, key=r.key, headers=list(r.headers), **kwargs)
    assert p.flush(10) == 0
    c = Consumer({"bootstrap.servers": kafka_wire_session.bootstrap_servers, "group.id": "p"})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    for _ in range(100):
        m = c.poll(0.1)
        if m is not None and not m.error():
            got.append(m)
        if len(got) == len(records):
            break
    c.close()
    assert [(m.key(), m.value(), m.headers() or []) for m in got] == \
           [(r.key, r.value, list(r.headers)) for r in records]


@given(kw.connection_strings(namespace="contoso", hub="orders"))
def test_connection_strings_parse(text):
    parsed = parse_connection_string(text)
    assert parsed.entity_path == "orders"
