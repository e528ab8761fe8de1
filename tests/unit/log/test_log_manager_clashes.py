"""LogManager refuses a topic whose name clashes with another's ('.' against '_', as
Kafka does) from an index kept as topics come and go, not a walk of every topic at each
creation: after any creations, deletions and reopenings, a creation is refused exactly
when a topic of the same name or clash key exists (a recount decides)."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from kafka_wire.log.config import LogConfig
from kafka_wire.log.errors import TopicExists
from kafka_wire.log.manager import LogManager, collision_key

NAMES = st.text(alphabet="a._", min_size=1, max_size=3).filter(lambda n: n not in (".", ".."))


class Clashes(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="kw-clashes-"))
        self.mgr = LogManager(self.root, LogConfig(segment_bytes=4096), clock=lambda: 1_000)

    def teardown(self) -> None:
        self.mgr.close()
        shutil.rmtree(self.root, ignore_errors=True)

    @rule(name=NAMES)
    def create(self, name: str) -> None:
        taken = {collision_key(n) for n in self.mgr.topics()}
        try:
            self.mgr.create_topic(name, 1)
        except TopicExists as exc:
            assert collision_key(name) in taken, (name, exc)
        else:
            assert collision_key(name) not in taken, name

    @rule(name=NAMES)
    def delete(self, name: str) -> None:
        if name in self.mgr.topics():
            self.mgr.delete_topic(name)

    @rule()
    def reopen(self) -> None:
        self.mgr.close()
        self.mgr = LogManager(self.root, LogConfig(segment_bytes=4096), clock=lambda: 1_000)

    @invariant()
    def index_is_a_recount(self) -> None:
        recount: dict[str, set[str]] = {}
        for n in self.mgr.topics():
            recount.setdefault(collision_key(n), set()).add(n)
        assert self.mgr._clashes == recount


Clashes.TestCase.settings = settings(max_examples=60, stateful_step_count=25, derandomize=True, deadline=None,
                                     suppress_health_check=[HealthCheck.too_slow])
TestClashes = Clashes.TestCase


def test_a_creation_reads_no_other_topic(tmp_path, monkeypatch):
    """A creation beside 300 topics calls collision_key once (for its own name), not 300 times."""
    import kafka_wire.log.manager as manager

    mgr = LogManager(tmp_path, LogConfig(segment_bytes=4096), clock=lambda: 1_000)
    for i in range(300):
        mgr.create_topic(f"t{i}", 1)
    calls = []
    real = manager.collision_key
    monkeypatch.setattr(manager, "collision_key", lambda n: calls.append(n) or real(n))
    mgr.create_topic("new.one", 1)
    assert len(calls) <= 2, len(calls)
    mgr.close()
