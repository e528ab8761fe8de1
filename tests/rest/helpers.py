"""The contoso namespace of eventhubs/data/multi.toml behind the HTTP listener, as the
tests that write their own requests use it: a module's broker, its host name, a SAS
token for its root policy, and the end offset of its ``payments`` hub (a send that is
refused must leave it where it was)."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from kafka_wire.eventhubs import sas
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import MULTI_TOML, ROOT
from tests.amqp.test_cross_protocol import kafka_password
from tests.eventhubs.conftest import confluent_conf

HOST = "contoso.servicebus.windows.net"
MG = "/subscriptions/s/resourceGroups/g/providers/Microsoft.EventHub/namespaces/contoso"


def http_broker(name: str, **settings):
    """A module-scoped ``broker`` fixture on multi.toml with the HTTP listener on (and
    ``settings``, e.g. amqp=True): ``broker = http_broker("my-module")``."""
    @pytest.fixture(scope="module")
    def broker(tmp_path_factory):
        with EmulatedBroker(tmp_path_factory.mktemp(name) / "data", config_file=MULTI_TOML,
                            http=True, **settings) as b:
            yield b
    return broker


def token(key: str = ROOT[1]) -> str:
    """A root-policy token for the namespace; it expires in 600 s, so a test makes it
    when it runs, never at collection (a long run reaches a test later than that)."""
    return sas.generate(sas.resource_uri(HOST), ROOT[0], key, int(time.time()) + 600)


def end_offset(broker) -> int:
    c = Consumer(confluent_conf(broker.bootstrap_servers, kafka_password(broker), **{"group.id": "ends"}))
    try:
        return c.get_watermark_offsets(TopicPartition("payments", 0), timeout=15)[1]  # (1 partition)
    finally:
        c.close()
