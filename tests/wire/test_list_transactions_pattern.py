"""ListTransactions v2's transactional-id pattern (KIP-1152): matched against whole ids with
RE2, in linear time, so a backtracking pattern cannot stall the broker; a pattern RE2
refuses is INVALID_REGULAR_EXPRESSION."""
from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire import codec
from kafka_wire.apis.list_transactions import PATTERN_MAX_CHARS
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

INVALID_REGULAR_EXPRESSION = 128
EVIL_ID = "a" * 30 + "!"  # '(a+)+' backtracks 2**30 ways over it in Python's re
IDS = ["tx-1", "tx-2", "other", EVIL_ID]


@pytest.fixture(scope="module")
def broker():
    with EmulatedBroker() as b:
        with RawClient(b.bootstrap_servers) as c:
            for tid in IDS:
                r = c.request(codec.ApiKey.InitProducerId, 1, transactional_id=tid,
                              transaction_timeout_ms=60000)
                assert r.error_code == 0, r
        yield b


def _list(client: RawClient, pattern: str | None):
    return client.request(codec.ApiKey.ListTransactions, 2, state_filters=[],
                          producer_id_filters=[], duration_filter=-1,
                          transactional_id_pattern=pattern)


def test_a_pattern_lists_the_ids_it_matches_whole(broker):
    with RawClient(broker.bootstrap_servers) as c:
        r = _list(c, "tx-.*")
        assert r.error_code == 0 and sorted(s.transactional_id for s in r.transaction_states) == \
            ["tx-1", "tx-2"]
        assert [s.transactional_id for s in _list(c, "tx").transaction_states] == []
        assert len(_list(c, None).transaction_states) == len(IDS)


def test_a_backtracking_pattern_is_answered_at_once_and_stalls_no_one(broker):
    # Before: Python's re took ~2**30 steps on the event loop; every client waited.
    with RawClient(broker.bootstrap_servers, timeout=5) as c:
        started = time.monotonic()
        r = _list(c, "(a+)+")
        assert r.error_code == 0 and [s.transactional_id for s in r.transaction_states] == []
        r = _list(c, "(a|aa)+!")
        assert [s.transactional_id for s in r.transaction_states] == [EVIL_ID]
        with RawClient(broker.bootstrap_servers, timeout=5) as other:
            assert other.request(codec.ApiKey.ApiVersions, 0).error_code == 0
        assert time.monotonic() - started < 5


@pytest.mark.parametrize("pattern", ["(", "a\\1", "(?P<x>a)(?P=x)", "(a{100}){100}",
                                     "\\p{L}{500}", "x" * (PATTERN_MAX_CHARS + 1)],
                         ids=["unclosed", "backreference", "named-backreference",
                              "nested-repetition", "over-memory-cap", "too-long"])
def test_a_pattern_re2_refuses_is_invalid_regular_expression(broker, pattern):
    with RawClient(broker.bootstrap_servers) as c:
        r = _list(c, pattern)
        assert (r.error_code, r.transaction_states) == (INVALID_REGULAR_EXPRESSION, []), r


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(max_size=60) | st.text(alphabet="a!()+*?|{}[]^$\\.1-9tx-", max_size=60))
def test_any_pattern_is_answered(broker, pattern):
    with RawClient(broker.bootstrap_servers, timeout=5) as c:
        r = _list(c, pattern)
    assert r.error_code in (0, INVALID_REGULAR_EXPRESSION)
    assert {s.transactional_id for s in r.transaction_states} <= set(IDS)
