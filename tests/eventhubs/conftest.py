"""Event Hubs test helpers: config files, client settings for `$ConnectionString`
SASL/PLAIN over SASL_PLAINTEXT and SASL_SSL, and a way to wait for an
authentication failure as a client sees it."""
from __future__ import annotations

import struct
import time
from pathlib import Path

import pytest

from kafka_wire import codec
from tests.rawclient import RawClient

DATA = Path(__file__).resolve().parent / "data"
CONFIG_JSON = DATA / "Config.json"
MULTI_TOML = DATA / "multi.toml"
STRICT_TOML = DATA / "strict.toml"
EMULATOR_CS = ("Endpoint=sb://localhost;SharedAccessKeyName=RootManageSharedAccessKey;"
               "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;")


def confluent_conf(bootstrap: str, password: str | None = None, *, ca: Path | None = None,
                   **extra) -> dict:
    conf = {"bootstrap.servers": bootstrap, "reconnect.backoff.ms": 500,
            "reconnect.backoff.max.ms": 2000, "log_level": 2}
    if password is not None:
        conf.update({"security.protocol": "SASL_SSL" if ca else "SASL_PLAINTEXT",
                     "sasl.mechanism": "PLAIN", "sasl.username": "$ConnectionString",
                     "sasl.password": password})
        if ca:
            conf["ssl.ca.location"] = str(ca)
    conf.update(extra)
    return conf


def kafka_python_conf(bootstrap: str, password: str, *, ca: Path | None = None) -> dict:
    conf = {"bootstrap_servers": bootstrap, "security_protocol": "SASL_SSL" if ca else "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN", "sasl_plain_username": "$ConnectionString",
            "sasl_plain_password": password, "request_timeout_ms": 10000}
    if ca:
        conf["ssl_cafile"] = str(ca)
    return conf


def auth_error(bootstrap: str, password: str, timeout: float = 8.0) -> str | None:
    """The authentication error a confluent-kafka client reports, or None if it connects."""
    from confluent_kafka import KafkaError, Producer

    errors: list = []
    producer = Producer(confluent_conf(bootstrap, password, error_cb=errors.append))
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            producer.poll(0.2)
            for e in errors:
                if e.code() == KafkaError._AUTHENTICATION:
                    return e.str()
            try:
                producer.list_topics(timeout=0.5)
                return None
            except Exception:
                pass
        return "no answer"
    finally:
        del producer


def produce_one(conf: dict, topic: str, value: bytes = b"v", key: bytes | None = None,
                timeout: float = 15.0):
    """Produce one record; the delivery error (a KafkaError) or None."""
    from confluent_kafka import Producer

    result = []
    producer = Producer(dict(conf, **{"linger.ms": 0, "message.timeout.ms": int(timeout * 1000)}))
    producer.produce(topic, value, key=key, on_delivery=lambda err, msg: result.append(err))
    producer.flush(timeout + 5)
    assert result, "no delivery report"
    return result[0]


def sasl_raw(client: RawClient, password: str, version: int = 1):
    """SaslHandshake + SaslAuthenticate (v1) on a raw connection; the authenticate answer."""
    hs = client.request(codec.ApiKey.SaslHandshake, version, mechanism="PLAIN")
    assert hs.error_code == 0, hs
    token = b"\x00$ConnectionString\x00" + password.encode()
    if version == 0:
        client.send_raw(struct.pack(">i", len(token)) + token)
        size = struct.unpack(">i", client._recv(4))[0]
        return client._recv(size)
    return client.request(codec.ApiKey.SaslAuthenticate, 2, auth_bytes=token)


@pytest.fixture(scope="module")
def module_tmp(tmp_path_factory):
    return tmp_path_factory.mktemp("eh")
