"""An AMQP receiver (the azure-eventhub SDK) meets a stored batch no reader can decode:
a decompression bomb, compressed bytes that do not decompress, records that do not
parse (stored by a broker before Produce checked compressed batches; an uncompressed
one is stored as sent today). The first receiver to meet it is detached with
amqp:internal-error naming it, and every read after that goes on past it: the SDK's
re-attach receives the events before and after. Before, every re-attach was detached
again at the same batch, and the partition's receivers got nothing, for good."""
from __future__ import annotations

import pytest
from azure.eventhub import EventHubConsumerClient

from kafka_wire.log import records as rec
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient
from tests.undecodable_batches import UNDECODABLE, batch, produce, stored_unchecked

from .conftest import receive

KINDS = {**UNDECODABLE, "uncompressed-not-parsing": lambda: batch([b"x", b"y"], body=b"\x7f" * 40)}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("unreadable") / "data", amqp=True) as b:
        yield b


def _bodies(broker, hub: str, group: str) -> list[str]:
    client = EventHubConsumerClient.from_connection_string(
        broker.amqp_connection_string(), consumer_group=group, eventhub_name=hub, load_balancing_interval=1)
    got = receive(client, 2, timeout=60, starting_position="-1", partition_id="0")
    return [event.body_as_str() for _, event in got]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_receivers_go_on_past_a_batch_that_cannot_be_read(broker, monkeypatch, kind):
    hub = f"unreadable-{kind}"
    broker.create_hub(hub, 1)
    stored_unchecked(monkeypatch)
    with RawClient(broker.bootstrap_servers) as c:
        assert produce(c, hub, batch([b"before"])).error_code == 0
        assert produce(c, hub, KINDS[kind]()).error_code == 0  # stored unchecked
        assert produce(c, hub, batch([b"after"], codec_id=rec.GZIP)).error_code == 0
    assert _bodies(broker, hub, "$Default") == ["before", "after"]
    assert _bodies(broker, hub, "$Default") == ["before", "after"]  # again, from the start
