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
Event Hubs Config.json or kafka-wire TOML: namespaces, tiers, policies; a
relative path is taken from the test file's folder), ``virtual_clock``,
``in_memory``, ``tls``, and any BrokerConfig field.

pytest loads this plugin in every run of an environment where kafka-wire is
installed, so it imports nothing of the broker until a fixture is used.
"""
from __future__ import annotations

from pathlib import Path

import pytest


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "kafka_wire(**settings): settings for the kafka_wire broker fixture "
                   "(config_file=, virtual_clock=, in_memory=, tls=, BrokerConfig fields)")
    # kafka-python 3.0 reads its ~230 JSON schemas with importlib.resources'
    # legacy read_text/open_text: one DeprecationWarning each, not the user's concern.
    config.addinivalue_line("filterwarnings",
                            r"ignore:(read|open)_text is deprecated:DeprecationWarning")


@pytest.fixture
def kafka_wire(request):
    from kafka_wire.testing.broker import EmulatedBroker

    marker = request.node.get_closest_marker("kafka_wire")
    settings = dict(marker.kwargs) if marker else {}
    settings.setdefault("in_memory", True)
    config_file = settings.get("config_file")
    if config_file is not None and not Path(config_file).is_absolute():
        settings["config_file"] = Path(request.path).parent / config_file
    with EmulatedBroker(**settings) as broker:
        yield broker


@pytest.fixture(scope="session")
def kafka_wire_session():
    from kafka_wire.testing.broker import EmulatedBroker

    with EmulatedBroker(in_memory=True) as broker:
        yield broker
