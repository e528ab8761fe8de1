"""A receiver already attached when its hub is made Disabled through the management API
is detached with com.microsoft:entity-disabled at its next read of the log, as a Kafka consumer
mid-read is refused at its next Fetch (tests/eventhubs/test_fetch_refusals_live.py):
it gets at most what one read held before the change, not the rest of the partition."""
from __future__ import annotations

from azure.eventhub import EventData, EventHubProducerClient
from proton import Endpoint

from kafka_wire.amqp.consume import READ_BYTES
from kafka_wire.testing.raw_amqp import RawAmqp
from tests.amqp.conftest import ROOT
from tests.rest.test_management import NS, RG, client, data_dir, start  # noqa: F401 (data_dir: fixture)

EVENT = 8000  # bytes: a read of the log (READ_BYTES) holds about 130 of them
EVENTS = 400  # three reads' worth


def _take(client: RawAmqp, link, timeout: float = 20.0) -> int:
    """Read what ``link`` is sent until the broker detaches it; how many events came."""
    got = [0]

    def detached() -> bool:
        while link.current is not None and not link.current.partial:
            link.recv(link.current.pending)
            link.advance()
            got[0] += 1
        return bool(link.state & Endpoint.REMOTE_CLOSED)

    client.wait(detached, timeout)
    return got[0]


def test_a_receiver_of_a_hub_made_disabled_mid_read_is_detached(data_dir):  # noqa: F811
    broker = start(data_dir)
    try:
        with EventHubProducerClient.from_connection_string(
                broker.amqp_connection_string(namespace=NS), eventhub_name="orders") as producer:
            for _ in range(EVENTS // 100):
                producer.send_batch([EventData(b"x" * EVENT) for _ in range(100)], partition_id="0")
        with RawAmqp(broker.amqp_port, hostname=f"{NS}.servicebus.windows.net",
                     user=ROOT[0], password=ROOT[1]) as c:
            c.open()
            ssn = c.session()
            link = ssn.receiver("reader")
            link.source.address = "orders/ConsumerGroups/$Default/Partitions/0"
            link.open()
            link.flow(10)
            c.wait(lambda: link.queued == 10 or link.state & Endpoint.REMOTE_CLOSED)
            assert link.queued == 10 and link.remote_condition is None
            client(broker).event_hubs.create_or_update(RG, NS, "orders", {"properties": {"status": "Disabled"}})
            link.flow(EVENTS)
            after = _take(c, link)
            condition = link.remote_condition
            assert condition is not None and condition.name == "com.microsoft:entity-disabled", condition
            assert "Disabled" in condition.description
            # only the rest of the read made before the change (before the fix: all 390)
            assert after <= READ_BYTES // EVENT, after
            client(broker).event_hubs.create_or_update(RG, NS, "orders", {"properties": {"status": "Active"}})
            again = ssn.receiver("again")
            again.source.address = "orders/ConsumerGroups/$Default/Partitions/0"
            again.open()
            again.flow(5)
            c.wait(lambda: again.queued == 5 or again.state & Endpoint.REMOTE_CLOSED)
            assert again.queued == 5 and again.remote_condition is None
    finally:
        broker.stop()
