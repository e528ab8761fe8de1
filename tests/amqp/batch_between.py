"""A batch stored between two readable ones, and what an azure-eventhub receiver gets of
the hub: the scaffold of the receivers' tests of batches that cannot be read whole
(test_receive_unreadable_batch, test_receive_records_then_garbage). The batch is stored
unchecked, as a broker stored it before Produce checked compressed batches."""
from __future__ import annotations

from azure.eventhub import EventHubConsumerClient

from kafka_wire.log import records as rec
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient
from tests.undecodable_batches import batch, produce, stored_unchecked

from .conftest import receive


def amqp_broker(tmp_path_factory):
    """A broker with the AMQP listener, for a test module's own fixture:
    ``broker = pytest.fixture(scope="module", name="broker")(amqp_broker)``."""
    with EmulatedBroker(tmp_path_factory.mktemp("between") / "data", amqp=True) as b:
        yield b


def store_between(broker, monkeypatch, hub: str, blob: bytes) -> None:
    """A new hub of one partition holding "before", ``blob`` (stored unchecked), then
    "after" (gzip)."""
    broker.create_hub(hub, 1)
    stored_unchecked(monkeypatch)
    with RawClient(broker.bootstrap_servers) as c:
        assert produce(c, hub, batch([b"before"])).error_code == 0
        assert produce(c, hub, blob).error_code == 0  # stored unchecked
        assert produce(c, hub, batch([b"after"], codec_id=rec.GZIP)).error_code == 0


def received_bodies(broker, hub: str, group: str = "$Default") -> list[str]:
    """The bodies a new SDK client receives from partition 0 from its start (up to two,
    within 60 s)."""
    client = EventHubConsumerClient.from_connection_string(
        broker.amqp_connection_string(), consumer_group=group, eventhub_name=hub, load_balancing_interval=1)
    got = receive(client, 2, timeout=60, starting_position="-1", partition_id="0")
    return [event.body_as_str() for _, event in got]
