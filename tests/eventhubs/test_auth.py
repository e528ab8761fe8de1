"""`$ConnectionString` SASL/PLAIN over SASL_PLAINTEXT with real clients, namespaces
selected by the Endpoint host, and SAS rights enforced per Kafka API."""
from __future__ import annotations

import time

import kafka.errors as Errors
import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from kafka_wire import codec
from kafka_wire.eventhubs import connection_string, sas
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

from .conftest import MULTI_TOML, auth_error, confluent_conf, kafka_python_conf, produce_one, sasl_raw

ROOT_KEY = "cm9vdC1rZXktMQ=="
HOST = "contoso.servicebus.windows.net"


@pytest.fixture(scope="module")
def broker(module_tmp):
    with EmulatedBroker(module_tmp / "data", config_file=MULTI_TOML) as b:
        yield b


def cs(policy="RootManageSharedAccessKey", key=ROOT_KEY, host=HOST, hub=None) -> str:
    return connection_string.build(host, key_name=policy, key=key, entity_path=hub)


def token_cs(resource: str, policy: str, key: str, ttl: int = 3600, host=HOST, hub=None) -> str:
    token = sas.generate(resource, policy, key, int(time.time()) + ttl)
    return connection_string.build(host, signature=token, entity_path=hub)


def consume(conf: dict, topic: str, count: int, timeout: float = 20.0) -> list:
    consumer = Consumer(dict(conf, **{"group.id": "g-" + topic, "auto.offset.reset": "earliest",
                                      "enable.auto.commit": False}))
    consumer.assign([TopicPartition(topic, p, 0) for p in range(2 if topic == "orders" else 1)])
    got, errors = [], []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            errors.append(msg.error())
            if msg.error().code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                break
            continue
        got.append(msg.value())
    consumer.close()
    return got or errors


# -- clients that authenticate ---------------------------------------------------------
def test_confluent_produces_and_consumes_with_root_connection_string(broker):
    conf = confluent_conf(broker.bootstrap_servers, cs())
    assert produce_one(conf, "payments", b"hello") is None
    assert consume(conf, "payments", 1) == [b"hello"]


def test_kafka_python_produces_and_consumes_with_connection_string(broker):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTP

    conf = kafka_python_conf(broker.bootstrap_servers, cs())
    producer = KafkaProducer(**conf)
    producer.send("orders", b"kp-1", partition=1).get(timeout=15)
    producer.close()
    consumer = KafkaConsumer(**conf, auto_offset_reset="earliest")
    consumer.assign([KTP("orders", 1)])
    values: list = []
    deadline = time.monotonic() + 15
    while b"kp-1" not in values and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            values += [r.value for r in records]
    consumer.close()
    assert b"kp-1" in values


def test_token_connection_string_works(broker):
    password = token_cs(f"https://{HOST}/", "sender", "c2VuZC1rZXk=")
    assert produce_one(confluent_conf(broker.bootstrap_servers, password), "payments") is None


# -- refusals ------------------------------------------------------------------------------
def test_wrong_key_is_refused(broker):
    message = auth_error(broker.bootstrap_servers, cs(key="d3Jvbmc="))
    assert message and "SharedAccessKey for policy 'RootManageSharedAccessKey' is wrong" in message


def test_expired_token_is_refused(broker):
    message = auth_error(broker.bootstrap_servers,
                         token_cs(f"https://{HOST}/", "RootManageSharedAccessKey", ROOT_KEY, ttl=-3600))
    assert message and "expired" in message


def test_unknown_namespace_endpoint_is_refused(broker):
    message = auth_error(broker.bootstrap_servers, cs(host="northwind.servicebus.windows.net"))
    assert message and "does not serve" in message


def test_kafka_python_sees_the_refusal(broker):
    from kafka import KafkaProducer

    with pytest.raises((Errors.SaslAuthenticationFailedError, Errors.KafkaTimeoutError)):
        KafkaProducer(**kafka_python_conf(broker.bootstrap_servers, cs(key="d3Jvbmc=")),
                      bootstrap_timeout_ms=1500)


def test_failed_authentication_closes_the_connection(broker):
    with RawClient(broker.bootstrap_servers) as c:
        resp = sasl_raw(c, cs(key="d3Jvbmc="))
        assert resp.error_code == Errors.SaslAuthenticationFailedError.errno
        assert "wrong" in resp.error_message
        assert c.is_closed()


def test_requests_before_authentication_close_the_connection(broker):
    with RawClient(broker.bootstrap_servers) as c:
        versions = c.request(codec.ApiKey.ApiVersions, 3, client_software_name="t",
                             client_software_version="1")
        assert versions.error_code == 0
        c.send_raw(c.frame(codec.ApiKey.Metadata, 12, bytes(codec.request_class(3)(
            version=12, topics=None, allow_auto_topic_creation=False,
            include_topic_authorized_operations=False).encode(version=12))))
        assert c.is_closed()


def test_sasl_handshake_v0_takes_a_bare_token(broker):
    with RawClient(broker.bootstrap_servers) as c:
        assert sasl_raw(c, cs(), version=0) == b""
        meta = c.request(codec.ApiKey.Metadata, 1, topics=None)
        assert {t.name for t in meta.topics} == {"orders", "payments"}
    with RawClient(broker.bootstrap_servers) as c:
        c.request(codec.ApiKey.SaslHandshake, 0, mechanism="PLAIN")
        token = b"\x00$ConnectionString\x00" + cs(key="d3Jvbmc=").encode()
        c.send_raw(len(token).to_bytes(4, "big") + token)
        assert c.is_closed()


def test_other_mechanisms_and_out_of_order_authenticate(broker):
    with RawClient(broker.bootstrap_servers) as c:
        hs = c.request(codec.ApiKey.SaslHandshake, 1, mechanism="SCRAM-SHA-256")
        assert hs.error_code == Errors.UnsupportedSaslMechanismError.errno
        assert hs.mechanisms == ["PLAIN", "OAUTHBEARER"]
    with RawClient(broker.bootstrap_servers) as c:
        resp = c.request(codec.ApiKey.SaslAuthenticate, 1, auth_bytes=b"\x00a\x00b")
        assert resp.error_code == Errors.IllegalSaslStateError.errno
        assert c.is_closed()


# -- namespaces --------------------------------------------------------------------------------
def test_endpoint_host_selects_the_namespace(broker):
    fab = confluent_conf(broker.bootstrap_servers,
                         cs(key="ZmFicmlrYW0ta2V5", host="fabrikam.servicebus.windows.net"))
    assert set(AdminClient(fab).list_topics(timeout=10).topics) == {"telemetry"}
    contoso = confluent_conf(broker.bootstrap_servers, cs(host="localhost"))
    assert set(AdminClient(contoso).list_topics(timeout=10).topics) == {"orders", "payments"}
    # fabrikam's own "orders" (auto-created, 1 partition) is not contoso's (2 partitions).
    assert produce_one(fab, "orders") is None
    assert len(AdminClient(fab).list_topics(timeout=10).topics["orders"].partitions) == 1
    assert len(AdminClient(contoso).list_topics(timeout=10).topics["orders"].partitions) == 2


# -- rights ---------------------------------------------------------------------------------------
def test_listen_only_policy_cannot_produce(broker):
    conf = confluent_conf(broker.bootstrap_servers, cs("listener", "bGlzdGVuLWtleQ=="))
    err = produce_one(conf, "payments")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_send_only_policy_cannot_consume(broker):
    conf = confluent_conf(broker.bootstrap_servers, cs("sender", "c2VuZC1rZXk="))
    errors = consume(conf, "payments", 1, timeout=10)
    assert errors and all(isinstance(e, KafkaError) for e in errors)
    assert any(e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED for e in errors)


def test_send_only_policy_cannot_administer(broker):
    admin = AdminClient(confluent_conf(broker.bootstrap_servers, cs("sender", "c2VuZC1rZXk=")))
    fut = admin.create_topics([NewTopic("new-hub", 1)], operation_timeout=5)["new-hub"]
    with pytest.raises(Exception) as info:
        fut.result(10)
    assert info.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_hub_scoped_connection_string_sees_only_its_hub(broker):
    conf = confluent_conf(broker.bootstrap_servers,
                          cs("orders-writer", "b3JkZXJzLWtleQ==", hub="orders"))
    assert set(AdminClient(conf).list_topics(timeout=10).topics) == {"orders"}
    assert produce_one(conf, "orders", b"scoped") is None
    err = produce_one(conf, "payments", timeout=3)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    admin = AdminClient(conf)
    fut = admin.create_partitions([NewPartitions("orders", 3)])["orders"]
    with pytest.raises(Exception) as info:
        fut.result(10)
    assert info.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_publisher_token_cannot_send_another_key(broker):
    password = token_cs(f"https://{HOST}/orders/publishers/device-1", "RootManageSharedAccessKey",
                        ROOT_KEY)
    conf = confluent_conf(broker.bootstrap_servers, password)
    assert produce_one(conf, "orders", b"ok", key=b"device-1") is None
    err = produce_one(conf, "orders", b"bad", key=b"device-2")
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    err = produce_one(conf, "payments", b"bad", key=b"device-1", timeout=3)
    assert err is not None and err.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


@pytest.mark.parametrize("shape", ["records that do not parse", "a byte after the last record"])
def test_publisher_token_with_unreadable_records_gets_corrupt_message(broker, shape):
    """A publisher's keys are read to check them: records that cannot be read answer
    CORRUPT_MESSAGE for their partition (as Kafka refuses them), and the connection
    goes on serving."""
    from tests.undecodable_batches import batch, produce

    password = token_cs(f"https://{HOST}/orders/publishers/device-1", "RootManageSharedAccessKey",
                        ROOT_KEY)
    good = batch([b"v"], key=b"device-1")
    if shape == "records that do not parse":
        blob = batch([b"x", b"y"], body=b"\x7f" * 40, key=b"device-1")
    else:
        blob = batch([b"v"], body=good[61:] + b"\x00", key=b"device-1")
    with RawClient(broker.bootstrap_servers) as c:
        assert sasl_raw(c, password).error_code == 0
        answer = produce(c, "orders", blob)
        assert answer.error_code == Errors.CorruptRecordError.errno, answer
        assert produce(c, "orders", good).error_code == 0  # the same connection, served
