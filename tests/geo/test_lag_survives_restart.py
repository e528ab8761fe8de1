"""Asynchronous replication: a paused secondary's lag is the age of the oldest event it
lacks (docs/georeplication.md), and a restart does not reset it: it is read again
from the primary's log (the append time of the first event the secondary lacks), so
restarting more often than maxReplicationLagDurationInSeconds does not lift the limit."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Producer

from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.clock import VirtualClock
from tests.eventhubs.conftest import confluent_conf
from tests.geo.conftest import geo, geo_toml

T0 = 1_900_000_000_000  # the virtual clocks' start (ms): append times are taken from it


def broker(tmp_path, start_ms: int) -> EmulatedBroker:
    return EmulatedBroker(tmp_path / "data", config_file=geo_toml(tmp_path, max_lag=300, partitions=1),
                          clock=VirtualClock(start_ms=start_ms), group_initial_rebalance_delay_ms=0)


def send(b, n: int) -> list:
    errors = []
    p = Producer(confluent_conf(b.bootstrap_servers, b.connection_string(),
                                **{"retries": 0, "message.timeout.ms": 10000}))
    for i in range(n):
        p.produce("orders", f"event-{i}".encode(), partition=0, on_delivery=lambda err, _m: errors.append(err))
    assert p.flush(30) == 0
    return errors


def test_a_paused_replicas_lag_is_the_same_after_a_restart_and_the_limit_still_applies(tmp_path):
    with broker(tmp_path, T0) as b:
        b.call(lambda: geo(b).pause("eastus"))
        assert send(b, 6) == [None] * 6
        b.clock.advance(seconds=200)
        before = b.call(lambda: geo(b).replica("eastus"))
        assert before.lag_seconds == pytest.approx(200, abs=1) and before.lag_events == 6
    with broker(tmp_path, T0 + 200_000) as b:  # the clock goes on where it stopped
        after = b.call(lambda: geo(b).replica("eastus"))
        assert (after.paused, after.lag_events) == (True, 6)
        assert after.lag_seconds == pytest.approx(before.lag_seconds, abs=1)
        b.clock.advance(seconds=101)
        assert [e.code() for e in send(b, 2)] == [KafkaError.NOT_ENOUGH_REPLICAS] * 2
        b.call(lambda: geo(b).resume("eastus"))
        assert b.call(lambda: geo(b).replica("eastus")).lag_seconds == 0
        assert send(b, 1) == [None]
