"""Throughput units: token buckets on the injected clock, throttle_time_ms in
answers, and the connection muted for that long (KIP-219)."""
from __future__ import annotations

import socket

import pytest

from kafka_wire.coordinator.clock import VirtualClock
from kafka_wire import codec
from kafka_wire.eventhubs.model import TIER_LIMITS, EventHubsModel, Namespace, Tier
from kafka_wire.eventhubs.quotas import ThroughputQuota, TokenBucket
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient
from tests.unit.log.log_helpers import make_batch

MIB = 1024 * 1024
STD = TIER_LIMITS[Tier.STANDARD]


# -- token buckets -----------------------------------------------------------------------------
def test_bucket_allows_a_burst_then_throttles_by_the_debt():
    b = TokenBucket(1000, now_ms=0, burst_s=1.0)
    assert b.take(1000, 0) == 0          # the full burst
    assert b.take(500, 0) == 500         # 500 in debt at 1000/s: 500 ms
    assert b.delay_ms(250) == 250
    assert b.delay_ms(500) == 0
    assert b.take(100, 10_000) == 0      # refilled, but never above the burst
    assert b.tokens == 900


def test_quota_ingress_takes_bytes_or_events_whichever_comes_first():
    q = ThroughputQuota("ns", 1, STD, 0)
    assert q.ingress(MIB, 10, 0) == 0
    assert q.ingress(MIB // 2, 10, 0) == 500
    q2 = ThroughputQuota("ns", 1, STD, 0)
    assert q2.ingress(1000, 1000, 0) == 0
    assert q2.ingress(1000, 2000, 0) == 2000   # 1,000 events/s per unit


def test_quota_egress_is_two_mb_per_unit_and_scales_with_units():
    q = ThroughputQuota("ns", 2, STD, 0)
    assert q.egress(4 * MIB, 1, 0) == 0
    assert q.egress(2 * MIB, 1, 0) == 500
    assert q.egress_delay(0) == 500 and q.egress_delay(500) == 0


def test_throttle_time_is_capped():
    q = ThroughputQuota("ns", 1, STD, 0, max_throttle_ms=1000)
    assert q.ingress(10 * MIB, 1, 0) == 1000


def test_auto_inflate_adds_units_up_to_the_maximum():
    seen = []
    q = ThroughputQuota("ns", 1, STD, 0, auto_inflate_max=3, inflate_cooldown_ms=1000,
                        on_inflate=seen.append)
    q.ingress(2 * MIB, 1, 0)             # throttled, but within the cool-down
    assert q.units == 1
    q.ingress(2 * MIB, 1, 1000)
    assert q.units == 2 and q.ingress_bytes.rate == 2 * MIB
    q.ingress(8 * MIB, 1, 2000)
    q.ingress(8 * MIB, 1, 3000)
    assert q.units == 3 and seen == [2, 3]


def test_a_wait_longer_than_the_request_timeout_is_refused_and_not_charged():
    q = ThroughputQuota("ns", 1, STD, 0, auto_inflate_max=2)
    assert q.ingress(MIB, 10, 0) == 0
    assert q.ingress_wait(MIB // 2, 10, 0) == 500
    assert q.ingress_wait(MIB // 2, 10, 0) == 500, "asking must not spend"
    assert q.refuse_ingress(1000) == 0
    assert q.refused_requests == 1 and q.units == 1, "no debt: the timeout was short, not the units"
    assert q.ingress_bytes.tokens == MIB   # refilled after 1 s; nothing was charged


def test_units_default_per_mode():
    assert Namespace("contoso").effective_units() is None
    assert Namespace("contoso", mode="strict").effective_units() == 1
    assert Namespace("contoso", Tier.PREMIUM, mode="strict").effective_units() is None


# -- on the wire, with a virtual clock ----------------------------------------------------------
@pytest.fixture
def clocked(tmp_path):
    clock = VirtualClock()
    model = EventHubsModel({"tu-ns1": Namespace("tu-ns1", units=1)}, "tu-ns1")
    with EmulatedBroker(tmp_path / "data", clock=clock, eventhubs=model) as broker:
        broker.create_hub("hub", 1)
        yield broker, clock


def _advance(broker, clock, ms):
    clock.advance_threadsafe(broker._loop, ms).result(5)


def _produce(c: RawClient, records: bytes, acks: int = 1, timeout_ms: int = 30000):
    Req = codec.request_class(codec.ApiKey.Produce)
    T = Req.TopicProduceData
    return c.request(codec.ApiKey.Produce, 9, transactional_id=None, acks=acks, timeout_ms=timeout_ms,
                     topic_data=[T(name="hub", partition_data=[T.PartitionProduceData(
                         index=0, records=records)])])


def _fetch(c: RawClient, offset: int = 0):
    Req = codec.request_class(codec.ApiKey.Fetch)
    T = Req.FetchTopic
    return c.request(codec.ApiKey.Fetch, 11, replica_id=-1, max_wait_ms=0, min_bytes=0,
                     max_bytes=64 * MIB, isolation_level=0, session_id=0, session_epoch=-1,
                     topics=[T(topic="hub", partitions=[T.FetchPartition(
                         partition=0, current_leader_epoch=-1, fetch_offset=offset,
                         log_start_offset=-1, partition_max_bytes=64 * MIB)])],
                     forgotten_topics_data=[], rack_id="")


def _nothing_to_read(c: RawClient, wait: float = 0.3) -> bool:
    c.sock.settimeout(wait)
    try:
        return not c.sock.recv(1, socket.MSG_PEEK)
    except socket.timeout:
        return True
    finally:
        c.sock.settimeout(10)


def test_over_quota_produce_gets_throttle_time_and_a_muted_connection(clocked):
    broker, clock = clocked
    batch = make_batch(1, value_size=700 * 1024)
    with RawClient(broker.bootstrap_servers) as c:
        first = _produce(c, batch)
        assert first.throttle_time_ms == 0
        second = _produce(c, batch)
        assert second.responses[0].partition_responses[0].error_code == 0
        debt = 2 * len(batch) - MIB
        assert second.throttle_time_ms == -(-debt * 1000 // MIB)
        c.send_raw(c.frame(codec.ApiKey.ApiVersions, 0, b""))
        assert _nothing_to_read(c), "a muted connection must not be answered"
        _advance(broker, clock, second.throttle_time_ms)
        c.read_response(codec.ApiKey.ApiVersions, 0)  # answered once the throttle time passed


def test_produce_throttled_past_its_request_timeout_gets_policy_violation(clocked):
    broker, clock = clocked
    batch = make_batch(1, value_size=700 * 1024)
    with RawClient(broker.bootstrap_servers) as c:
        assert _produce(c, batch).responses[0].partition_responses[0].base_offset == 0
        # 376 KiB over the unit's burst: a 367 ms wait, longer than this request's 100 ms.
        refused = _produce(c, batch, timeout_ms=100).responses[0].partition_responses[0]
        assert refused.error_code == 44 and "throughput unit" in refused.error_message
        # Nothing was stored or charged: the same batch with a longer timeout is throttled.
        kept = _produce(c, batch, timeout_ms=1000)
        assert kept.responses[0].partition_responses[0].base_offset == 1
        assert 0 < kept.throttle_time_ms <= 1000
    entries = broker.broker.services.report.entries
    assert [e["count"] for k, e in entries.items() if k[1] == "throughput-units"] == [1]


def test_acks_0_produce_still_mutes(clocked):
    broker, clock = clocked
    batch = make_batch(1, value_size=900 * 1024)
    with RawClient(broker.bootstrap_servers) as c:
        for _ in range(2):
            c.send_raw(c.frame(codec.ApiKey.Produce, 9, bytes(codec.request_class(0)(
                version=9, transactional_id=None, acks=0, timeout_ms=1000, topic_data=[
                    codec.request_class(0).TopicProduceData(name="hub", partition_data=[
                        codec.request_class(0).TopicProduceData.PartitionProduceData(
                            index=0, records=batch)])]).encode(version=9))))
        c.send_raw(c.frame(codec.ApiKey.ApiVersions, 0, b""))
        assert _nothing_to_read(c)
        _advance(broker, clock, 1000)
        c.read_response(codec.ApiKey.ApiVersions, 0)


def test_egress_over_quota_throttles_then_answers_empty(clocked):
    broker, clock = clocked
    batch = make_batch(1, value_size=700 * 1024)
    with RawClient(broker.bootstrap_servers) as producer:
        for _ in range(2):
            _produce(producer, batch)
            _advance(broker, clock, 1000)
    with RawClient(broker.bootstrap_servers) as c, RawClient(broker.bootstrap_servers) as other:
        first = _fetch(c)
        assert first.throttle_time_ms == 0 and len(first.responses[0].partitions[0].records) > MIB
        second = _fetch(other)  # 2.8 MB out against 2 MiB/s: in debt now
        assert len(second.responses[0].partitions[0].records) > MIB
        assert second.throttle_time_ms > 0
        with RawClient(broker.bootstrap_servers) as third:
            empty = _fetch(third)
            assert empty.throttle_time_ms > 0
            part = empty.responses[0].partitions[0]
            assert part.error_code == 0 and not part.records and part.high_watermark == 2


def test_confluent_producer_sees_throttling_at_one_unit():
    from bench.throughput_units import run

    result = run(seconds=3, units=1, size=10 * 1024, partitions=2)
    assert result["throttles"], "the client should have been told to back off"
    settled = sum(result["curve"][1:]) / 2
    assert 0.75 * MIB <= settled <= 1.25 * MIB


def test_egress_over_the_units_is_throttled_and_then_in_debt():
    """The policy's protocol-neutral egress: bytes and events in, throttle ms out."""
    from types import SimpleNamespace

    from kafka_wire.eventhubs.policy import NamespacePolicy

    quota = ThroughputQuota("ns", 1, STD, 0)
    policy = NamespacePolicy()
    policy.bind(SimpleNamespace(name="ns", quota=quota, model=None), report=None,
                clock=SimpleNamespace(now_ms=lambda: 0))
    assert policy.egress_delay() == 0
    assert policy.egress(0, 0) == 0  # nothing served: nothing charged
    throttle = policy.egress(3 * MIB, 3)  # one unit: 2 MiB/s out
    assert throttle > 0
    assert policy.egress_delay() > 0  # in debt: a read now gets no events
