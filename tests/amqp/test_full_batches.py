"""A batch the SDK fills to the link's max-message-size is accepted whatever its events'
sizes: the service limits the publication (the AMQP message), and the SDKs size batches by
it. Stored, a full batch of small events (56-128 B) is larger than sent (a record's offset
varint takes 3 bytes past 8,191 records), so the broker stores such a publication as
several record batches, each within the partition's max.message.bytes, appended at once:
read back in order, over AMQP and Kafka."""
from __future__ import annotations

import random
import threading

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from confluent_kafka import Consumer, TopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from kafka_wire.eventhubs.events import Incoming, PlainEvents, records_batch
from kafka_wire.eventhubs.publication import _split_batches
from kafka_wire.log import batch as rb
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import sdk_cs, wait_for

LIMIT = 1_048_576  # the publication limit (Standard) and the hubs' max.message.bytes


def _full_batch(producer, make) -> list[bytes]:
    """A batch filled by the SDK until it takes no more: the bodies, sent."""
    batch = producer.create_batch(partition_id="0")
    assert batch.max_size_in_bytes == LIMIT
    bodies = []
    while True:
        body = make()
        try:
            batch.add(EventData(body))
        except ValueError:  # full
            break
        bodies.append(body)
    producer.send_batch(batch)
    return bodies


def _read_amqp(broker: EmulatedBroker, hub: str, count: int) -> list[bytes]:
    client = EventHubConsumerClient.from_connection_string(sdk_cs(broker), consumer_group="$Default",
                                                           eventhub_name=hub)
    got: list = []
    thread = threading.Thread(target=client.receive_batch, kwargs=dict(
        on_event_batch=lambda ctx, events: got.extend(events), partition_id="0",
        starting_position="-1", prefetch=3000, max_batch_size=3000, max_wait_time=1), daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: len(got) >= count, timeout=120), f"{len(got)} of {count} received"
    finally:
        client.close()
        thread.join(30)
    assert [e.sequence_number for e in got] == list(range(count))
    return [b"".join(e.body) for e in got]


def _read_kafka(broker: EmulatedBroker, hub: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": "full-batches",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(hub, 0, 0)])
    out: list[bytes] = []
    try:
        for _ in range(600):  # bounded: 0.2 s each
            for m in consumer.consume(1000, 0.2):
                assert m.error() is None, m.error()
                out.append(m.value())
            if len(out) >= count:
                break
    finally:
        consumer.close()
    return out


def test_full_batches_of_small_events_are_accepted_and_read_back(tmp_path):
    rng = random.Random(4601)
    sent: list[bytes] = []
    with EmulatedBroker(tmp_path / "data", amqp=True) as broker:
        broker.create_hub("full", 1)
        with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name="full") as p:
            for size in (56, 64, 72, 80, 100, 119, 128):  # one size a batch (the broker's alike path)
                sent += _full_batch(p, lambda: rng.randbytes(size))
            sent += _full_batch(p, lambda: rng.randbytes(rng.randint(56, 128)))  # sizes mixed
            props = p.get_partition_properties("0")
        assert props["last_enqueued_sequence_number"] == len(sent) - 1
        segments = sorted((tmp_path / "data").rglob("full-0/*.log"))
        batches = [h for seg in segments for _pos, h in rb.iter_batches(seg.read_bytes())]
        assert sum(h.records_count for h in batches) == len(sent)
        assert len(batches) > 8 and max(h.size for h in batches) <= LIMIT  # (some split)
        assert _read_amqp(broker, "full", len(sent)) == sent
        assert _read_kafka(broker, "full", len(sent)) == sent


def test_a_publication_past_the_hubs_max_message_bytes_is_stored_in_several_batches(tmp_path):
    """Events with properties (the general path) on a hub whose max.message.bytes is below
    the publication limit: one send, one outcome, every event read back with its properties."""
    rng = random.Random(4602)
    with EmulatedBroker(tmp_path / "data", amqp=True) as broker:
        broker.create_hub("small", 1, {"max.message.bytes": "20000"})
        events = []
        for i in range(500):
            e = EventData(rng.randbytes(rng.randint(1, 300)))
            e.properties = {"i": i}
            events.append(e)
        with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name="small") as p:
            p.send_batch(events, partition_id="0")
        client = EventHubConsumerClient.from_connection_string(sdk_cs(broker), consumer_group="$Default",
                                                               eventhub_name="small")
        got: list = []
        thread = threading.Thread(target=client.receive_batch, kwargs=dict(
            on_event_batch=lambda ctx, evs: got.extend(evs), partition_id="0", starting_position="-1",
            max_batch_size=500, max_wait_time=1), daemon=True)
        thread.start()
        try:
            assert wait_for(lambda: len(got) >= 500, timeout=60), f"{len(got)} of 500 received"
        finally:
            client.close()
            thread.join(30)
        assert [e.properties[b"i"] for e in got] == list(range(500))
        assert [b"".join(e.body) for e in got] == [b"".join(e.body) for e in events]
        assert _read_kafka(broker, "small", 500) == [b"".join(e.body) for e in events]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(sizes=st.lists(st.integers(0, 400), min_size=2, max_size=300), limit=st.integers(200, 20_000),
       plain=st.booleans(), stamped=st.booleans())
def test_split_batches_hold_the_events_in_order_each_within_the_limit(sizes, limit, plain, stamped):
    bodies = [bytes([i % 251]) * n for i, n in enumerate(sizes)]
    events = (PlainEvents("k", bodies) if plain
              else [Incoming("k", [(b"i", b"\x54" + bytes([i % 256]))], body, [body]) for i, body in enumerate(bodies)])
    one = bytes(records_batch(events, 1_700_000_000_000, log_append_time=stamped))
    # (as publish_batch calls it: ``over`` when the one batch is too large)
    blob, headers = _split_batches(events, 1_700_000_000_000, stamped, limit, over=len(one) > limit)
    assert rb.validate_records(blob) == headers  # whole batches, CRCs right, nothing after them
    assert all(h.size <= limit or h.records_count == 1 for h in headers)
    values = [r.value for h, pos in zip(headers, _positions(headers))
              for r in DefaultRecordBatch(bytes(blob[pos:pos + h.size]))]
    assert values == [r.value for r in DefaultRecordBatch(one)] == bodies


def _positions(headers):
    pos = 0
    for h in headers:
        yield pos
        pos += h.size


def test_a_split_publication_is_replicated_as_stored(tmp_path):
    """Geo-replication (synchronous) ships the publication's record batches to the
    secondary as the primary stored them."""
    from tests.geo.conftest import geo, geo_broker, stored
    rng = random.Random(4603)
    with geo_broker(tmp_path, amqp=True, partitions=1) as broker:
        with EventHubProducerClient.from_connection_string(broker.amqp_connection_string(),
                                                           eventhub_name="orders") as p:
            sent = _full_batch(p, lambda: rng.randbytes(100))
        primary, secondary = broker.call(lambda: (geo(broker).primary_location,
                                                  geo(broker).replicas[1].location))
        held = stored(broker, primary)
        batches = [h for _pos, h in rb.iter_batches(held)]
        assert len(batches) > 1 and sum(h.records_count for h in batches) == len(sent)
        assert wait_for(lambda: stored(broker, secondary) == held, timeout=30)
