"""The Produce fast-path decoder reads every served version exactly as the
schema codec does, and refuses what the codec refuses."""
from __future__ import annotations

import struct
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire import codec
from kafka_wire.apis import registry
from kafka_wire.apis.produce_decoding import ProduceDecodeError, decode_produce

registry.load_all()
_REG = registry.lookup(codec.ApiKey.Produce)
VERSIONS = list(range(_REG.min_version, _REG.max_version + 1))
P = codec.request_class(codec.ApiKey.Produce)

parts = st.lists(st.tuples(st.integers(-2**31, 2**31 - 1), st.one_of(st.none(), st.binary(max_size=200))),
                 max_size=3)
topics = st.lists(st.tuples(st.text(min_size=1, max_size=12), st.uuids(), parts), max_size=3)


def _request(version, tid, acks, timeout, topic_list):
    return P(version=version, transactional_id=tid, acks=acks, timeout_ms=timeout, topic_data=[
        P.TopicProduceData(name=name, topic_id=tid_, partition_data=[
            P.TopicProduceData.PartitionProduceData(index=i, records=r) for i, r in ps])
        for name, tid_, ps in topic_list])


def _same_as_codec(version, tid, acks, timeout, topic_list, prefix=b""):
    """The fast decoder's reading of the request, held to the codec's; returns it."""
    body = bytes(_request(version, tid, acks, timeout, topic_list).encode(version=version))
    frame = memoryview(bytearray(prefix + body))
    fast = decode_produce(frame, len(prefix), version)
    slow = P.decode(body, version=version)
    assert (fast.transactional_id, fast.acks, fast.timeout_ms) == \
           (slow.transactional_id, slow.acks, slow.timeout_ms)
    assert [(t.topic_id if version >= 13 else t.name,
             [(p.index, None if p.records is None else bytes(p.records)) for p in t.partition_data])
            for t in fast.topic_data] == \
           [(t.topic_id if version >= 13 else t.name, [(p.index, p.records) for p in t.partition_data])
            for t in slow.topic_data]
    return fast


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(VERSIONS), st.one_of(st.none(), st.text(max_size=10)),
       st.integers(-1, 1), st.integers(0, 2**31 - 1), topics, st.binary(max_size=3))
def test_fast_produce_decoding_matches_the_codec(version, tid, acks, timeout, topic_list, prefix):
    fast = _same_as_codec(version, tid, acks, timeout, topic_list, prefix)
    for t in fast.topic_data:
        for p in t.partition_data:  # views into the frame, writable for in-place patching
            assert p.records is None or not p.records.readonly


# Flexible versions read one-byte compact lengths inline and longer ones through the general
# helpers: strings and records on both sides of 127 bytes (a two-byte varint), null and empty.
_FLEXIBLE = [v for v in VERSIONS if v >= 9]
_edge_text = st.text(alphabet="wide0é", max_size=140)
_edge_parts = st.lists(st.tuples(st.integers(-2**31, 2**31 - 1),
                                 st.one_of(st.none(), st.binary(max_size=300))), max_size=3)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.sampled_from(_FLEXIBLE), st.one_of(st.none(), _edge_text),
       st.lists(st.tuples(_edge_text, st.uuids(), _edge_parts), max_size=3),
       st.binary(max_size=2))
def test_inline_compact_lengths_read_as_the_codec_does(version, tid, topic_list, prefix):
    _same_as_codec(version, tid, -1, 30000, topic_list, prefix)


def test_many_partitions_need_a_longer_compact_count():
    # 130 partitions: the partition count's varint takes two bytes (the general helper's path).
    parts = [(i, bytes([i % 256]) * (i % 5)) for i in range(130)]
    for version in _FLEXIBLE:
        _same_as_codec(version, "t" * 200, 1, 5, [("wide0", uuid.UUID(int=1), parts),
                                                   ("x" * 127, uuid.UUID(int=2), parts[:1])])


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(VERSIONS), topics, st.data())
def test_truncated_or_mangled_requests_raise_decode_errors_not_crashes(version, topic_list, data):
    body = bytearray(_request(version, None, -1, 1000, topic_list).encode(version=version))
    cut = data.draw(st.integers(0, max(len(body) - 1, 0)))
    mangled = body[:cut]
    if data.draw(st.booleans()) and len(body) > 12:
        at = data.draw(st.integers(0, len(body) - 4))
        mangled = body[:at] + struct.pack(">i", data.draw(st.integers(-2**31, 2**31 - 1))) + body[at + 4:]
    try:
        decode_produce(memoryview(mangled), 0, version)
    except ProduceDecodeError:
        pass
