"""A wrong key is an authentication error in every client, not a network error.

After a failed SaslAuthenticate the broker answers SASL_AUTHENTICATION_FAILED with
its reason, reads nothing more, and closes the connection
failed_authentication_delay_ms later (Kafka's connection.failed.authentication.
delay.ms, 100 ms): closed at once, kafka-python reads the close before the answer
and reports "socket disconnected"."""
from __future__ import annotations

import asyncio
import logging
import socket
import struct
import time

import pytest

from kafka_wire import codec
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import CONFIG_JSON, EMULATOR_CS, auth_error, kafka_python_conf

WRONG = EMULATOR_CS.replace("SAS_KEY_VALUE", "not-the-key")
REASON = "the SharedAccessKey for policy 'RootManageSharedAccessKey' is wrong"


@pytest.fixture(scope="module")
def broker():
    with EmulatedBroker(config_file=CONFIG_JSON) as b:
        yield b


def test_kafka_python_reports_the_authentication_error(broker, caplog):
    from kafka import KafkaProducer
    from kafka.errors import KafkaTimeoutError

    with caplog.at_level(logging.WARNING, logger="kafka"):
        # kafka-python 3.0 retries a failed bootstrap until max_block_ms and then raises
        # a timeout; what it met on the way is the authentication error, with our reason.
        with pytest.raises(KafkaTimeoutError):
            KafkaProducer(**kafka_python_conf(broker.bootstrap_servers, WRONG), max_block_ms=2000,
                          bootstrap_timeout_ms=2000)
    seen = [r.getMessage() for r in caplog.records if r.name.startswith("kafka.")]
    assert any("SaslAuthenticationFailedError" in m and REASON in m for m in seen), seen
    assert not any("socket disconnected" in m for m in seen), seen


def test_confluent_kafka_reports_the_authentication_error(broker):
    error = auth_error(broker.bootstrap_servers, WRONG)
    assert error is not None and REASON in error


def test_aiokafka_reports_the_authentication_error(broker, caplog):
    import aiokafka
    from aiokafka.errors import KafkaConnectionError

    async def start():
        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap_servers, security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN", sasl_plain_username="$ConnectionString",
            sasl_plain_password=WRONG, request_timeout_ms=5000)
        try:
            await producer.start()
        finally:
            await producer.stop()

    with caplog.at_level(logging.ERROR, logger="aiokafka"):
        with pytest.raises(KafkaConnectionError):
            asyncio.run(start())
    seen = [r.getMessage() for r in caplog.records if r.name.startswith("aiokafka")]
    assert any("SaslAuthenticationFailed" in m and REASON in m for m in seen), seen


def _frame(sock: socket.socket) -> bytes:
    head = b""
    while len(head) < 4:
        chunk = sock.recv(4 - len(head))
        if not chunk:
            raise ConnectionError("closed")
        head += chunk
    (size,) = struct.unpack(">i", head)
    body = b""
    while len(body) < size:
        chunk = sock.recv(size - len(body))
        if not chunk:
            raise ConnectionError("closed")
        body += chunk
    return body


def _request(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    client = b"raw"
    header = struct.pack(">hhih", api_key, version, correlation_id, len(client)) + client
    if version >= 2 and api_key == codec.ApiKey.SaslAuthenticate:
        header += b"\x00"  # flexible header: no tagged fields
    frame = header + body
    return struct.pack(">i", len(frame)) + frame


def _failed_login(port: int) -> tuple[socket.socket, float]:
    """Handshake PLAIN, then SaslAuthenticate v1 with a wrong key; (socket, time of answer)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    mech = b"PLAIN"
    sock.sendall(_request(codec.ApiKey.SaslHandshake, 1, 1, struct.pack(">h", len(mech)) + mech))
    _frame(sock)
    token = b"\x00$ConnectionString\x00" + WRONG.encode()
    sock.sendall(_request(codec.ApiKey.SaslAuthenticate, 1, 2, struct.pack(">i", len(token)) + token))
    answer = _frame(sock)
    answered = time.monotonic()
    (correlation, error) = struct.unpack_from(">ih", answer)
    assert (correlation, error) == (2, 58)
    assert REASON.encode() in answer
    return sock, answered


def _closed_after(sock: socket.socket, answered: float) -> float:
    sock.settimeout(5)
    try:
        data = sock.recv(1)
    except ConnectionResetError:  # closing with our unread request in its buffer resets
        data = b""
    assert data == b""  # closed, and nothing more was answered
    return time.monotonic() - answered


def test_the_close_follows_the_answer_after_the_delay_and_nothing_more_is_answered(broker):
    sock, answered = _failed_login(broker.port)
    with sock:
        # A request sent during the delay is neither read nor answered.
        sock.sendall(_request(codec.ApiKey.ApiVersions, 0, 3, b""))
        waited = _closed_after(sock, answered)
    assert 0.07 <= waited < 2.0, waited


def test_delay_zero_closes_at_once():
    with EmulatedBroker(config_file=CONFIG_JSON, failed_authentication_delay_ms=0) as b:
        sock, answered = _failed_login(b.port)
        with sock:
            assert _closed_after(sock, answered) < 0.07


def test_connections_in_their_delay_do_not_hold_up_other_clients(broker):
    from confluent_kafka import Producer

    waiting = [_failed_login(broker.port)[0] for _ in range(50)]
    try:
        started = time.monotonic()
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers,
                             "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                             "sasl.username": "$ConnectionString", "sasl.password": EMULATOR_CS})
        delivered = []
        producer.produce("eh1", b"v", on_delivery=lambda err, msg: delivered.append(err))
        producer.flush(10)
        assert delivered == [None]
        assert time.monotonic() - started < 5
    finally:
        for sock in waiting:
            sock.close()
