"""What a receiver's events cost the broker's memory: the Python SDK never settles
what it receives, so the broker settles each delivery itself once the link has sent
all it has (proton kept every one, with its buffer, for the link's life), and a
closed connection's proton objects are freed (the check of the token that authorized
a link held them until the token expired)."""
from __future__ import annotations

import gc
import threading
import weakref

from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from cproton import lib as pn

from kafka_wire.amqp import consume
from kafka_wire.testing import EmulatedBroker

from .conftest import sdk_cs, wait_for

EVENTS = 600


def _receiving(broker, hub: str, count: int):
    """An SDK consumer of partition 0 from its start, on a thread; (client, got, thread)."""
    client = EventHubConsumerClient.from_connection_string(sdk_cs(broker), consumer_group="$Default",
                                                           eventhub_name=hub)
    got: list = []
    thread = threading.Thread(target=client.receive_batch, kwargs=dict(
        on_event_batch=lambda ctx, events: got.extend(events), partition_id="0",
        starting_position="-1", prefetch=100, max_batch_size=50), daemon=True)
    thread.start()
    return client, got, thread


def _fill(broker, hub: str, total: int, body: bytes, per_batch: int) -> None:
    """``total`` events of ``body`` in partition 0 of ``hub``, sent by the SDK in batches."""
    with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub) as p:
        for _ in range(0, total, per_batch):
            p.send_batch([EventData(body) for _ in range(per_batch)], partition_id="0")


def _readers(broker) -> list:
    """The broker's receive links (ConsumeLink handlers), read on its loop."""
    return broker.call(lambda: [h for hs in broker.broker.amqp_server.readers.values() for h in hs])


def test_a_receiver_that_read_all_holds_no_unsettled_deliveries(tmp_path):
    with EmulatedBroker(tmp_path / "data", amqp=True) as broker:
        broker.create_hub("hub", 1)
        _fill(broker, "hub", EVENTS, b"x" * 1024, 200)
        client, got, thread = _receiving(broker, "hub", EVENTS)
        try:
            assert wait_for(lambda: len(got) >= EVENTS, timeout=30), f"{len(got)} of {EVENTS} received"
            [reader] = _readers(broker)
            # the link is read to its end and waits: every delivery it sent is settled
            assert wait_for(lambda: broker.call(lambda: pn.pn_link_unsettled(reader.link._impl)) == 0,
                            timeout=10), broker.call(lambda: pn.pn_link_unsettled(reader.link._impl))
            # and none is left for the broker's own dispositions to settle
            assert wait_for(lambda: broker.call(lambda: (reader.conn.padder.unsettled_count(reader), reader.conn.padder.unsettled))
                            == (0, {}), timeout=10)
            assert [e.sequence_number for e in got] == list(range(EVENTS))
            # and events appended later still arrive, in order, after the settlement
            with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name="hub") as p:
                p.send_batch([EventData(b"late %d" % i) for i in range(5)], partition_id="0")
            assert wait_for(lambda: len(got) >= EVENTS + 5, timeout=30)
            assert [e.sequence_number for e in got] == list(range(EVENTS + 5))
            assert [e.body_as_str() for e in got[EVENTS:]] == [f"late {i}" for i in range(5)]
        finally:
            client.close()
            thread.join(30)


def test_a_closed_receivers_connection_is_freed(tmp_path):
    with EmulatedBroker(tmp_path / "data", amqp=True) as broker:
        broker.create_hub("hub", 1)
        with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name="hub") as p:
            p.send_batch([EventData(b"event") for _ in range(10)], partition_id="0")
        client, got, thread = _receiving(broker, "hub", 10)
        try:
            assert wait_for(lambda: len(got) >= 10, timeout=30)
            [reader] = _readers(broker)
            assert reader.token_timer is not None  # the SDK signed in with an expiring SAS token
            conn = weakref.ref(reader.conn)
            del reader
        finally:
            client.close()
            thread.join(30)
        assert wait_for(lambda: not _readers(broker), timeout=10)
        # nothing (the token check's timer included) holds the closed connection
        assert wait_for(lambda: gc.collect() is not None and conn() is None, timeout=10), \
            gc.get_referrers(conn())


def test_a_streaming_receiver_settles_at_its_cap(tmp_path, monkeypatch):
    """A link sending a backlog it has not caught up with settles at least every
    SETTLE_EVERY deliveries (here 50, so the cap is reached many times), and the
    SDK still reads every event once and in order."""
    monkeypatch.setattr(consume, "SETTLE_EVERY", 50)
    streaming: list[int] = []  # unsettled deliveries at each settlement made while not waiting
    settle_sent = consume.ConsumeLink.settle_sent

    def recorded(self):
        if self._waiting is None:
            streaming.append(len(self._sent) + self.conn.padder.unsettled_count(self))  # (runs: settled in proton, not to the client)
        return settle_sent(self)

    monkeypatch.setattr(consume.ConsumeLink, "settle_sent", recorded)
    total = 2_000
    with EmulatedBroker(tmp_path / "data", amqp=True) as broker:
        broker.create_hub("hub", 1)
        _fill(broker, "hub", total, b"y" * 256, 250)
        client, got, thread = _receiving(broker, "hub", total)
        try:
            assert wait_for(lambda: len(got) >= total, timeout=60), f"{len(got)} of {total} received"
            assert [e.sequence_number for e in got] == list(range(total))
            [reader] = _readers(broker)
            assert wait_for(lambda: broker.call(lambda: pn.pn_link_unsettled(reader.link._impl)) == 0,
                            timeout=10)
        finally:
            client.close()
            thread.join(30)
    # settled mid-stream at the cap, never holding more than the cap and one credit window
    assert any(n >= 50 for n in streaming), streaming
    assert max(streaming) <= 50 + 100, streaming
