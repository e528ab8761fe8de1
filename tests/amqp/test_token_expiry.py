"""A token that expires ends the links it authorized, as the service does (the
broker's virtual clock moves past the token's expiry)."""
from __future__ import annotations

import threading
import time

from azure.eventhub import EventHubConsumerClient

from kafka_wire.eventhubs import sas
from kafka_wire.testing import EmulatedBroker

from .conftest import MULTI_TOML, ROOT, sdk_cs, wait_for


def test_an_expired_token_detaches_its_receiver(tmp_path):
    with EmulatedBroker(tmp_path / "data", config_file=MULTI_TOML, amqp=True,
                        virtual_clock=True) as broker:
        expiry = broker.clock.now_ms() // 1000 + 60
        token = sas.generate(f"sb://127.0.0.1:{broker.amqp_port}/orders", *ROOT, expiry)
        client = EventHubConsumerClient.from_connection_string(
            sdk_cs(broker, signature=token, hub="orders"), consumer_group="$Default",
            load_balancing_interval=1, retry_total=0)
        errors: list = []
        started = threading.Event()
        thread = threading.Thread(target=client.receive, kwargs=dict(
            on_event=lambda ctx, e: None, on_error=lambda ctx, e: errors.append(e),
            on_partition_initialize=lambda ctx: started.set(), partition_id="0",
            starting_position="-1"), daemon=True)
        thread.start()
        assert started.wait(15), "the receiver did not start"
        time.sleep(1)  # the link is attached
        assert not errors
        broker.clock.advance(seconds=61)
        assert wait_for(lambda: errors, 15), "the receiver kept its link after the token expired"
        assert any("unauthorized" in str(e).lower() or "expired" in str(e).lower() for e in errors), errors
        client.close()
        thread.join(15)
