"""The Fetch fast-path decoder reads every served version exactly as the
schema codec does, and refuses truncated or mangled requests with a decode
error (never another exception)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire import codec
from kafka_wire.apis import registry
from kafka_wire.apis.fetch_decoding import FetchDecodeError, decode_fetch

registry.load_all()
_REG = registry.lookup(codec.ApiKey.Fetch)
VERSIONS = list(range(_REG.min_version, _REG.max_version + 1))
F = codec.request_class(codec.ApiKey.Fetch)
i32 = st.integers(-2**31, 2**31 - 1)
i64 = st.integers(-2**63, 2**63 - 1)
parts = st.lists(st.tuples(i32, i32, i64, i32, i64, i32), max_size=3)
topics = st.lists(st.tuples(st.text(min_size=1, max_size=12), st.uuids(), parts), max_size=3)
forgotten = st.lists(st.tuples(st.text(min_size=1, max_size=8), st.uuids(), st.lists(i32, max_size=4)),
                     max_size=2)


def _request(version, head, topic_list, forgotten_list, rack, replica_state):
    replica_id, wait, min_b, max_b, iso, sid, sepoch = head
    kw = {}
    if version <= 14:
        kw["replica_id"] = replica_id
    elif replica_state:
        kw["replica_state"] = F.ReplicaState(replica_id=replica_id, replica_epoch=3)
    return F(version=version, max_wait_ms=wait, min_bytes=min_b, max_bytes=max_b, isolation_level=iso,
             session_id=sid, session_epoch=sepoch, rack_id=rack, topics=[
                 F.FetchTopic(topic=n, topic_id=tid, partitions=[
                     F.FetchTopic.FetchPartition(partition=p, current_leader_epoch=e, fetch_offset=o,
                                                 last_fetched_epoch=le, log_start_offset=s,
                                                 partition_max_bytes=m) for p, e, o, le, s, m in ps])
                 for n, tid, ps in topic_list],
             forgotten_topics_data=[F.ForgottenTopic(topic=n, topic_id=tid, partitions=ps)
                                    for n, tid, ps in forgotten_list], **kw)


heads = st.tuples(i32, i32, i32, i32, st.integers(0, 1), i32, i32)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(VERSIONS), heads, topics, forgotten, st.text(max_size=6), st.booleans(),
       st.binary(max_size=3))
def test_fast_fetch_decoding_matches_the_codec(version, head, topic_list, forgotten_list, rack, rs, prefix):
    body = bytes(_request(version, head, topic_list, forgotten_list, rack, rs).encode(version=version))
    fast = decode_fetch(memoryview(bytearray(prefix + body)), len(prefix), version)
    slow = F.decode(body, version=version)
    for name in ("max_wait_ms", "min_bytes", "max_bytes", "isolation_level"):
        assert getattr(fast, name) == getattr(slow, name), name
    if version <= 14:
        assert fast.replica_id == slow.replica_id
    else:
        assert fast.replica_id == (slow.replica_state.replica_id if slow.replica_state else -1)
    if version >= 7:
        assert (fast.session_id, fast.session_epoch) == (slow.session_id, slow.session_epoch)
        assert [(f.topic if version < 13 else f.topic_id, f.partitions) for f in fast.forgotten_topics_data] \
            == [(f.topic if version < 13 else f.topic_id, f.partitions) for f in slow.forgotten_topics_data]
    if version >= 11:
        assert fast.rack_id == slow.rack_id
    fields = ["partition", "fetch_offset", "partition_max_bytes"]
    fields += ["log_start_offset"] if version >= 5 else []
    fields += ["current_leader_epoch"] if version >= 9 else []
    fields += ["last_fetched_epoch"] if version >= 12 else []
    assert len(fast.topics) == len(slow.topics)
    for f, s in zip(fast.topics, slow.topics):
        assert (f.topic if version < 13 else f.topic_id) == (s.topic if version < 13 else s.topic_id)
        assert [[getattr(p, n) for n in fields] for p in f.partitions] == \
               [[getattr(p, n) for n in fields] for p in s.partitions]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(VERSIONS), heads, topics, forgotten, st.data())
def test_truncated_or_mangled_fetches_raise_decode_errors_not_crashes(version, head, topic_list,
                                                                      forgotten_list, data):
    body = bytearray(_request(version, head, topic_list, forgotten_list, "", False).encode(version=version))
    cut = data.draw(st.integers(0, max(len(body) - 1, 0)))
    mangled = body[:cut]
    if data.draw(st.booleans()) and len(body) > 4:
        at = data.draw(st.integers(0, len(body) - 4))
        mangled = body[:at] + data.draw(st.binary(min_size=4, max_size=4)) + body[at + 4:]
    try:
        decode_fetch(memoryview(mangled), 0, version)
    except FetchDecodeError:
        pass


def test_a_null_topic_name_is_refused_as_the_codec_refuses_it():
    # v11 (not flexible): one topic whose name has length -1.
    body = bytes(_request(11, (-1, 0, 1, 100, 0, 0, -1), [], [], "", False).encode(version=11))
    head = body[:25]  # fixed fields: 4+4+4+4+1+4+4
    mangled = head + b"\x00\x00\x00\x01\xff\xff" + b"\x00\x00\x00\x00" + body[29:]
    try:
        decode_fetch(memoryview(bytearray(mangled)), 0, 11)
    except FetchDecodeError as exc:
        assert "null" in str(exc)
    else:
        raise AssertionError("a null topic name was accepted")
