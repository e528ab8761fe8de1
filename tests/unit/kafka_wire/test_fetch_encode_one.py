"""encode_one (a one-partition answer from a kept head) writes exactly the bytes
and pieces encode_fetch writes for the same partition, in every served version,
with the kept head reused across calls."""
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
                                                      max_size=2)),
    # one-byte and two-byte lengths, around the copy limit, and past it
    records=st.one_of(st.binary(max_size=300), st.binary(min_size=2040, max_size=2060),
                      st.builds(lambda n: b"r" * n, st.integers(16_300, 16_500))))
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
