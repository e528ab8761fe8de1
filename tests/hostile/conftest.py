"""A broker as a hostile client finds it: the two namespaces of
tests/eventhubs/data/multi.toml (both require auth), with Kafka, AMQP and HTTP."""
from __future__ import annotations

import pytest

from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import MULTI_TOML


def start(data_dir, **settings) -> EmulatedBroker:
    return EmulatedBroker(data_dir, config_file=MULTI_TOML, http=True, amqp=True, **settings).start()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """One broker for a module whose tests change nothing a refusal should not."""
    from confluent_kafka import Producer

    from tests.hostile.surfaces import CREDENTIALS, HUB, _kafka_conf

    broker = start(tmp_path_factory.mktemp("hostile") / "data")
    try:
        root = CREDENTIALS[0]
        p = Producer(_kafka_conf(broker, root))  # one record for the readers to find
        p.produce(HUB, b"seed", partition=0)
        assert p.flush(15) == 0
        yield broker
    finally:
        broker.stop()
