"""Auto-inflate follows load: a namespace gains a throughput unit when traffic it took
put its ingress (or egress) in debt, never because a caller's own wait budget was too
short for a publication (a zero or negative Kafka timeout, an AMQP batch longer than
the SDK's operation timeout) on a namespace that is not over its units. Units never
come back down, so such a refusal must cost the namespace nothing."""
from __future__ import annotations

import threading
import time

import pytest
from azure.eventhub import EventData, EventHubProducerClient
from azure.eventhub.exceptions import EventHubError

from kafka_wire import codec
from kafka_wire.coordinator.clock import VirtualClock
from kafka_wire.eventhubs.model import TIER_LIMITS, EventHubsModel, Namespace, Tier
from kafka_wire.eventhubs.quotas import ThroughputQuota
from kafka_wire.testing import EmulatedBroker
from tests.eventhubs.test_quotas import _produce
from tests.rawclient import RawClient
from tests.unit.log.log_helpers import make_batch

MIB = 1024 * 1024
STD = TIER_LIMITS[Tier.STANDARD]
NS = "inflate-ns"
COOL_DOWN_MS = 1_000  # ThroughputQuota's default inflate_cooldown_ms


# -- the quota alone ------------------------------------------------------------------------------
def test_a_refusal_without_debt_adds_no_unit():
    q = ThroughputQuota("ns", 1, STD, 0, auto_inflate_max=5)
    for now in (1_000, 2_000, 3_000):  # each past the cool-down
        assert q.ingress_wait(10, 1_500, now) == 500  # 1,500 events against a 1,000 burst
        assert q.refuse_ingress(now) == 0, "nothing in debt: nothing to wait"
        assert q.units == 1, "a refusal with no debt added a unit"
    assert q.refused_requests == 3


def test_a_refusal_while_in_debt_adds_a_unit_and_the_wait_it_leaves():
    q = ThroughputQuota("ns", 1, STD, 0, auto_inflate_max=5)
    assert q.ingress(10, 3_000, 500) == 2_000  # within the cool-down: throttled, no unit yet
    assert q.units == 1
    # At 1,000 ms the debt is 1,500 events: at 2 units it takes 750 ms to repay.
    assert q.refuse_ingress(1_000) == 750
    assert q.units == 2


def test_throttled_egress_and_ingress_still_inflate():
    q = ThroughputQuota("ns", 1, STD, 0, auto_inflate_max=5)
    assert q.egress(3 * MIB, 1, 1_000) > 0 and q.units == 2
    assert q.ingress(3 * MIB, 1, 2_000) > 0 and q.units == 3


# -- Kafka and AMQP, on the wire ------------------------------------------------------------------
@pytest.fixture
def broker(tmp_path):
    clock = VirtualClock(start_ms=time.time_ns() // 1_000_000)
    model = EventHubsModel({NS: Namespace(NS, units=1, auto_inflate_max=10)}, NS)
    with EmulatedBroker(tmp_path / "data", clock=clock, eventhubs=model, amqp=True) as b:
        b.create_hub("hub", 1)
        yield b


def _quota(broker) -> tuple[int, int, int]:
    """(units, refused publications, events stored)."""
    def read():
        runtime = broker.broker.services.namespaces[NS]
        return runtime.quota.units, runtime.quota.refused_requests, \
            runtime.topics.log("hub", 0).log_end_offset
    return broker.call(read)


def _produce_acks0(c: RawClient, records: bytes, timeout_ms: int) -> None:
    Req = codec.request_class(codec.ApiKey.Produce)
    T = Req.TopicProduceData
    c.send_raw(c.frame(codec.ApiKey.Produce, 9, bytes(Req(
        version=9, transactional_id=None, acks=0, timeout_ms=timeout_ms, topic_data=[T(
            name="hub", partition_data=[T.PartitionProduceData(index=0, records=records)])]
    ).encode(version=9))))


@pytest.mark.parametrize("timeout_ms", [0, -1, -2_147_483_648, 1])
def test_kafka_produce_with_a_tiny_timeout_is_refused_and_inflates_nothing(broker, timeout_ms):
    batch = make_batch(1_500, value_size=1)  # 1,500 events: 500 ms past a full burst of 1,000
    for _ in range(3):
        broker.clock.advance(COOL_DOWN_MS)  # the bucket refills; the cool-down is over
        assert _quota(broker)[0] == 1, "a refusal with no debt added a unit"
        with RawClient(broker.bootstrap_servers) as c:
            part = _produce(c, batch, timeout_ms=timeout_ms).responses[0].partition_responses[0]
        assert part.error_code == 44 and "throughput unit" in part.error_message
    assert _quota(broker) == (1, 3, 0)


def test_kafka_acks_0_with_a_zero_timeout_inflates_nothing(broker):
    batch = make_batch(1_500, value_size=1)
    with RawClient(broker.bootstrap_servers) as c:
        for _ in range(3):
            broker.clock.advance(COOL_DOWN_MS)
            _produce_acks0(c, batch, 0)
        # A request with a response after them: the acks=0 ones were handled before it.
        assert c.request(codec.ApiKey.ApiVersions, 0).error_code == 0
    assert _quota(broker) == (1, 3, 0)


def test_kafka_load_past_the_units_still_inflates(broker):
    """Traffic the namespace took beyond its units: throttled and inflated; a tiny-budget
    refusal while that debt is still unpaid inflates too (the load is real)."""
    broker.clock.advance(COOL_DOWN_MS)
    with RawClient(broker.bootstrap_servers) as c:
        part = _produce(c, make_batch(5_000, value_size=1), timeout_ms=30_000)
        assert part.responses[0].partition_responses[0].error_code == 0 and part.throttle_time_ms > 0
    assert _quota(broker) == (2, 0, 5_000)  # 4,000 events in debt at 2,000 events/s: 2 s
    broker.clock.advance(COOL_DOWN_MS)  # still 2,000 events in debt
    with RawClient(broker.bootstrap_servers) as c:  # (the throttled connection is muted)
        part = _produce(c, make_batch(1, value_size=1), timeout_ms=0).responses[0].partition_responses[0]
        assert part.error_code == 44
    assert _quota(broker) == (3, 1, 5_000)


def test_an_amqp_batch_longer_than_the_send_timeout_inflates_nothing(broker):
    """70,000 empty events in one SDK batch (about 700 KB) would wait 70 s at 1,000 events/s,
    past the 60 s an AMQP send may wait: refused with server-busy, on a namespace with no debt."""
    broker.clock.advance(COOL_DOWN_MS)
    result: list = []

    def run() -> None:
        try:
            with EventHubProducerClient.from_connection_string(
                    broker.amqp_connection_string(), eventhub_name="hub", retry_total=0) as p:
                batch = p.create_batch(partition_id="0")
                for _ in range(70_000):
                    batch.add(EventData(b""))
                p.send_batch(batch)
            result.append(None)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            result.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(120)
    assert result, "the send neither settled nor failed in 120 s"
    assert isinstance(result[0], EventHubError) and "server-busy" in str(result[0]), result[0]
    assert _quota(broker) == (1, 1, 0)
