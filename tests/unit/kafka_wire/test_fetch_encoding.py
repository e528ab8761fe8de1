"""The Fetch fast-path encoder decodes, with kafka-python's codec, to exactly
what it was given, for every version the broker serves."""
from __future__ import annotations

import uuid
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire import codec
from kafka_wire.apis import registry
from kafka_wire.apis.fetch_encoding import encode_fetch, encode_one

registry.load_all()
_REG = registry.lookup(codec.ApiKey.Fetch)
VERSIONS = list(range(_REG.min_version, _REG.max_version + 1))


@dataclass
class _R:
    partition: int
    error: int
    high_watermark: int
    last_stable: int
    log_start: int
    aborted: list | None
    records: bytes


reads = st.builds(
    _R, partition=st.integers(0, 2**31 - 1), error=st.integers(-1, 120),
    high_watermark=st.integers(-1, 2**62), last_stable=st.integers(-1, 2**62), log_start=st.integers(-1, 2**62),
    aborted=st.one_of(st.none(), st.just([]), st.lists(st.tuples(st.integers(0, 2**62), st.integers(0, 2**62)),
                                                      max_size=3)),
    # small (copied into the answer), around the copy limit, and past two-byte lengths (pieces of their own)
    records=st.one_of(st.binary(max_size=300), st.binary(min_size=2040, max_size=2060),
                      st.builds(lambda n: b"r" * n, st.integers(16_300, 16_500))))
topics = st.lists(st.tuples(st.text(min_size=1, max_size=20), st.uuids(), st.lists(reads, min_size=1, max_size=3)),
                  max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(VERSIONS), topics, st.integers(0, 2**31 - 1), st.integers(-1, 120))
def test_fast_fetch_encoding_matches_the_codec(version, topic_list, session_id, error):
    raw = encode_fetch(version, topic_list, session_id, error)
    body = b"".join(bytes(c) for c in raw.body)
    # Large record sets are pieces of the answer as given (never copied); small ones are copied in.
    pieces = {id(c) for c in raw.body}
    for _name, _id, rs in topic_list:
        for r in rs:
            if len(r.records) >= 2:  # (b"" and one-byte bytes are shared objects)
                assert (id(r.records) in pieces) == (len(r.records) >= 2048)
    decoded = codec.response_class(codec.ApiKey.Fetch).decode(body, version=version)
    if version >= 7:
        assert (decoded.error_code, decoded.session_id) == (error, session_id)
    assert len(decoded.responses) == len(topic_list)
    for (name, topic_id, rs), t in zip(topic_list, decoded.responses):
        if version >= 13:
            assert t.topic_id == topic_id
        else:
            assert t.topic == name
        for r, p in zip(rs, t.partitions, strict=True):
            assert (p.partition_index, p.error_code, p.high_watermark) == (r.partition, r.error, r.high_watermark)
            if version >= 4:
                assert p.last_stable_offset == r.last_stable
                got = None if p.aborted_transactions is None else \
                    [(a.producer_id, a.first_offset) for a in p.aborted_transactions]
                assert got == r.aborted
            if version >= 5:
                assert p.log_start_offset == r.log_start
            assert bytes(p.records or b"") == r.records


# encode_one (a one-partition answer from a kept head) writes exactly the bytes and pieces
# encode_fetch writes for the same partition, with the kept head reused across calls.
# A few names and ids, so heads are kept and reused within a run.
names = st.sampled_from([None, "t", "orders", "a" * 40])
ids = st.sampled_from([None, uuid.UUID(int=1), uuid.UUID(int=2**100)])


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.sampled_from(VERSIONS), names, ids, st.lists(reads, min_size=1, max_size=4),
       st.sampled_from([0, 0, 5, 300]))
def test_encode_one_writes_what_encode_fetch_writes(version, name, topic_id, rs, throttle):
    for r in rs:  # several answers of the same topic: the kept head serves all but the first
        one = encode_one(version, name, topic_id, r, throttle)
        general = encode_fetch(version, [(name, topic_id, [r])], 0, 0, throttle)
        assert b"".join(map(bytes, one.body)) == b"".join(map(bytes, general.body))
        assert one.flexible_header == general.flexible_header
        # Large record sets leave as the log's own views, small ones in the one piece.
        assert [len(c) for c in one.body if c is r.records] == [len(c) for c in general.body if c is r.records]
