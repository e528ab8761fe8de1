"""An idempotent batch written under a producer id the broker never issued is refused
(UNKNOWN_PRODUCER_ID): a client wrote one as the id InitProducerId hands out next, and the
producer given that id then had its first record acknowledged as a duplicate of it and
never stored. Ids issued before a restart stay valid after it (the block end is persisted)."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from kafka_wire import codec
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.conftest import MULTI_TOML, confluent_conf
from tests.hostile.surfaces import CREDENTIALS
from tests.rawclient import RawClient
from tests.unit.log.log_helpers import make_batch

UNKNOWN_PRODUCER_ID = 59
ROOT = CREDENTIALS[0]
NONE = next(c for c in CREDENTIALS if c.kind == "none")
WRONG_KEY = next(c for c in CREDENTIALS if c.kind == "wrong-key")
ORDERS_ONLY = next(c for c in CREDENTIALS if c.kind == "wrong-scope")  # Send+Listen on 'orders'
HUB = "orders"


def _produce(c: RawClient, pid: int, seq: int = 0, tag: int = 666) -> tuple[int, int]:
    blob = make_batch(1, producer_id=pid, producer_epoch=0, base_sequence=seq, tag=tag)
    r = c.request(codec.ApiKey.Produce, 7, transactional_id=None, acks=-1, timeout_ms=5000,
                  topic_data=[(HUB, [(0, blob)])])
    part = r.responses[0][1][0]
    return part.error_code, part.base_offset


def _raw(broker, credential) -> RawClient:
    c = RawClient(broker.bootstrap_servers)
    assert c.login(credential.password()) == 0
    return c


def _hub_values(broker, credential) -> list[bytes]:
    """Every value of HUB/0, read by a real consumer to the end of the partition."""
    c = Consumer(confluent_conf(broker.bootstrap_servers, credential.password(), **{
        "group.id": f"check-{time.monotonic_ns()}", "auto.offset.reset": "earliest",
        "enable.partition.eof": True, "enable.auto.commit": False}))
    got: list[bytes] = []
    try:
        c.assign([TopicPartition(HUB, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error():
                if m.error().code() == m.error()._PARTITION_EOF:
                    return got
                continue
            got.append(m.value())
        raise AssertionError(f"the end of {HUB}/0 was not reached; read {got}")
    finally:
        c.close()


def _idempotent_send(broker, credential, value: bytes) -> tuple:
    acks: list = []
    p = Producer(confluent_conf(broker.bootstrap_servers, credential.password(),
                                **{"enable.idempotence": True}))
    p.produce(HUB, value, partition=0, on_delivery=lambda err, m: acks.append((err, m.offset())))
    assert p.flush(20) == 0
    return acks[0]


@pytest.mark.parametrize("credential", [ROOT, ORDERS_ONLY], ids=lambda c: c.kind)
def test_a_batch_under_an_unissued_producer_id_is_refused(tmp_path, credential):
    with EmulatedBroker(tmp_path / "data", config_file=MULTI_TOML) as broker:
        with _raw(broker, credential) as squatter:
            # 0 is the id InitProducerId hands out next; 2**40 one it never handed out.
            assert _produce(squatter, 0) == (UNKNOWN_PRODUCER_ID, -1)
            assert _produce(squatter, 1 << 40) == (UNKNOWN_PRODUCER_ID, -1)
            # Nor can it claim an unissued id by asking for its epoch to be bumped (KIP-360).
            r = squatter.request(codec.ApiKey.InitProducerId, 3, transactional_id=None,
                                 transaction_timeout_ms=60_000, producer_id=5, producer_epoch=0)
            assert r.error_code == 0 and (r.producer_id, r.producer_epoch) == (0, 0)
            assert _produce(squatter, 5) == (UNKNOWN_PRODUCER_ID, -1)
        # The next producer's first record is stored, not taken for a duplicate.
        err, offset = _idempotent_send(broker, credential, b"legit-record")
        assert err is None and offset == 0
        assert _hub_values(broker, credential) == [b"legit-record"]


def test_ids_issued_before_a_restart_stay_valid_after_it(tmp_path):
    data = tmp_path / "data"
    with EmulatedBroker(data, config_file=MULTI_TOML) as broker:
        with _raw(broker, ROOT) as c:
            r = c.request(codec.ApiKey.InitProducerId, 1, transactional_id=None, transaction_timeout_ms=60_000)
            pid = r.producer_id
            assert _produce(c, pid, 0, tag=1) == (0, 0)
    with EmulatedBroker(data, config_file=MULTI_TOML) as broker:
        with _raw(broker, ROOT) as c:
            assert _produce(c, pid, 1, tag=2) == (0, 1)  # the producer goes on after the restart
            r = c.request(codec.ApiKey.InitProducerId, 1, transactional_id=None, transaction_timeout_ms=60_000)
            after = r.producer_id
            assert after > pid
            assert _produce(c, after + 1) == (UNKNOWN_PRODUCER_ID, -1)
            assert _produce(c, after, 0, tag=3) == (0, 2)


@pytest.mark.parametrize("credential", [NONE, WRONG_KEY], ids=lambda c: c.kind)
def test_without_a_valid_credential_nothing_is_written(tmp_path, credential):
    with EmulatedBroker(tmp_path / "data", config_file=MULTI_TOML) as broker:
        with RawClient(broker.bootstrap_servers) as c:
            if credential.password() is not None:
                assert c.login(credential.password()) != 0
            with pytest.raises(OSError):
                _produce(c, 0)
        err, offset = _idempotent_send(broker, ROOT, b"legit-record")
        assert err is None and offset == 0
        assert _hub_values(broker, ROOT) == [b"legit-record"]
