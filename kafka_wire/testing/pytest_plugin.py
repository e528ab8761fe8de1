"""pytest plugin (entry point ``pytest11``): kafka-wire brokers as fixtures.

Fixtures:

- ``kafka_wire``: a fresh in-process broker for one test (function scope).
- ``kafka_wire_session``: one broker shared by the whole session; create
  uniquely named hubs per test.

A marker passes settings to the function-scoped broker::

    @pytest.mark.kafka_wire(config_file="Config.json", virtual_clock=True)
    def test_orders(kafka_wire):
        kafka_wire.create_hub("orders", partitions=4)
        ...

Marker keywords are :class:`EmulatedBroker` arguments: ``config_file`` (an
Event Hubs Config.json or kafka-wire TOML: namespaces, tiers, policies),
``virtual_clock``, ``in_memory``, ``tls``, and any BrokerConfig field.
"""
from __future__ import annotations

import pytest

from kafka_wire.testing.broker import EmulatedBroker


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "kafka_wire(**settings): settings for the kafka_wire broker fixture "
                   "(config_file=, virtual_clock=, in_memory=, tls=, BrokerConfig fields)")


@pytest.fixture
def kafka_wire(request):
    marker = request.node.get_closest_marker("kafka_wire")
    settings = dict(marker.kwargs) if marker else {}
    settings.setdefault("in_memory", True)
    with EmulatedBroker(**settings) as broker:
        yield broker


@pytest.fixture(scope="session")
def kafka_wire_session():
    with EmulatedBroker(in_memory=True) as broker:
        yield broker
