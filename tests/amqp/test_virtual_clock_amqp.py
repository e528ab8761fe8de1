"""The broker's virtual clock drives AMQP: an idle connection is closed, a fault's
window opens and closes, a held disposition is settled, when the test moves the clock,
without sleeping (a token's expiry: tests/amqp/test_token_expiry.py)."""
from __future__ import annotations

import threading
import time

from azure.eventhub import EventData, EventHubProducerClient
from azure.eventhub.exceptions import EventDataSendError

from kafka_wire.amqp import connection as amqp_connection
from kafka_wire.testing import EmulatedBroker

from .conftest import sdk_cs, wait_for


def send(broker, hub: str, value: str) -> None:
    """A new producer's send (it raises a refused transfer at once)."""
    with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub) as p:
        p.send_batch([EventData(value)], partition_id="0")


def last_sequence_number(broker, hub: str) -> int:
    with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name=hub) as p:
        return p.get_partition_properties("0")["last_enqueued_sequence_number"]


def test_an_idle_connection_closes_when_the_clock_passes_the_idle_timeout(tmp_path):
    with EmulatedBroker(tmp_path / "data", amqp=True, virtual_clock=True) as broker:
        broker.create_hub("idle", 1)
        server = broker.broker.amqp_server
        started = time.monotonic()
        with EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name="idle") as p:
            p.send_batch([EventData("before")], partition_id="0")
            open_ = set(server.connections)
            assert open_
            broker.clock.advance(seconds=amqp_connection.IDLE_TIMEOUT_S - 1)
            assert open_ <= server.connections  # not yet
            broker.clock.advance(seconds=2)
            # closed with amqp:connection:forced
            assert wait_for(lambda: not open_ & server.connections, 10)
            p.send_batch([EventData("after")], partition_id="0")  # the SDK reconnects
        assert time.monotonic() - started < amqp_connection.IDLE_TIMEOUT_S / 4
        assert last_sequence_number(broker, "idle") == 1


def test_a_fault_window_opens_and_closes_as_the_clock_moves(tmp_path):
    with EmulatedBroker(tmp_path / "data", amqp=True, virtual_clock=True) as broker:
        broker.create_hub("window", 1)
        broker.faults.add("server-busy", scope={"hub": "window"}, count=1000,
                          after_ms=60_000, for_ms=60_000)
        send(broker, "window", "0")  # before the window
        broker.clock.advance(seconds=60)
        try:
            send(broker, "window", "1")
            raise AssertionError("the window did not open")
        except EventDataSendError as exc:
            assert "server is busy" in str(exc)
        broker.clock.advance(seconds=60)
        send(broker, "window", "2")  # after it
        assert [f["kind"] for f in broker.faults.fired] == ["server-busy"]
        assert last_sequence_number(broker, "window") == 1  # "0" and "2"


def test_a_held_disposition_is_settled_when_the_clock_reaches_it(tmp_path):
    with EmulatedBroker(tmp_path / "data", amqp=True, virtual_clock=True) as broker:
        broker.create_hub("held", 1)
        broker.faults.add("delay-disposition", scope={"hub": "held"}, params={"ms": 50_000})
        done: list[float] = []
        started = time.monotonic()

        def held_send() -> None:
            send(broker, "held", "0")
            done.append(time.monotonic())
        thread = threading.Thread(target=held_send, daemon=True)
        thread.start()
        assert wait_for(lambda: broker.faults.fired, 15)
        time.sleep(0.5)  # the send waits on the clock, not on wall time
        assert not done
        broker.clock.advance(seconds=50)
        thread.join(15)
        assert done and done[0] - started < 20
