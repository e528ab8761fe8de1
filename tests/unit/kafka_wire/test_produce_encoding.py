"""The Produce fast-path encoder writes, for every served version, the bytes
the schema codec writes for the same answer."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire import codec
from kafka_wire.apis import registry
from kafka_wire.apis.produce_encoding import encode_produce
from kafka_wire.codec import RequestHeader

registry.load_all()
_REG = registry.lookup(codec.ApiKey.Produce)
VERSIONS = list(range(_REG.min_version, _REG.max_version + 1))
R = codec.response_class(codec.ApiKey.Produce)
T = R.TopicProduceResponse
P = T.PartitionProduceResponse

i64 = st.integers(-2**63, 2**63 - 1)
parts = st.lists(st.tuples(st.integers(-2**31, 2**31 - 1), st.integers(-2**15, 2**15 - 1), i64, i64, i64,
                           st.one_of(st.none(), st.text(max_size=20))), max_size=3)
topics = st.lists(st.tuples(st.text(min_size=1, max_size=12), st.uuids(), parts), max_size=3)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(VERSIONS), topics, st.integers(0, 2**31 - 1), st.integers(0, 2**31 - 1))
def test_fast_produce_response_matches_the_codec(version, topic_list, throttle, correlation):
    header = RequestHeader(codec.ApiKey.Produce, version, correlation, "c", 0)
    slow = codec.encode_response(R(version=version, throttle_time_ms=throttle, responses=[
        T(name=name, topic_id=tid, partition_responses=[
            P(index=i, error_code=e, base_offset=b, log_append_time_ms=a, log_start_offset=s,
              record_errors=[], error_message=m) for i, e, b, a, s, m in ps])
        for name, tid, ps in topic_list]), header)
    fast = b"".join(encode_produce(version, topic_list, throttle).chunks(header))
    assert fast == bytes(slow)
