"""One client cannot evict every other client's incremental fetch sessions (KIP-227):
a connection holds at most MAX_SESSIONS_PER_OWNER sessions (opening more evicts its own),
and when the cache is full a new session evicts only a stale one or one no larger than
itself, else it is answered without a session (session id 0)."""
from __future__ import annotations

import kafka.errors as Errors
import pytest

from kafka_wire import codec
from kafka_wire.fetch_sessions import MAX_SESSIONS_PER_OWNER, STALE_AFTER_S, FetchSessionCache
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

CACHE = 1000  # the broker's FetchSessionCache slots


def _fetch(c: RawClient, session_id: int, epoch: int, partitions=()):
    return c.request(codec.ApiKey.Fetch, 7, replica_id=-1, max_wait_ms=0, min_bytes=0,
                     max_bytes=1 << 20, isolation_level=0, session_id=session_id, session_epoch=epoch,
                     topics=[("t1", [(p, 0, -1, 1 << 20) for p in partitions])] if partitions else [],
                     forgotten_topics_data=[])


@pytest.fixture
def broker(tmp_path):
    with EmulatedBroker(tmp_path / "data") as b:
        b.create_hub("t1", 4)
        yield b


def _open(c: RawClient, partitions) -> int:
    r = _fetch(c, 0, 0, partitions)
    assert r.error_code == 0, r
    return r.session_id


def test_one_connection_opening_a_thousand_sessions_evicts_only_its_own(broker):
    with RawClient(broker.bootstrap_servers) as victim, RawClient(broker.bootstrap_servers) as hog:
        mine = _open(victim, [0])
        assert mine > 0
        hogged = [_open(hog, [0]) for _ in range(CACHE + 10)]
        assert all(hogged)
        r = _fetch(victim, mine, 1)
        assert (r.error_code, r.session_id) == (0, mine), r
        # the hog keeps its newest sessions only
        r = _fetch(hog, hogged[-1], 1)
        assert (r.error_code, r.session_id) == (0, hogged[-1]), r
        r = _fetch(hog, hogged[-MAX_SESSIONS_PER_OWNER - 1], 1)
        assert r.error_code != 0


def test_many_connections_filling_the_cache_do_not_evict_a_larger_session(broker):
    with RawClient(broker.bootstrap_servers) as victim:
        mine = _open(victim, [0, 1])
        hogs = [RawClient(broker.bootstrap_servers) for _ in range(CACHE // MAX_SESSIONS_PER_OWNER + 5)]
        try:
            ids = [_open(h, [0]) for h in hogs for _ in range(MAX_SESSIONS_PER_OWNER)]
        finally:
            for h in hogs:
                h.close()
        assert len(ids) > CACHE and all(ids)  # each evicting another of one partition
        r = _fetch(victim, mine, 1)
        assert (r.error_code, r.session_id) == (0, mine), r


def test_a_full_cache_evicts_a_stale_session_first():
    now = [0.0]
    cache = FetchSessionCache(max_sessions=2, clock=lambda: now[0])
    big, _ = cache.resolve(0, 0, [(("t", p), 0, 1) for p in range(3)], [], owner="a")
    cache.resolve(0, 0, [(("t", 0), 0, 1)], [], owner="b")
    assert cache.resolve(0, 0, [(("t", 0), 0, 1)], [], owner="c")[0] is not None  # evicts b's (no larger)
    now[0] = STALE_AFTER_S - 1
    third, _ = cache.resolve(0, 0, [(("t", 0), 0, 1), (("t", 1), 0, 1)], [], owner="d")
    assert third is not None  # evicts c's, the least recently used no larger than itself
    assert cache.resolve(0, 0, [], [], owner="e")[0] is None  # nothing as small: not kept
    now[0] = STALE_AFTER_S
    assert cache.resolve(0, 0, [], [], owner="e")[0] is not None  # a's, unused for 2 minutes, goes
    assert len(cache) == 2


def test_a_session_grown_past_the_bound_is_dropped(broker):
    from kafka_wire.fetch_sessions import MAX_SESSION_PARTITIONS
    half = MAX_SESSION_PARTITIONS // 2 + 1
    with RawClient(broker.bootstrap_servers, timeout=60) as c, RawClient(broker.bootstrap_servers) as other:
        theirs = _open(other, [0])
        sid = _open(c, range(4, 4 + half))  # (unknown partitions of t1: cached all the same)
        r = _fetch(c, sid, 1, range(4, 4 + half))  # the same again: no growth
        assert (r.error_code, r.session_id) == (0, sid), r.error_code
        r = _fetch(c, sid, 2, range(4 + half, 4 + 2 * half))
        assert r.error_code == Errors.FetchSessionIdNotFoundError.errno
        assert _fetch(c, sid, 3).error_code == Errors.FetchSessionIdNotFoundError.errno
        r = _fetch(other, theirs, 1)
        assert (r.error_code, r.session_id) == (0, theirs), r
