"""IP filter rules set through the management API: with default action Deny and
only 127.0.0.2 allowed, clients from 127.0.0.1 are refused on every listener
(Kafka at SASL, AMQP at open, HTTPS sends) with a log line, while a client bound
to 127.0.0.2 gets in; the rules survive a restart and Allow lifts them."""
from __future__ import annotations

import http.client
import ssl

import pytest
from azure.eventhub import EventData, EventHubProducerClient
from azure.eventhub.exceptions import EventHubError
from confluent_kafka import KafkaException

from tests.amqp.conftest import ROOT
from tests.rawclient import RawClient

from .test_management import NS, RG, SasCredential, client, kafka_send, start

ALLOW_ONLY_127_0_0_2 = {"properties": {"defaultAction": "Deny", "publicNetworkAccess": "Enabled",
                                       "ipRules": [{"ipMask": "127.0.0.2/32", "action": "Allow"}]}}


def https_send(broker, source: str) -> int:
    """Status of a REST send from ``source`` (a loopback address to bind)."""
    context = ssl.create_default_context(cafile=str(broker.ca_file))
    port = int(broker.https_url.rsplit(":", 1)[1])
    conn = http.client.HTTPSConnection("localhost", port, context=context, timeout=10,
                                       source_address=(source, 0))
    try:
        conn.request("POST", "/orders/partitions/0/messages", body=b"filtered", headers={
            "Host": f"{NS}.servicebus.windows.net", "Authorization": SasCredential().get_token().token})
        return conn.getresponse().status
    finally:
        conn.close()


def kafka_login(broker, source: str) -> int:
    """SaslAuthenticate's error code for a PLAIN login from ``source``."""
    with RawClient(broker.bootstrap_servers, source=source) as c:
        return c.login(broker.connection_string(namespace=NS, policy=ROOT[0]))


def test_ip_rules_refuse_other_addresses_on_every_listener(tmp_path, caplog):
    data_dir = tmp_path / "data"
    broker = start(data_dir)
    try:
        mgmt = client(broker)
        rules = mgmt.namespaces.create_or_update_network_rule_set(RG, NS, ALLOW_ONLY_127_0_0_2)
        assert rules.default_action == "Deny" and [r.ip_mask for r in rules.ip_rules] == ["127.0.0.2/32"]
        password = broker.connection_string(namespace=NS, policy=ROOT[0])
        with pytest.raises(KafkaException):
            kafka_send(broker, "orders", password)
        with pytest.raises(EventHubError, match="IP filter"):
            with EventHubProducerClient.from_connection_string(
                    broker.amqp_connection_string(namespace=NS, policy=ROOT[0]),
                    eventhub_name="orders", retry_total=0) as p:
                p.send_batch([EventData(b"x")], partition_id="0")
        assert https_send(broker, "127.0.0.1") == 403
        assert https_send(broker, "127.0.0.2") == 201
        assert kafka_login(broker, "127.0.0.2") == 0
        assert kafka_login(broker, "127.0.0.1") != 0
        assert "IP filter rules" in caplog.text
    finally:
        broker.stop()
    broker = start(data_dir)
    try:
        assert https_send(broker, "127.0.0.1") == 403  # kept across the restart
        mgmt = client(broker)
        assert mgmt.namespaces.get_network_rule_set(RG, NS).default_action == "Deny"
        mgmt.namespaces.create_or_update_network_rule_set(RG, NS, {"properties": {"defaultAction": "Allow"}})
        kafka_send(broker, "orders", broker.connection_string(namespace=NS, policy=ROOT[0]))
        assert https_send(broker, "127.0.0.1") == 201
    finally:
        broker.stop()
