"""The virtual clock drives retention and group timeouts without sleeping."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_wire import codec
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

K = codec.ApiKey


def test_retention_expires_on_clock_advance_not_wall_time():
    with EmulatedBroker(virtual_clock=True, in_memory=True) as b:
        b.create_hub("aging", configs={"retention.ms": "60000", "segment.bytes": "1024"})
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "acks": "all", "linger.ms": 0})
        for _ in range(20):
            p.produce("aging", b"x" * 300)
            p.flush(10)
        c = Consumer({"bootstrap.servers": b.bootstrap_servers, "group.id": "w"})
        tp = TopicPartition("aging", 0)
        assert c.get_watermark_offsets(tp, timeout=10) == (0, 20)
        b.clock.advance(seconds=59)          # not yet: a minute has not passed
        assert c.get_watermark_offsets(tp, timeout=10) == (0, 20)
        started = time.monotonic()
        b.clock.advance(seconds=120)         # retention check runs, segments expire
        lo, hi = c.get_watermark_offsets(tp, timeout=10)
        c.close()
        assert hi == 20 and lo > 0
        assert time.monotonic() - started < 5


def _join(client, group, member_id="", session_ms=6000):
    jg = codec.request_class(K.JoinGroup)
    return client.request(K.JoinGroup, 5, group_id=group, session_timeout_ms=session_ms,
                          rebalance_timeout_ms=10000, member_id=member_id, group_instance_id=None,
                          protocol_type="consumer",
                          protocols=[jg.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x00")])


def test_session_timeout_expires_member_when_clock_moves():
    with EmulatedBroker(virtual_clock=True, in_memory=True) as b, RawClient(b.bootstrap_servers) as c:
        first = _join(c, "idle-group")
        assert first.error_code == 79  # MEMBER_ID_REQUIRED (v4+): rejoin with the given id
        joined = _join(c, "idle-group", member_id=first.member_id)
        assert joined.error_code == 0 and joined.leader == joined.member_id
        sg = codec.request_class(K.SyncGroup)
        synced = c.request(K.SyncGroup, 3, group_id="idle-group", generation_id=joined.generation_id,
                           member_id=joined.member_id, group_instance_id=None,
                           assignments=[sg.SyncGroupRequestAssignment(member_id=joined.member_id,
                                                                      assignment=b"")])
        assert synced.error_code == 0

        def state():
            resp = c.request(K.DescribeGroups, 4, groups=["idle-group"], include_authorized_operations=False)
            return resp.groups[0].group_state, len(resp.groups[0].members)

        assert state() == ("Stable", 1)
        b.clock.advance(seconds=5)
        assert state() == ("Stable", 1)      # 5 s < 6 s session timeout
        b.clock.advance(seconds=2)
        # Expired, with no sleeping involved; a group with no offsets is then gone.
        assert state() in (("Empty", 0), ("Dead", 0))
