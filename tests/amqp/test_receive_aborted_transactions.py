"""AMQP receivers over Kafka transactions: they get what a read_committed Kafka consumer
gets, in the same order, past any run of aborted transactions. A read (1 MiB) that held
only aborted batches and markers used to fail every time (the connection closed with
internal-error, the SDK reconnecting to the same place for ever), and each read searched
the aborted-transaction index once per batch."""
from __future__ import annotations

import random
import threading
import time

import pytest
from azure.eventhub import EventHubConsumerClient
from confluent_kafka import Consumer, Producer

from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import receive, wait_for


@pytest.fixture(scope="module")
def broker(module_tmp):
    with EmulatedBroker(module_tmp / "data", amqp=True) as b:
        yield b


def _received(broker: EmulatedBroker, hub: str, count: int) -> list[bytes]:
    client = EventHubConsumerClient.from_connection_string(
        broker.amqp_connection_string(), consumer_group="$Default", eventhub_name=hub)
    return [event.body_as_str().encode() for _, event in
            receive(client, count, timeout=30, partition_id="0", starting_position="-1")]


def _read_committed(broker: EmulatedBroker, hub: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"rc-{hub}",
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    consumer.subscribe([hub])
    got: list[bytes] = []
    try:
        for _ in range(300):  # (bounded: 300 polls of at most 0.1 s)
            if len(got) >= count:
                break
            message = consumer.poll(0.1)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    return got


def test_a_receiver_reads_past_an_aborted_transaction_larger_than_a_read(broker):
    broker.create_hub("big-abort", 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "big-abort"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for _ in range(1500):  # about 1.5 MB: more than one read (READ_BYTES, 1 MiB)
        producer.produce("big-abort", value=b"x" * 1000, partition=0)
    producer.flush(30)
    producer.abort_transaction(30)
    plain = Producer({"bootstrap.servers": broker.bootstrap_servers})
    plain.produce("big-abort", value=b"after the aborted transaction", partition=0)
    plain.flush(30)
    assert _received(broker, "big-abort", 1) == [b"after the aborted transaction"]


def test_a_receiver_gets_what_read_committed_gets_from_interleaved_transactions(broker):
    """Two transactional producers and a plain one interleave in one partition, each
    transaction committed or aborted by a seeded choice."""
    broker.create_hub("mixed", 1)
    rng = random.Random(4601)
    servers = broker.bootstrap_servers
    producers = [Producer({"bootstrap.servers": servers, "transactional.id": f"mixed-{i}", "linger.ms": 0})
                 for i in range(2)]
    plain = Producer({"bootstrap.servers": servers, "linger.ms": 0})
    for producer in producers:
        producer.init_transactions(30)
    expected: list[bytes] = []
    for round_ in range(12):
        for producer in producers:
            producer.begin_transaction()
        sent: list[list[bytes]] = [[], []]
        for step in range(8):
            who = rng.randrange(3)
            body = b"r%d-s%d-p%d" % (round_, step, who)
            if who == 2:
                plain.produce("mixed", body, partition=0)
                plain.flush(30)  # (in the log where it was sent, between the transactions' batches)
                expected.append(body)
            else:
                producers[who].produce("mixed", body, partition=0)
                producers[who].flush(30)
                sent[who].append(body)
        for who in rng.sample(range(2), 2):  # markers in a seeded order too
            if rng.random() < 0.5:
                producers[who].commit_transaction(30)
                committed = sent[who]
            else:
                producers[who].abort_transaction(30)
                committed = []
            expected.extend(committed)
    plain.produce("mixed", b"end", partition=0)  # (an aborted event served last would show before it)
    plain.flush(30)
    expected.append(b"end")
    reference = _read_committed(broker, "mixed", len(expected))
    assert sorted(reference) == sorted(expected)  # (the model, up to the order committed data lands in)
    assert reference[-1] == b"end"
    assert _received(broker, "mixed", len(reference)) == reference


def test_a_receiver_in_a_gap_below_an_open_transaction_waits(broker):
    """Compaction took offsets 1-2 and a transaction is open at 3 (the last stable
    offset): a receiver at 1 waits for the transaction, reading nothing meanwhile (it
    re-read the same batches without end, a core of the broker's loop), then gets it."""
    broker.create_hub("gap", 1, configs={"cleanup.policy": "compact", "segment.bytes": "2048",
                                         "delete.retention.ms": "0", "min.compaction.lag.ms": "0",
                                         "min.cleanable.dirty.ratio": "0.01"})
    plain = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all", "linger.ms": 0})
    for key, value in ((b"k0", b"v" * 1700), (b"k1", b"v1"), (b"k1", None)):
        plain.produce("gap", key=key, value=value, partition=0)
        plain.flush(10)
    open_txn = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "gap-open",
                         "transaction.timeout.ms": 60000})
    open_txn.init_transactions(30)
    open_txn.begin_transaction()
    open_txn.produce("gap", key=b"k9", value=b"x" * 400, partition=0)  # (rolls the segment)
    open_txn.flush(30)
    runtime = broker.broker.services.default
    plog = runtime.topics.log("gap", 0)
    broker.call(lambda: runtime.cleaner.clean_now("gap", 0))
    assert broker.call(lambda: (plog.segments[-1].base_offset, plog.last_stable_offset)) == (3, 3)

    reads = []
    stored_batches = plog.stored_batches
    plog.stored_batches = lambda *args, **kwargs: reads.append(args) or stored_batches(*args, **kwargs)
    client = EventHubConsumerClient.from_connection_string(
        broker.amqp_connection_string(), consumer_group="$Default", eventhub_name="gap", retry_total=0)
    got: list = []
    thread = threading.Thread(target=client.receive, kwargs=dict(
        on_event=lambda context, event: got.append(event.body_as_str()) if event is not None else None,
        partition_id="0", starting_position=1, starting_position_inclusive=True, max_wait_time=1), daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: reads, timeout=20), "the receiver never read the partition"
        seen = len(reads)
        time.sleep(1)  # (an interval to count reads in: a spinning receiver makes thousands)
        assert len(reads) - seen < 10 and not got
        open_txn.commit_transaction(30)
        wait_for(lambda: got, timeout=20)
        assert got == ["x" * 400]
    finally:
        plog.stored_batches = stored_batches
        client.close()
        thread.join(15)
