"""The SASL_SSL listener: generated CA and server certificate, or given files; real
clients with `$ConnectionString` over TLS, Metadata advertising the TLS listener."""
from __future__ import annotations

import ssl
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_wire.eventhubs import connection_string, tls
from kafka_wire.testing import EmulatedBroker

from .conftest import MULTI_TOML, auth_error, confluent_conf, kafka_python_conf, produce_one

ROOT = connection_string.build("contoso.servicebus.windows.net",
                               key_name="RootManageSharedAccessKey", key="cm9vdC1rZXktMQ==")


def test_certificates_are_generated_once_and_reissued_for_new_names(tmp_path):
    first = tls.ensure_certificates(tmp_path, ["localhost", "127.0.0.1"])
    ca, cert = first.ca.read_bytes(), first.cert.read_bytes()
    assert oct(first.key.stat().st_mode & 0o777) == "0o600"
    again = tls.ensure_certificates(tmp_path, ["127.0.0.1"])
    assert again.cert.read_bytes() == cert
    other = tls.ensure_certificates(tmp_path, ["localhost", "broker.example"])
    assert other.ca.read_bytes() == ca and other.cert.read_bytes() != cert
    ctx = ssl.create_default_context(cafile=str(other.ca))
    server = tls.server_context(other)  # loads
    assert server.minimum_version == ssl.TLSVersion.TLSv1_2 and ctx


@pytest.fixture(scope="module")
def broker(module_tmp):
    with EmulatedBroker(module_tmp / "data", config_file=MULTI_TOML, tls=True) as b:
        yield b


def test_broker_generates_its_ca_into_the_data_dir(broker):
    assert broker.ca_file == broker.data_dir / "tls" / "ca.pem"
    assert broker.tls_bootstrap_servers != broker.bootstrap_servers


def test_confluent_over_sasl_ssl(broker):
    conf = confluent_conf(broker.tls_bootstrap_servers, ROOT, ca=broker.ca_file)
    md = AdminClient(conf).list_topics(timeout=10)
    assert {b.port for b in md.brokers.values()} == {int(broker.tls_bootstrap_servers.split(":")[1])}
    assert produce_one(conf, "payments", b"over-tls") is None
    consumer = Consumer(dict(conf, **{"group.id": "tls", "enable.auto.commit": False}))
    consumer.assign([TopicPartition("payments", 0, 0)])
    got, deadline = [], time.monotonic() + 15
    while not got and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got.append(msg.value())
    consumer.close()
    assert got == [b"over-tls"]


def test_kafka_python_over_sasl_ssl(broker):
    from kafka import KafkaProducer

    from kafka import KafkaConsumer, TopicPartition as KpPartition

    settings = kafka_python_conf(broker.tls_bootstrap_servers, ROOT, ca=broker.ca_file)
    producer = KafkaProducer(**settings)
    meta = producer.send("orders", b"kp-tls", key=b"k", partition=0).get(timeout=15)
    producer.close()
    # Read back over TLS exactly what was written, at the offset the producer was given.
    consumer = KafkaConsumer(**settings, enable_auto_commit=False, consumer_timeout_ms=10_000)
    tp = KpPartition("orders", 0)
    consumer.assign([tp])
    consumer.seek(tp, meta.offset)
    record = next(iter(consumer))
    consumer.close()
    assert (record.offset, record.key, record.value) == (meta.offset, b"k", b"kp-tls")


def test_wrong_key_over_sasl_ssl_is_refused(broker):
    bad = ROOT.replace("cm9vdC1rZXktMQ==", "d3Jvbmc=")
    from confluent_kafka import KafkaError, Producer

    errors: list = []
    producer = Producer(confluent_conf(broker.tls_bootstrap_servers, bad, ca=broker.ca_file,
                                       error_cb=errors.append))
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline and not any(
            e.code() == KafkaError._AUTHENTICATION for e in errors):
        producer.poll(0.2)
    assert any("wrong" in e.str() for e in errors if e.code() == KafkaError._AUTHENTICATION)


def test_plaintext_listener_keeps_working_next_to_tls(broker):
    assert auth_error(broker.bootstrap_servers, ROOT) is None


def test_certificate_files_from_the_config(tmp_path):
    files = tls.ensure_certificates(tmp_path / "certs", ["127.0.0.1", "localhost"])
    with EmulatedBroker(tmp_path / "data", tls=True, tls_cert_file=files.cert,
                        tls_key_file=files.key, tls_ca_file=files.ca) as b:
        assert b.ca_file == files.ca
        assert not (tmp_path / "data" / "tls").exists()
        conf = confluent_conf(b.tls_bootstrap_servers, "Endpoint=sb://localhost;"
                              "SharedAccessKeyName=any;SharedAccessKey=any", ca=files.ca)
        assert produce_one(conf, "hub") is None
