"""An AMQP receiver's reads decide which batches a read_committed reader skips
(log.read_committed.CommittedFilter) only when they meet a transactional batch or a
marker: a partition without transactions (what the SDKs write) pays nothing for it.
Each read (a credit window, up to 1 MiB) used to make a filter and parse its last
batch's header for the filter's bound, transactions or not."""
from __future__ import annotations

import threading

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from confluent_kafka import Producer

from kafka_wire.amqp import consume
from kafka_wire.log.read_committed import CommittedFilter
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import receive


@pytest.fixture(scope="module")
def broker(module_tmp):
    with EmulatedBroker(module_tmp / "data", amqp=True) as b:
        yield b


@pytest.fixture
def filters(monkeypatch) -> list:
    """The filters receivers make, in order (the real class, counted)."""
    made: list = []

    class Counted(CommittedFilter):
        __slots__ = ()

        def __init__(self, plog, first: int, upper: int) -> None:
            made.append((first, upper))
            super().__init__(plog, first, upper)

    monkeypatch.setattr(consume, "CommittedFilter", Counted)
    return made


def _received(broker: EmulatedBroker, hub: str, count: int) -> list[bytes]:
    client = EventHubConsumerClient.from_connection_string(
        broker.amqp_connection_string(), consumer_group="$Default", eventhub_name=hub)
    return [b"".join(event.body) for _, event in
            receive(client, count, timeout=30, partition_id="0", starting_position="-1")]


def test_reads_of_a_partition_without_transactions_make_no_filter(broker, filters):
    broker.create_hub("plain", 1)
    bodies = [b"%05d" % i + b"x" * 995 for i in range(3000)]  # about 3 MB: several reads
    with EventHubProducerClient.from_connection_string(broker.amqp_connection_string(),
                                                       eventhub_name="plain") as producer:
        for i in range(0, len(bodies), 500):
            producer.send_batch([EventData(body) for body in bodies[i:i + 500]], partition_id="0")
    assert _received(broker, "plain", len(bodies)) == bodies
    assert filters == []


def test_only_a_read_that_meets_a_transaction_makes_a_filter(broker, filters):
    """The read that meets the transactions makes one, bounded by where it started and
    its last batch's end, and still hides what was aborted; the reads after them (an
    event sent once the receiver has the others) make none."""
    broker.create_hub("mixed", 1)
    plain = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 0})
    plain.produce("mixed", value=b"before", partition=0)
    plain.flush(30)
    txn = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "mixed-1"})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce("mixed", value=b"aborted", partition=0)
    txn.flush(30)
    txn.abort_transaction(30)
    txn.begin_transaction()
    txn.produce("mixed", value=b"committed", partition=0)
    txn.commit_transaction(30)
    plain.produce("mixed", value=b"after", partition=0)  # offset 5, after two markers
    plain.flush(30)
    got: list[bytes] = []
    three, four = threading.Event(), threading.Event()

    def on_event(context, event):
        if event is not None:
            got.append(b"".join(event.body))
            (three if len(got) == 3 else four if len(got) == 4 else threading.Event()).set()

    client = EventHubConsumerClient.from_connection_string(
        broker.amqp_connection_string(), consumer_group="$Default", eventhub_name="mixed")
    thread = threading.Thread(target=client.receive, kwargs=dict(
        on_event=on_event, partition_id="0", starting_position="-1", max_wait_time=1), daemon=True)
    thread.start()
    try:
        assert three.wait(30), got
        plain.produce("mixed", value=b"later", partition=0)  # read from offset 6 on
        plain.flush(30)
        assert four.wait(30), got
    finally:
        client.close()
        thread.join(15)
    assert got == [b"before", b"committed", b"after", b"later"]
    assert filters == [(0, 6)]
