"""A partition's last enqueued event, in ``$management``'s partition properties and in
a receiver's runtime metric, is the last one a receiver can get: not a Kafka
transaction's marker (a control record no receiver is sent), not an event of an aborted
transaction, not one of a transaction still open (receivers stop at the last stable
offset). A partition holding only markers and aborted events is empty."""
from __future__ import annotations

import threading

import pytest
from azure.eventhub import EventHubConsumerClient
from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import produce, wait_for


@pytest.fixture(scope="module")
def broker(module_tmp):
    with EmulatedBroker(module_tmp / "data", amqp=True) as b:
        yield b


def _transaction(broker: EmulatedBroker, hub: str, bodies: list[bytes], commit: bool, tid: str,
                 batch_each: bool = False) -> None:
    """``bodies`` sent to partition 0 of ``hub`` in one transaction (``batch_each``: a
    batch each), committed or aborted, and its marker in the log (the high watermark
    past it) before this returns."""
    before = _high_watermark(broker, hub)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": tid,
                         "linger.ms": 0})
    producer.init_transactions(30)
    producer.begin_transaction()
    for body in bodies:
        producer.produce(hub, body, partition=0)
        if batch_each:
            producer.flush(30)
    producer.flush(30)
    if commit:
        producer.commit_transaction(30)
    else:
        producer.abort_transaction(30)
    assert wait_for(lambda: _high_watermark(broker, hub) == before + len(bodies) + 1)


def _high_watermark(broker: EmulatedBroker, hub: str) -> int:
    # read_uncommitted: librdkafka's default (read_committed) answers the last stable
    # offset, which stays before an open transaction's events
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "hw",
                         "isolation.level": "read_uncommitted"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(hub, 0), timeout=10, cached=False)[1]
    finally:
        consumer.close()


def _properties(broker: EmulatedBroker, hub: str) -> dict:
    client = EventHubConsumerClient.from_connection_string(
        broker.amqp_connection_string(), consumer_group="$Default", eventhub_name=hub)
    with client:
        return client.get_partition_properties("0")


def _received(broker: EmulatedBroker, hub: str, count: int) -> tuple[list, dict]:
    """The first ``count`` events a receiver of partition 0 gets, and the runtime metric
    (the last enqueued event's properties) that came with the last of them."""
    client = EventHubConsumerClient.from_connection_string(
        broker.amqp_connection_string(), consumer_group="$Default", eventhub_name=hub)
    events, metric, done = [], {}, threading.Event()

    def on_event(context, event):
        if event is not None and len(events) < count:
            events.append(event)
            metric.update(context.last_enqueued_event_properties or {})
            if len(events) == count:
                done.set()

    thread = threading.Thread(target=client.receive, daemon=True, kwargs=dict(
        on_event=on_event, partition_id="0", starting_position="-1", max_wait_time=1,
        track_last_enqueued_event_properties=True))
    thread.start()
    done.wait(30)
    client.close()
    thread.join(15)
    assert len(events) == count
    return events, metric


def test_the_last_event_of_a_committed_transaction_is_the_last_enqueued(broker: EmulatedBroker):
    broker.create_hub("txn-committed", 1)
    _transaction(broker, "txn-committed", [b"e0", b"e1", b"e2"], True, "committed")
    events, metric = _received(broker, "txn-committed", 3)
    assert [e.sequence_number for e in events] == [0, 1, 2]
    props = _properties(broker, "txn-committed")
    # before the fix: 3, the commit marker's, which no receiver is ever sent
    assert props["last_enqueued_sequence_number"] == 2
    assert props["last_enqueued_offset"] == str(events[-1].offset)
    assert props["last_enqueued_time_utc"] == events[-1].enqueued_time
    assert props["beginning_sequence_number"] == 0 and not props["is_empty"]
    assert metric["sequence_number"] == 2 and metric["offset"] == str(events[-1].offset)


def test_aborted_events_and_markers_are_not_the_last_enqueued(broker: EmulatedBroker):
    broker.create_hub("txn-aborted", 1)
    produce(broker, "txn-aborted", {0: [b"a", b"b"]})
    _transaction(broker, "txn-aborted", [b"x", b"y", b"z"], False, "aborted")
    props = _properties(broker, "txn-aborted")
    assert props["last_enqueued_sequence_number"] == 1  # before the fix: 5, the abort marker's
    assert not props["is_empty"]
    events, metric = _received(broker, "txn-aborted", 2)
    assert [e.sequence_number for e in events] == [0, 1]
    assert props["last_enqueued_offset"] == str(events[-1].offset)
    assert metric["sequence_number"] == 1


def test_aborted_batches_over_several_segments_are_stepped_over(broker: EmulatedBroker):
    # segments of two or three batches: the aborted ones and the marker span three
    broker.create_hub("txn-segments", 1, {"segment.bytes": "1024"})
    produce(broker, "txn-segments", {0: [b"a", b"b"]})
    _transaction(broker, "txn-segments", [b"x" * 300] * 6, False, "segments", batch_each=True)
    props = _properties(broker, "txn-segments")
    assert props["last_enqueued_sequence_number"] == 1  # before the fix: 8, the abort marker's
    events, _ = _received(broker, "txn-segments", 2)
    assert props["last_enqueued_offset"] == str(events[-1].offset) and not props["is_empty"]


def test_a_partition_of_only_an_aborted_transaction_is_empty(broker: EmulatedBroker):
    broker.create_hub("txn-only-aborted", 1)
    _transaction(broker, "txn-only-aborted", [b"x", b"y"], False, "only-aborted")
    props = _properties(broker, "txn-only-aborted")
    assert props["is_empty"]  # before the fix: not empty, its last event the marker (2)
    assert props["last_enqueued_sequence_number"] == -1
    assert props["beginning_sequence_number"] == -1
    assert props["last_enqueued_offset"] == "-1"


def test_events_of_an_open_transaction_are_not_yet_enqueued(broker: EmulatedBroker):
    broker.create_hub("txn-open", 1)
    produce(broker, "txn-open", {0: [b"a", b"b"]})
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "open"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for body in (b"x", b"y"):
        producer.produce("txn-open", body, partition=0)
    producer.flush(30)
    assert wait_for(lambda: _high_watermark(broker, "txn-open") == 4)
    props = _properties(broker, "txn-open")
    assert props["last_enqueued_sequence_number"] == 1  # before the fix: 3, not yet readable
    producer.commit_transaction(30)
    assert wait_for(lambda: _high_watermark(broker, "txn-open") == 5)
    assert _properties(broker, "txn-open")["last_enqueued_sequence_number"] == 3
