"""A connection's incremental fetch sessions (KIP-227) go when it closes: only that connection
could use them, yet they stayed in the broker's one cache (a slot of its 1,000, and every
partition they held) until evicted. Sessions of other connections stay."""
from __future__ import annotations

import time

import pytest

from kafka_wire import codec
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import MULTI_TOML
from tests.hostile.surfaces import CREDENTIALS
from tests.rawclient import RawClient

ROOT = CREDENTIALS[0]
NONE = next(c for c in CREDENTIALS if c.kind == "none")
WRONG_KEY = next(c for c in CREDENTIALS if c.kind == "wrong-key")
ORDERS_ONLY = next(c for c in CREDENTIALS if c.kind == "wrong-scope")  # Send+Listen on 'orders'


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("sessions") / "data", config_file=MULTI_TOML) as b:
        yield b


def _sessions(broker) -> int:
    return broker.call(lambda: len(broker.broker.services.fetch_sessions))


def _open_session(c: RawClient, hub: str = "orders") -> int:
    r = c.request(codec.ApiKey.Fetch, 7, replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                  isolation_level=0, session_id=0, session_epoch=0,
                  topics=[(hub, [(0, 0, -1, 1 << 20)])], forgotten_topics_data=[])
    assert r.error_code == 0 and r.session_id > 0, r
    return r.session_id


def _wait_for(broker, count: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while _sessions(broker) != count:
        assert time.monotonic() < deadline, f"{_sessions(broker)} fetch sessions, not {count}"
        time.sleep(0.02)


@pytest.mark.parametrize("credential", [ROOT, ORDERS_ONLY], ids=lambda c: c.kind)
def test_a_closed_connections_sessions_go_and_others_stay(broker, credential):
    _wait_for(broker, 0)
    with RawClient(broker.bootstrap_servers) as other:
        assert other.login(ROOT.password()) == 0
        kept = _open_session(other, "payments")
        with RawClient(broker.bootstrap_servers) as c:
            assert c.login(credential.password()) == 0
            _open_session(c)
            _open_session(c)  # a consumer reassigned opens another (up to 8 a connection)
            assert _sessions(broker) == 3
        _wait_for(broker, 1)  # the other connection's session stays, and still works
        r = other.request(codec.ApiKey.Fetch, 7, replica_id=-1, max_wait_ms=0, min_bytes=0,
                          max_bytes=1 << 20, isolation_level=0, session_id=kept, session_epoch=1,
                          topics=[], forgotten_topics_data=[])
        assert (r.error_code, r.session_id) == (0, kept)
    _wait_for(broker, 0)


def test_a_kafka_python_consumer_leaves_no_session_behind(broker):
    from kafka import KafkaConsumer

    from tests.eventhubs.conftest import kafka_python_conf

    _wait_for(broker, 0)
    consumer = KafkaConsumer(**kafka_python_conf(broker.bootstrap_servers, ORDERS_ONLY.password()),
                             auto_offset_reset="earliest", fetch_max_wait_ms=100)
    try:
        from kafka import TopicPartition
        consumer.assign([TopicPartition("orders", 0)])
        deadline = time.monotonic() + 20
        while _sessions(broker) == 0:  # its fetches open a session
            assert time.monotonic() < deadline, "the consumer opened no fetch session"
            consumer.poll(timeout_ms=100)
    finally:
        consumer.close()
    _wait_for(broker, 0)


@pytest.mark.parametrize("credential", [NONE, WRONG_KEY], ids=lambda c: c.kind)
def test_without_a_valid_credential_no_session_is_opened(broker, credential):
    _wait_for(broker, 0)
    with RawClient(broker.bootstrap_servers) as c:
        if credential.password() is not None:
            assert c.login(credential.password()) != 0
        with pytest.raises(OSError):
            _open_session(c)
    assert _sessions(broker) == 0
