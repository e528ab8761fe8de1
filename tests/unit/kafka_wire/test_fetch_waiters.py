"""TopicManager's waiting fetches (long-poll Fetch requests and AMQP receivers parked until
data arrives): an append wakes its partition's waiters, a deletion its hub's, and
forget_waiter (a fetch answered, timed out or cancelled with its connection) leaves
nothing behind. They are kept by hub: a deletion reads no other hub's waiters, so its
cost does not grow with the fetches parked on the rest of the namespace."""
from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule

from kafka_wire.log.config import LogConfig
from kafka_wire.log.manager import LogManager
from kafka_wire.topics import TopicManager
from tests.unit.log.log_helpers import make_batch

HUBS = ["a", "b", "c"]
KEYS = [(hub, p) for hub in HUBS for p in range(2)]


async def _armed(topics: TopicManager, keys) -> asyncio.Future:
    return topics.wait_for_data(keys)  # (a future needs the running loop)


class _WatchedKey(tuple):
    """A (topic, partition) key that counts every look at it after ``watch``."""
    looks = 0
    watching = False

    def _look(self):
        if _WatchedKey.watching:
            _WatchedKey.looks += 1

    def __getitem__(self, i):
        self._look()
        return super().__getitem__(i)

    def __iter__(self):
        self._look()
        return super().__iter__()

    def __eq__(self, other):
        self._look()
        return super().__eq__(other)

    def __hash__(self):
        self._look()
        return super().__hash__()


def _manager(tmp_path: Path, hubs: list[str]) -> tuple[LogManager, TopicManager]:
    logs = LogManager(tmp_path, LogConfig())
    topics = TopicManager(logs)
    for hub in hubs:
        topics.create(hub, 2)
    return logs, topics


def test_a_deletion_wakes_its_hubs_waiters_and_reads_no_other_hubs(tmp_path):
    others = [f"other-{i}" for i in range(50)]
    logs, topics = _manager(tmp_path, ["gone", *others])
    loop = asyncio.new_event_loop()
    try:
        parked = {hub: loop.run_until_complete(_armed(topics, [_WatchedKey((hub, 0)),
                                                               _WatchedKey((hub, 1))]))
                  for hub in others}
        gone = loop.run_until_complete(_armed(topics, [("gone", 0), ("gone", 1)]))
        both = loop.run_until_complete(_armed(topics, [("gone", 1), ("other-7", 0)]))
        _WatchedKey.looks, _WatchedKey.watching = 0, True
        try:
            topics.delete("gone")
        finally:
            _WatchedKey.watching = False
        assert _WatchedKey.looks == 0, f"the deletion read {_WatchedKey.looks} keys of other hubs' waiters"
        assert gone.done() and both.done()
        assert not any(fut.done() for fut in parked.values())
        # The others are still parked: an append to one wakes its waiter, and only it.
        topics.append("other-3", 1, bytearray(make_batch()), now_ms=1_000)
        assert parked["other-3"].done()
        assert [hub for hub, fut in parked.items() if fut.done()] == ["other-3"]
    finally:
        loop.close()
        logs.close()


class FetchWaitersMachine(RuleBasedStateMachine):
    """Waiters parked on keys of three hubs, appended to, deleted (and made again),
    forgotten: each future is resolved exactly when the model says it was woken."""
    waiters = Bundle("waiters")

    @initialize()
    def open(self):
        self.dir = Path(tempfile.mkdtemp(prefix="fetch-waiters-"))
        self.logs, self.topics = _manager(self.dir, HUBS)
        self.loop = asyncio.new_event_loop()
        self.parked: dict[int, tuple[asyncio.Future, list]] = {}  # still registered, by id
        self.woken: set[int] = set()
        self.now = 1_000

    def teardown(self):
        if hasattr(self, "logs"):
            self.loop.close()
            self.logs.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    def _woke(self, touched) -> None:
        for ident, (_fut, keys) in self.parked.items():
            if touched(keys):
                self.woken.add(ident)

    @rule(target=waiters, keys=st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True))
    def wait(self, keys):
        fut = self.loop.run_until_complete(_armed(self.topics, keys))
        self.parked[id(fut)] = (fut, keys)
        return fut

    @rule(fut=waiters)
    def forget(self, fut):
        entry = self.parked.pop(id(fut), None)
        self.topics.forget_waiter(fut, entry[1] if entry else KEYS)  # twice: nothing more

    @rule(key=st.sampled_from(KEYS))
    def append(self, key):
        self.now += 1
        self.topics.append(*key, bytearray(make_batch(ts=self.now)), now_ms=self.now)
        self._woke(lambda keys: key in keys)

    @rule(hub=st.sampled_from(HUBS))
    def delete_and_remake(self, hub):
        self.topics.delete(hub)
        self._woke(lambda keys: any(t == hub for t, _p in keys))
        self.topics.create(hub, 2)

    @rule()
    def forget_all(self):
        for fut, keys in self.parked.values():
            self.topics.forget_waiter(fut, keys)
        self.parked.clear()
        assert not self.topics._waiters, "forgotten waiters left entries behind"

    @invariant()
    def resolved_exactly_when_woken(self):
        for ident, (fut, keys) in self.parked.items():
            assert fut.done() == (ident in self.woken), (keys, fut.done())


FetchWaitersMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_fetch_waiters = FetchWaitersMachine.TestCase
