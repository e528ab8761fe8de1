"""Incremental fetch sessions (KIP-227) belong to the connection that opened them: one cache
serves every namespace, so a session id named on another connection is not found there
(FETCH_SESSION_ID_NOT_FOUND), and that connection can neither read the session's
partitions, advance its epoch, nor close it. Ids are random positive int32s."""
from __future__ import annotations

import time

import kafka.errors as Errors
import pytest

from kafka_wire import codec
from kafka_wire.eventhubs import connection_string
from kafka_wire.log import batch as rb
from kafka_wire.log import records as rec
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

NOT_FOUND = Errors.FetchSessionIdNotFoundError.errno
HUB = "secret-hub-of-tenant-two"
CONFIG = f'''
default_namespace = "tenant-one"
[namespaces.tenant-one]
tier = "Standard"
[namespaces.tenant-one.eventhubs.orders]
partitions = 1
[namespaces.tenant-two]
tier = "Standard"
[namespaces.tenant-two.policies.RootManageSharedAccessKey]
rights = ["Manage", "Send", "Listen"]
primary_key = "secretkey2"
[namespaces.tenant-two.eventhubs.{HUB}]
partitions = 1
'''
TENANT_TWO = connection_string.build("tenant-two.servicebus.windows.net",
                                     key_name="RootManageSharedAccessKey", key="secretkey2")


def _batch(value: bytes) -> bytes:
    ts = int(time.time() * 1000)
    return bytes(rb.encode_batch(base_offset=0, partition_leader_epoch=0, attributes=0,
                                 last_offset_delta=0, base_timestamp=ts, max_timestamp=ts,
                                 producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                 records_count=1, records=rec.encode_record(0, 0, b"k", value)))


def _fetch(c: RawClient, session_id: int, epoch: int, topics=()):
    return c.request(codec.ApiKey.Fetch, 7, replica_id=-1, max_wait_ms=0, min_bytes=0,
                     max_bytes=1 << 20, isolation_level=0, session_id=session_id,
                     session_epoch=epoch, topics=list(topics), forgotten_topics_data=[])


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    config = tmp_path_factory.mktemp("sessions") / "two.toml"
    config.write_text(CONFIG)
    with EmulatedBroker(config_file=config) as b:
        with RawClient(b.bootstrap_servers) as c:
            assert c.login(TENANT_TWO) == 0
            r = c.request(codec.ApiKey.Produce, 7, transactional_id=None, acks=1, timeout_ms=5000,
                          topic_data=[(HUB, [(0, _batch(b"tenant-two's secret"))])])
            assert r.responses[0].partition_responses[0].error_code == 0, r
        yield b


@pytest.fixture
def victim(broker):
    """A tenant-two consumer with a session on its hub: (client, session id)."""
    with RawClient(broker.bootstrap_servers) as c:
        assert c.login(TENANT_TWO) == 0
        r = _fetch(c, 0, 0, [(HUB, [(0, 0, -1, 1 << 20)])])
        assert r.error_code == 0 and r.session_id > 0, r
        yield c, r.session_id


def _still_works(c: RawClient, session_id: int, epoch: int = 1) -> None:
    r = _fetch(c, session_id, epoch)
    assert (r.error_code, r.session_id) == (0, session_id), r


def test_another_namespaces_anonymous_client_cannot_use_a_session(broker, victim):
    # Before: ids were 1, 2, 3...; this client read tenant-two's hub through the session
    # and the owner's next fetch failed INVALID_FETCH_SESSION_EPOCH.
    owner, sid = victim
    with RawClient(broker.bootstrap_servers) as other:  # anonymous, in tenant-one
        r = _fetch(other, sid, 1)
        assert (r.error_code, r.responses) == (NOT_FOUND, []), r
    _still_works(owner, sid)


def test_another_connection_with_the_same_key_cannot_use_it_either(broker, victim):
    owner, sid = victim
    with RawClient(broker.bootstrap_servers) as other:
        assert other.login(TENANT_TWO) == 0
        assert _fetch(other, sid, 1).error_code == NOT_FOUND
    _still_works(owner, sid)


def test_another_connection_cannot_close_a_session_or_reopen_it(broker, victim):
    owner, sid = victim
    with RawClient(broker.bootstrap_servers) as other:
        assert _fetch(other, sid, -1).error_code == 0   # (sessionless: nothing of the owner's)
        r = _fetch(other, sid, 0, [("orders", [(0, 0, -1, 1 << 20)])])
        assert r.error_code == 0 and r.session_id not in (0, sid), r  # a session of its own
        assert [t[0] for t in r.responses] == ["orders"]
    _still_works(owner, sid)
    _still_works(owner, sid, 2)


def test_the_owner_closes_and_reopens_its_own_session(broker, victim):
    owner, sid = victim
    r = _fetch(owner, sid, 0, [(HUB, [(0, 0, -1, 1 << 20)])])
    assert r.error_code == 0 and r.session_id not in (0, sid), r
    assert _fetch(owner, sid, 1).error_code == NOT_FOUND  # the old one is gone
    new = r.session_id
    assert _fetch(owner, new, -1).error_code == 0
    assert _fetch(owner, new, 1).error_code == NOT_FOUND


def test_session_ids_are_distinct_positive_int32s(broker):
    with RawClient(broker.bootstrap_servers) as c:
        ids = [_fetch(c, 0, 0, [("orders", [(0, 0, -1, 1024)])]).session_id for _ in range(50)]
    assert len(set(ids)) == 50 and all(0 < i < 2**31 for i in ids)
