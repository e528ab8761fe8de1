"""A receiver asked to start past a partition's last event (by sequence number or
offset) is refused as the service refuses it: ``com.microsoft:argument-error``, which
the SDKs do not retry, in the service's words. It used to be attached at the end and
handed the next events, whose positions are below the one it asked for. The next
event's position and any time (past or future) still attach."""
from __future__ import annotations

import threading

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from confluent_kafka import Producer

from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.waits import wait_for
from tests.amqp.conftest import receive


@pytest.fixture(scope="module")
def broker(module_tmp):
    # (the background cleaner's rounds off: a round between a test's writes and its clean_now
    # took the records first, and clean_now removed none: 'assert 0 >= 2' in make test)
    with EmulatedBroker(module_tmp / "data", amqp=True, log_cleaner_interval_ms=3_600_000) as b:
        b.create_hub("five", 1)
        b.create_hub("empty", 1)
        producer = EventHubProducerClient.from_connection_string(b.amqp_connection_string(),
                                                                 eventhub_name="five")
        with producer:
            producer.send_batch([EventData(f"e{i}") for i in range(5)], partition_id="0")
        yield b


def _consumer(broker: EmulatedBroker, hub: str) -> EventHubConsumerClient:
    return EventHubConsumerClient.from_connection_string(
        broker.amqp_connection_string(), consumer_group="$Default", eventhub_name=hub, retry_total=0)


def _last_offset(broker: EmulatedBroker) -> int:
    with _consumer(broker, "five") as client:
        return int(client.get_partition_properties("0")["last_enqueued_offset"])


@pytest.mark.parametrize("position, inclusive, words", [
    (5, False, "The supplied sequence number '5' is invalid. The last sequence number in the system is '4'"),
    (6, True, "The supplied sequence number '6' is invalid. The last sequence number in the system is '4'"),
    (10**15, False, "The supplied sequence number '1000000000000000' is invalid."),
])
def test_a_sequence_number_past_the_end_is_refused(broker, position, inclusive, words):
    with pytest.raises(Exception) as refused:
        receive(_consumer(broker, "five"), 1, timeout=15, until_error=True, partition_id="0",
                starting_position=position, starting_position_inclusive=inclusive)
    assert "argument-error" in str(refused.value) and words in str(refused.value)


def test_an_offset_past_the_last_event_is_refused(broker):
    last = _last_offset(broker)
    for offset in (last + 1, 10**15):
        with pytest.raises(Exception) as refused:
            receive(_consumer(broker, "five"), 1, timeout=15, until_error=True, partition_id="0",
                    starting_position=str(offset))
        assert (f"The supplied offset '{offset}' is invalid. The last offset in the system is '{last}'"
                in str(refused.value))


def test_an_empty_partition_refuses_an_offset_as_the_service_does(broker):
    with pytest.raises(Exception) as refused:
        receive(_consumer(broker, "empty"), 1, timeout=15, until_error=True, partition_id="0",
                starting_position="0")
    assert "The supplied offset '0' is invalid. The last offset in the system is '-1'" in str(refused.value)


@pytest.mark.parametrize("position, inclusive", [(4, False), (5, True), ("@latest", False), ("-1", False)])
def test_the_next_event_and_the_ends_still_attach(broker, position, inclusive):
    """A receiver at the next event's position waits for it; the SDK's starting points
    ("-1", "@latest", the last event exclusive: its reconnection) all attach. (The events
    are sent over Kafka: an SDK producer's handshake cost ~1 s a case, and how they are
    sent is not what this pins.)"""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
    client = _consumer(broker, "five")
    got: list = []
    ready = threading.Event()

    def on_event(context, event):
        if event is not None:
            got.append(event)
            ready.set()

    thread = threading.Thread(target=client.receive, kwargs=dict(
        on_event=on_event, partition_id="0", starting_position=position,
        starting_position_inclusive=inclusive, max_wait_time=1), daemon=True)
    thread.start()
    try:
        for _ in range(150):  # (bounded: sends until the attached receiver gets one)
            producer.produce("five", b"next", partition=0)
            assert producer.flush(10) == 0
            if ready.wait(0.2):
                break
    finally:
        client.close()
        thread.join(15)
    assert got and (position == "-1" or got[0].sequence_number >= 5)



COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "2048", "delete.retention.ms": "0",
             "min.compaction.lag.ms": "0", "min.cleanable.dirty.ratio": "0.01"}


def test_a_reader_past_an_event_compaction_took_still_attaches(broker):
    """The last event (a transactional tombstone, its marker in the next segment) is
    taken by the cleaner after a receiver got it: re-attaching after it (the SDKs'
    reconnection, a checkpoint) waits for the next event, as it did before it went."""
    broker.create_hub("table", 1, configs=COMPACTED)
    plain = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all", "linger.ms": 0})
    plain.produce("table", key=b"k0", value=b"v" * 1810, partition=0)
    plain.flush(10)
    plain.produce("table", key=b"k1", value=b"v1", partition=0)
    plain.flush(10)
    streams = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "table-1"})
    streams.init_transactions(30)
    streams.begin_transaction()
    streams.produce("table", key=b"k1", value=None, partition=0)  # a changelog's delete
    streams.flush(30)
    streams.commit_transaction(30)
    got = receive(_consumer(broker, "table"), 3, timeout=20, partition_id="0", starting_position="-1")
    last = int(got[-1][1].offset)
    runtime = broker.broker.services.default
    cleaned = broker.call(lambda: runtime.cleaner.clean_now("table", 0))
    assert cleaned.records_removed >= 2  # (the tombstone and what it deleted are gone)
    with _consumer(broker, "table") as client:
        assert int(client.get_partition_properties("0")["last_enqueued_offset"]) < last
    assert _first_event_after(broker, "table", str(last), got[-1][1].sequence_number, plain) == b"next"


def _first_event_after(broker, hub: str, position, sequence_number: int, producer: Producer) -> bytes:
    """The first event a receiver of ``hub``'s partition 0 starting after ``position`` (the
    offset of the event numbered ``sequence_number``) gets, once the broker holds it attached
    past that event: a refusal, however slow, fails the test before anything is sent
    (once an event is sent after the position, the position is no longer past the end)."""
    client = _consumer(broker, hub)
    got: list = []
    errors: list = []
    ready = threading.Event()

    def on_event(context, event):
        if event is not None:
            got.append(event.body)
            ready.set()

    def on_error(context, error):
        errors.append(error)
        ready.set()

    server = broker.broker.amqp_server
    key = (broker.broker.services.default.name, hub.lower(), "$default", 0)

    def starts() -> list[int]:  # where the broker's receivers of the partition read next
        return broker.call(lambda: [r.next_offset for r in server.readers.get(key, ())])

    thread = threading.Thread(target=client.receive, kwargs=dict(
        on_event=on_event, on_error=on_error, partition_id="0", starting_position=position,
        max_wait_time=1), daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: errors or starts(), timeout=30) and not errors, \
            errors or "the receiver was neither attached nor refused"
        assert all(start > sequence_number for start in starts()), (starts(), sequence_number)
        for _ in range(100):  # (bounded: sends until the receiver gets one)
            producer.produce(hub, key=b"k2", value=b"next", partition=0)
            producer.flush(10)
            if ready.wait(0.2):
                break
    finally:
        client.close()
        thread.join(15)
    assert not errors, errors
    return b"".join(next(iter(got)))
