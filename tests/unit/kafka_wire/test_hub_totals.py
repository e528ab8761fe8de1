"""TopicManager keeps what the door counts when a hub is made or grown (the event hubs and
their partitions' total), its names' indexes (ids, any case, '.'/'_' clashes) and its
leader epochs by hub as hubs are made, deleted and grown: after any sequence, and after a
restart over the same directory, they are what a walk of the topics finds."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kafka_wire.eventhubs.policy import HubCount
from kafka_wire.log.config import LogConfig
from kafka_wire.log.errors import LogError
from kafka_wire.log.manager import LogManager, collision_key
from kafka_wire.topics import LEADER_EPOCH, HubSize, TopicManager

# Case twins, a '.'/'_' clash, Kafka's internal topics (in no count), plain names.
NAMES = st.sampled_from(["orders", "Orders", "ORDERS", "a.b", "a_b", "__meta", "__x.y", "t1", "t2"])


class HubTotalsMachine(RuleBasedStateMachine):

    @initialize()
    def open(self):
        self.dir = Path(tempfile.mkdtemp(prefix="hub-totals-"))
        self.logs = LogManager(self.dir, LogConfig())
        self.topics = TopicManager(self.logs)
        self.epochs: dict[tuple[str, int], int] = {}  # the leader epochs bumped, as a model

    def teardown(self):
        if hasattr(self, "logs"):
            self.logs.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    @rule(name=NAMES, partitions=st.integers(1, 3))
    def create(self, name, partitions):
        try:
            self.topics.create(name, partitions)
        except LogError:  # exists, or clashes with one that does: nothing changes
            pass

    @rule(name=NAMES)
    def delete(self, name):
        try:
            self.topics.delete(name)
        except LogError:  # no such topic
            return
        self.epochs = {k: e for k, e in self.epochs.items() if k[0] != name}

    @rule(name=NAMES, partitions=st.integers(1, 3))
    def remake(self, name, partitions):
        """A hub deleted and made again at once: a new hub, none of the old one's epochs."""
        self.delete(name)
        self.create(name, partitions)

    @rule(name=NAMES, more=st.integers(0, 2))
    def grow(self, name, more):
        view = self.topics.get(name)
        try:
            self.topics.create_partitions(name, (view.partitions if view else 1) + more)
        except (LogError, ValueError):  # no such topic, or not more partitions
            pass

    @rule(name=NAMES, partition=st.integers(0, 2))
    def bump_epoch(self, name, partition):
        view = self.topics.get(name)
        if view is not None and partition < view.partitions:
            self.epochs[(name, partition)] = self.topics.bump_leader_epoch(name, partition)

    @rule()
    def restart(self):
        self.logs.close()
        self.logs = LogManager(self.dir, LogConfig())
        self.topics = TopicManager(self.logs)
        self.epochs = {}  # (kept in memory: a geo namespace restores its own)

    @invariant()
    def totals_are_a_recount(self):
        views = list(self.topics.all())
        hubs = [v for v in views if not v.internal]
        assert dict(self.topics.hub_sizes()) == {v.name: HubSize(v.name, v.partitions) for v in hubs}
        assert self.topics.hub_partitions() == sum(v.partitions for v in hubs)
        # the door's count of the same topics, as a list of views or as kept
        kept = HubCount(self.topics.hub_sizes(), self.topics.hub_partitions())
        for name in ("orders", "t1", "__meta", "new"):
            assert kept.partitions_but(name) == HubCount.among(views).partitions_but(name) == \
                sum(v.partitions for v in hubs if v.name != name)

    @invariant()
    def name_indexes_are_a_walk(self):
        views = list(self.topics.all())
        for view in views:
            assert self.topics.name_for_id(view.topic_id) == view.name
        for name in ("orders", "Orders", "ORDERS", "oRdErS", "a.b", "a_b", "A.B", "t1", "T2"):
            same = [v.name for v in views if v.name.lower() == name.lower()]
            found = self.topics.hub(name)
            if name in same:
                assert found.name == name
            else:  # another case reaches a hub only when it has no twin
                assert (found.name if found else None) == (same[0] if len(same) == 1 else None)
            clash = [v.name for v in views if v.name != name and collision_key(v.name) == collision_key(name)]
            assert self.topics.collision(name) == (clash[0] if clash else None)

    @invariant()
    def epochs_are_those_of_the_hubs_held(self):
        for view in self.topics.all():
            for p in range(view.partitions):
                assert self.topics.leader_epoch(view.name, p) == self.epochs.get((view.name, p), LEADER_EPOCH)


TestHubTotals = settings(max_examples=60, stateful_step_count=30, derandomize=True, deadline=None,
                         suppress_health_check=[HealthCheck.too_slow])(HubTotalsMachine).TestCase
