"""RepeatedFetch (a connection's last one-partition Fetch, kept to decode its
repeats without parsing) decodes a frame to exactly what the full path decodes,
and declines every frame that differs from the kept one in any byte but the
correlation id and the fetch offset; the Fetch handler's one-partition plan, made
once for the kept request, is what it would make for each repeat."""
from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire import codec
from kafka_wire.apis.fetch import _plan_one
from kafka_wire.apis.fetch_decoding import RepeatedFetch
from tests.unit.kafka_wire.test_fetch_decoding import VERSIONS, F, i32, i64
part = st.tuples(i32, i32, i64, i32, i64, i32)
topic = st.tuples(st.text(min_size=1, max_size=12), st.uuids(), st.lists(part, min_size=1, max_size=2))
heads = st.tuples(i32, i32, i32, st.integers(0, 1), i32, i32)
PART_FIELDS = ("partition", "current_leader_epoch", "fetch_offset", "last_fetched_epoch",
               "log_start_offset", "partition_max_bytes")


def _frame(version, correlation, client_id, head, topics, forgotten) -> bytearray:
    wait, min_b, max_b, iso, sid, sepoch = head
    body = F(version=version, replica_id=-1, max_wait_ms=wait, min_bytes=min_b, max_bytes=max_b,
             isolation_level=iso, session_id=sid, session_epoch=sepoch, rack_id="r", topics=[
                 F.FetchTopic(topic=n, topic_id=tid, partitions=[
                     F.FetchTopic.FetchPartition(partition=p, current_leader_epoch=e, fetch_offset=o,
                                                 last_fetched_epoch=le, log_start_offset=s,
                                                 partition_max_bytes=m) for p, e, o, le, s, m in ps])
                 for n, tid, ps in topics],
             forgotten_topics_data=[F.ForgottenTopic(topic=n, topic_id=tid, partitions=[1])
                                    for n, tid, _ps in forgotten]).encode(version=version)
    cid = client_id.encode()
    header = struct.pack(">hhih", codec.ApiKey.Fetch, version, correlation, len(cid)) + cid
    return bytearray(header + (b"\x00" if version >= 12 else b"") + bytes(body))


def _full(frame):
    header = codec.parse_request_header(memoryview(frame))
    return header, codec.decode_request(header, memoryview(frame))


def _fields(header, request):
    """Every field the handler and the connection read, as plain values."""
    return ((header.api_key, header.api_version, header.correlation_id, header.client_id, header.size),
            tuple(getattr(request, n) for n in ("replica_id", "max_wait_ms", "min_bytes", "max_bytes",
                                                "isolation_level", "session_id", "session_epoch",
                                                "rack_id")),
            [(t.topic, t.topic_id, [tuple(getattr(p, n) for n in PART_FIELDS) for p in t.partitions])
             for t in request.topics],
            [(t.topic, t.topic_id, list(t.partitions)) for t in request.forgotten_topics_data or ()])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.sampled_from(VERSIONS), st.text(max_size=8), heads, st.lists(topic, min_size=1, max_size=2),
       st.lists(topic, max_size=1), i32, i64, st.data())
def test_a_repeat_decodes_as_the_full_path_and_anything_else_is_declined(
        version, client_id, head, topics, forgotten, correlation, offset, data):
    first = _frame(version, 7, client_id, head, topics, forgotten)
    header, request = _full(first)
    kept = RepeatedFetch.of(first, header, request)
    one = len(topics) == 1 and len(topics[0][2]) == 1
    assert (kept is not None) == one
    if not one:
        return
    # The same request again: another correlation id and fetch offset.
    p = topics[0][2][0]
    again = _frame(version, correlation, client_id, head, [(topics[0][0], topics[0][1], [
        (p[0], p[1], offset, p[3], p[4], p[5])])], forgotten)
    plan = _plan_one(request, version)  # the handler's, made for the first and kept for its repeats
    got = kept.decode(again)
    assert got is not None
    assert _fields(*got) == _fields(*_full(again))
    fresh = _plan_one(_full(again)[1], version)
    if plan:
        assert plan[:2] + plan[3:] == fresh[:2] + fresh[3:]
        assert plan[2] is got[1].topics[0].partitions[0] and plan[2].fetch_offset == offset
    else:
        assert fresh is False
    # Any other change: declined, or (only where the two fields lie) decoded as in full.
    other = bytearray(again)
    at = data.draw(st.integers(0, len(other) - 1), label="byte changed")
    other[at] ^= data.draw(st.integers(1, 255), label="xor")
    if data.draw(st.booleans(), label="also shorter"):
        del other[-1]
    got = kept.decode(other)
    variable = 4 <= at < 8 or request.offset_pos <= at < request.offset_pos + 8
    if got is None:
        assert not variable or len(other) != len(again)
    else:
        assert variable and len(other) == len(again)
        assert _fields(*got) == _fields(*_full(other))


def test_only_fetches_are_kept():
    frame = _frame(12, 1, "c", (500, 1, 100, 0, 0, -1), [("t", None, [(0, -1, 5, -1, -1, 1)])], [])
    header, request = _full(frame)
    header.api_key = codec.ApiKey.Produce
    assert RepeatedFetch.of(frame, header, request) is None
