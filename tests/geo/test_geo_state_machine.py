"""A hypothesis state machine over a geo-replicated namespace's core (real partition
logs in three regions, the broker's virtual clock): sends, pauses, resumes, clock
advances, the replicator's passes, max-lag changes, planned and forced promotions.

Checked after every step:
- no two regions diverge on what they both hold: for each partition, their common
  prefix is the same bytes (batches byte for byte at the same offsets);
- the primary holds exactly the events acknowledged (a model of the sends), less
  those a forced promotion lost, and a forced promotion loses only what the
  promoted replica lacked; a planned one loses nothing;
- a send is refused (Refusal.REPLICATION) exactly when the quorum cannot take it
  (synchronous) or its lag is past the limit (asynchronous), and then changes nothing;
- each secondary's lag_events is what it lacks.
"""
from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kafka_wire.context import NamespaceRuntime
from kafka_wire.coordinator.clock import VirtualClock
from kafka_wire.eventhubs.events import Incoming, records_batch
from kafka_wire.eventhubs.geo import GeoSettings
from kafka_wire.eventhubs.refusals import Refusal
from kafka_wire.log.batch import iter_batches
from kafka_wire.log.config import LogConfig
from kafka_wire.log.manager import LogManager
from kafka_wire.log.records import read_events
from kafka_wire.replication import attach
from kafka_wire.topics import TopicManager
from tests.geo.conftest import log_bytes

LOCATIONS = ("westus", "eastus", "northeurope")
PARTITIONS = 2


def region_bytes(logs: LogManager, partition: int) -> bytes:
    return log_bytes(logs, "orders", partition)


def values(logs: LogManager, partition: int) -> list[bytes]:
    data = region_bytes(logs, partition)
    return [value for _pos, header in iter_batches(data)
            for _o, _k, value, _h in read_events(data[_pos:_pos + header.size], header)]


class GeoMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="geo-sm-"))
        self.clock = VirtualClock()
        logs = LogManager(self.dir / "geonamespace1", LogConfig())
        topics = TopicManager(logs)
        topics.create("orders", PARTITIONS)
        self.runtime = NamespaceRuntime(name="geonamespace1", topics=topics, policy=None)
        self.geo = attach(self.runtime, GeoSettings("westus", list(LOCATIONS), 300), self.dir,
                          self.clock, LogConfig())
        self.geo.start()  # as the broker does once the namespace's coordinators are open
        self.acked: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
        self.n = 0

    def teardown(self) -> None:
        self.geo.close()
        self.runtime.topics.logs.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def secondaries(self) -> list[str]:
        return [loc for loc in self.geo.locations if loc != self.geo.primary_location]

    def expected_refusal(self) -> bool:
        links = self.geo._links
        needed = (len(links) + 1) // 2
        if self.geo.synchronous:
            return sum(not link.paused for link in links.values()) < needed
        return self.geo.quorum_lag_seconds() > self.geo.max_lag_seconds

    # -- rules ---------------------------------------------------------------------
    @rule(partition=st.integers(0, PARTITIONS - 1), events=st.integers(1, 4))
    def send(self, partition: int, events: int) -> None:
        refuse = self.expected_refusal()
        denial = self.geo.admission()
        assert (denial is not None) == refuse, (denial, refuse)
        if denial is not None:
            assert denial.reason is Refusal.REPLICATION
            return
        bodies = [f"e{self.n + i}".encode() for i in range(events)]
        self.n += events
        batch = records_batch([Incoming(None, [], body, []) for body in bodies], self.clock.now_ms())
        self.runtime.topics.append("orders", partition, batch, self.clock.now_ms())
        self.acked[partition].extend(bodies)

    @rule(data=st.data())
    def pause(self, data) -> None:
        self.geo.pause(data.draw(st.sampled_from(self.secondaries())))

    @rule(data=st.data())
    def resume(self, data) -> None:
        self.geo.resume(data.draw(st.sampled_from(self.secondaries())))

    @rule(seconds=st.sampled_from([1, 100, 250, 400]))
    def advance(self, seconds: int) -> None:
        self.clock.advance(seconds * 1000)

    @rule()
    def replicate(self) -> None:
        self.geo._run_pass()  # what the event loop runs after appends

    @rule(seconds=st.sampled_from([0, 300]))
    def max_lag(self, seconds: int) -> None:
        self.geo.set_max_lag(seconds)

    @rule(data=st.data(), forced=st.booleans())
    def promote(self, data, forced: bool) -> None:
        target = data.draw(st.sampled_from(self.secondaries()))
        link = self.geo._links[target]
        if not forced and link.paused:
            from kafka_wire.replication import GeoError
            try:
                asyncio.run(self.geo.promote(target))
            except GeoError as exc:
                assert exc.reason is Refusal.INVALID
                return
            raise AssertionError("a planned promotion of a paused replica went through")
        had = {p: values(link.store.logs, p) for p in range(PARTITIONS)}
        segment = self.geo.segment
        result = asyncio.run(self.geo.promote(target, forced=forced))
        assert self.geo.primary_location == target and self.geo.segment == segment + 1
        for p in range(PARTITIONS):
            if forced:  # what the replica had, a prefix of what was acknowledged, survives
                assert self.acked[p][:len(had[p])] == had[p]
                first, end = result.lost.get(("orders", p), (len(had[p]), len(had[p])))
                assert end - first == len(self.acked[p]) - len(had[p])
                self.acked[p] = had[p]
            else:
                assert ("orders", p) not in result.lost
            assert self.geo.segment_starts("orders", p)[-1] == (self.geo.segment, len(self.acked[p]))
        assert result.forced == forced and (forced or result.lost_events == 0)

    # -- invariants ----------------------------------------------------------------
    @invariant()
    def regions_never_diverge(self) -> None:
        for p in range(PARTITIONS):
            held = [region_bytes(store.logs, p) for store in self.geo._stores.values()]
            for a in held:
                for b in held:
                    n = min(len(a), len(b))
                    assert a[:n] == b[:n]

    @invariant()
    def the_primary_holds_what_was_acknowledged(self) -> None:
        primary = self.geo._stores[self.geo.primary_location].logs
        assert self.runtime.topics.logs is primary
        for p in range(PARTITIONS):
            assert values(primary, p) == self.acked[p]

    @invariant()
    def lag_events_is_what_each_secondary_lacks(self) -> None:
        for view in self.geo.replicas[1:]:
            store = self.geo._stores[view.location]
            lacks = sum(len(self.acked[p]) - len(values(store.logs, p)) for p in range(PARTITIONS))
            assert view.lag_events == lacks
            if self.geo.synchronous and not view.paused:
                assert lacks == 0 or view.lag_seconds >= 0


GeoMachine.TestCase.settings = settings(max_examples=100, stateful_step_count=30, deadline=None,
                                         derandomize=True, database=None)
test_geo_replication_state_machine = GeoMachine.TestCase
