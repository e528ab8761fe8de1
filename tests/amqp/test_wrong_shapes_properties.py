"""The functions that read what a client put in an attach, fed any AMQP value: an
owner level, a link address, a selector's value. Each answers with its value or
its own refusal (which becomes an AMQP condition), never another exception (which
closed the whole connection with amqp:internal-error and a traceback), and never
takes a shape it does not name ('١' for 1, "7" for an owner level)."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from proton import Data, symbol, uint, ulong

from kafka_wire.amqp import addresses, consume
from kafka_wire.log.config import LogConfig
from kafka_wire.log.partition_log import PartitionLog
from tests.unit.log.log_helpers import make_batch

# Plain values and tagged tuples, made AMQP types in the test (see tests/amqp/test_frames.py)
_any_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**64, 2**64), st.floats(), st.text(max_size=12),
              st.binary(max_size=8), st.tuples(st.just("uint"), st.integers(0, 2**32 - 1)),
              st.tuples(st.just("ulong"), st.integers(0, 2**64 - 1)),
              st.tuples(st.just("symbol"), st.text(st.characters(max_codepoint=127), max_size=10))),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=8)


def _amqp(value):
    if isinstance(value, tuple):
        kind, v = value
        return uint(v) if kind == "uint" else ulong(v) if kind == "ulong" else symbol(v)
    if isinstance(value, list):
        return [_amqp(v) for v in value]
    if isinstance(value, dict):
        return {k: _amqp(v) for k, v in value.items()}
    return value


def _as_decoded(value):
    """``value`` as the broker gets it: encoded by proton, then decoded (None where proton
    will not encode it, e.g. an int past a long)."""
    data = Data()
    try:
        data.put_object(value)
    except Exception:
        return None
    out = Data()
    out.decode(bytes(data.encode()))
    out.rewind()
    out.next()
    return out.get_object()


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_any_value, st.booleans())
def test_an_owner_level_is_a_long_or_a_refusal(value, as_symbol):
    decoded = _as_decoded({symbol(consume.EPOCH) if as_symbol else consume.EPOCH: _amqp(value)})
    if decoded is None:
        return
    try:
        level = consume.owner_level(decoded)
    except consume.FilterError as exc:
        assert len(str(exc)) < 400
        return
    raw = next(iter(decoded.values()))
    if raw is None:
        assert level is None
    else:
        assert isinstance(raw, int) and not isinstance(raw, bool) and level == raw
        assert -2**63 <= level < 2**63


_ADDRESS_PIECES = st.one_of(
    st.text(max_size=12), st.sampled_from(["Partitions", "ConsumerGroups", "Publishers", "$cbs", "0",
                                           "\u00b2", "\u0661", "-1", "9" * 5000, "amqps://", "[::1",
                                           "%2F", ":", "//"]))


@settings(max_examples=600, deadline=None, derandomize=True)
@given(st.one_of(st.text(max_size=40), st.lists(_ADDRESS_PIECES, max_size=6).map("/".join),
                 st.lists(_ADDRESS_PIECES, max_size=5).map(lambda p: "amqps://h/" + "/".join(p))))
def test_an_address_parses_or_is_refused(text):
    try:
        address = addresses.parse(text)
    except addresses.AddressError as exc:
        assert len(str(exc)) < 1000
        return
    if address.partition is not None:  # only from ASCII digits that spell it
        assert re.search(rf"/0*{address.partition}/?$", text), (text, address)


@pytest.fixture(scope="module")
def plog(tmp_path_factory):
    log = PartitionLog(tmp_path_factory.mktemp("selector") / "p", LogConfig(segment_bytes=4096), now_ms=0)
    for i in range(20):
        log.append(make_batch(2, value_size=50), now_ms=1_000 + i)
    yield log
    log.close()


_VALUES = st.one_of(st.text(max_size=12), st.from_regex(r"-?[0-9\u00b2\u0661-]{1,8}", fullmatch=True),
                    st.integers(-2**70, 2**70).map(str), st.just("9" * 5000), st.just("--5"))


@settings(max_examples=600, deadline=None, derandomize=True)
@given(st.sampled_from(["offset", "sequence-number", "enqueued-time"]), st.sampled_from([">", ">="]),
       _VALUES.filter(lambda v: "'" not in v))
def test_a_selector_value_starts_somewhere_in_the_log_or_is_refused(plog, what, op, value):
    selector = f"amqp.annotation.x-opt-{what} {op} '{value}'"
    try:
        start = consume.start_offset(plog, selector)
    except consume.FilterError as exc:
        assert len(str(exc)) < 1000
        return
    except consume.PastTheEnd as exc:  # only a number past the last event, in the service's words
        last, (last_offset, _) = consume.last_event(plog)
        wanted = int(value) + (op == ">" and what == "sequence-number")
        assert what != "enqueued-time" and wanted > (last + 1 if what == "sequence-number" else last_offset)
        assert str(exc).startswith(f"The supplied {what.replace('-', ' ')} '{int(value)}' is invalid. ")
        return
    assert plog.log_start_offset <= start <= plog.log_end_offset
    assert value.isascii() or value == "@latest", value
    if what != "enqueued-time" and value not in ("-1", "@latest"):  # (not past the last event)
        last, (last_offset, _) = consume.last_event(plog)
        wanted = int(value) + (op == ">" and what == "sequence-number")
        assert wanted <= (last + 1 if what == "sequence-number" else last_offset)
