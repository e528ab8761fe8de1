"""What a receiver's connection writes: proton's output is copied out through a
buffer the connection keeps (a new one, not kept, past PEEK_KEPT) and the padded
frames go out a few hundred KB at a time (WRITE_PARTS pieces a write), so a write
may end inside a frame. The SDK reads every event whole, once and in order, with
writes cut at every seventh piece and no buffer kept as with the defaults."""
from __future__ import annotations

import random
import threading

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient

from kafka_wire.amqp import connection
from kafka_wire.testing import EmulatedBroker

from .conftest import sdk_cs, wait_for

EVENTS = 1500


@pytest.mark.parametrize("write_parts, peek_kept", [(7, 0), (connection.WRITE_PARTS, connection.PEEK_KEPT)])
def test_every_event_arrives_whole_and_in_order_whatever_the_writes(tmp_path, monkeypatch, write_parts, peek_kept):
    monkeypatch.setattr(connection, "WRITE_PARTS", write_parts)
    monkeypatch.setattr(connection, "PEEK_KEPT", peek_kept)
    rng = random.Random(30)
    bodies = [rng.randbytes(rng.choice([0, 1, 200, 255, 256, 1024, 3000])) for _ in range(EVENTS)]
    with EmulatedBroker(tmp_path / "data", amqp=True) as broker:
        broker.create_hub("hub", 1)
        with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name="hub") as p:
            for i in range(0, EVENTS, 250):
                p.send_batch([EventData(b) for b in bodies[i:i + 250]], partition_id="0")
        client = EventHubConsumerClient.from_connection_string(sdk_cs(broker), consumer_group="$Default",
                                                               eventhub_name="hub")
        got: list = []
        thread = threading.Thread(target=client.receive_batch, kwargs=dict(
            on_event_batch=lambda ctx, events: got.extend(events), partition_id="0",
            starting_position="-1", prefetch=1000, max_batch_size=500), daemon=True)
        thread.start()
        try:
            assert wait_for(lambda: len(got) >= EVENTS, timeout=60), f"{len(got)} of {EVENTS} received"
        finally:
            client.close()
            thread.join(30)
    assert [e.sequence_number for e in got] == list(range(EVENTS))
    assert [b"".join(e.body) for e in got] == bodies
