"""Run kafka-wire inside a test: an in-process broker on its own thread.

Example::

    from kafka_wire.testing import EmulatedBroker

    with EmulatedBroker() as broker:
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers})
        ...

The broker listens on 127.0.0.1 on an ephemeral port, keeps its data in a
temporary directory (removed on stop unless ``data_dir`` was given), and
``stop()`` leaves no thread, socket or file behind.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafka_wire.testing.broker import EmulatedBroker

__all__ = ["EmulatedBroker"]


def __getattr__(name: str):
    # Lazy: pytest imports this package for the plugin in every run of an
    # environment with kafka-wire installed; the broker loads only when used.
    if name == "EmulatedBroker":
        from kafka_wire.testing.broker import EmulatedBroker
        return EmulatedBroker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
