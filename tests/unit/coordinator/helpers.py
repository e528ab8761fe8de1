"""Shared test helpers: a classic-protocol harness on a virtual clock."""
from __future__ import annotations

import asyncio
from typing import Any

import kafka.errors as Errors

from kafka_wire.coordinator.clock import VirtualClock
from kafka_wire.coordinator.config import GroupCoordinatorConfig
from kafka_wire.coordinator.consumer_protocol import encode_assignment, encode_subscription
from kafka_wire.coordinator.group_metadata_manager import GroupMetadataManager

NONE = Errors.NoError.errno
SESSION = 10_000
REBALANCE = 30_000


def sub(*topics: str) -> bytes:
    return encode_subscription(list(topics))


def assign(*pairs: tuple[str, list[int]]) -> bytes:
    return encode_assignment(list(pairs))


class Pending:
    """Records the answer of a callback-style call (JoinGroup, SyncGroup)."""

    def __init__(self) -> None:
        self.results: list[Any] = []

    def __call__(self, result: Any) -> None:
        self.results.append(result)

    @property
    def done(self) -> bool:
        return bool(self.results)

    @property
    def result(self) -> Any:
        assert len(self.results) == 1, f"expected one answer, got {self.results}"
        return self.results[0]


class Harness:
    """GroupMetadataManager driven by a VirtualClock, with short-hand calls."""

    def __init__(self, **config: Any) -> None:
        config.setdefault("group_initial_rebalance_delay_ms", 100)
        self.config = GroupCoordinatorConfig(**config)
        self.clock = VirtualClock()
        self.mgr = GroupMetadataManager(self.config, self.clock)

    def group(self, group_id: str = "g"):
        return self.mgr.get_group(group_id)

    def join(self, member_id: str = "", group_id: str = "g", *, instance: str | None = None,
             protocols: list[tuple[str, bytes]] | None = None, protocol_type: str = "consumer",
             session: int = SESSION, rebalance: int = REBALANCE, client: str = "client",
             version: int = 9) -> Pending:
        p = Pending()
        self.mgr.join_group(group_id, member_id, instance, protocol_type,
                            protocols if protocols is not None else [("range", sub("t"))],
                            session, rebalance, client, "/127.0.0.1", version, p)
        return p

    def sync(self, member_id: str, generation: int, group_id: str = "g", *,
             instance: str | None = None,
             assignments: list[tuple[str, bytes]] | None = None) -> Pending:
        p = Pending()
        self.mgr.sync_group(group_id, generation, member_id, instance, None, None,
                            assignments or [], p)
        return p

    def heartbeat(self, member_id: str, generation: int, group_id: str = "g",
                  instance: str | None = None) -> int:
        return self.mgr.heartbeat(group_id, generation, member_id, instance)

    def settle(self, *pending: Pending, limit: int = 100) -> None:
        """Advance in steps of the initial delay until every pending answer came.

        (A member arriving during the initial delay extends it once more, as in Kafka.)
        """
        step = max(self.config.group_initial_rebalance_delay_ms, 1)
        for _ in range(limit):
            if all(p.done for p in pending):
                return
            self.clock.advance(step)
        raise AssertionError(f"no answer after {limit} steps of {step} ms")

    def join_new(self, group_id: str = "g", **kw: Any) -> tuple[str, Pending]:
        """MEMBER_ID_REQUIRED round trip: returns the member id and the pending rejoin."""
        first = self.join("", group_id, **kw)
        assert first.result.error_code == Errors.MemberIdRequiredError.errno
        member_id = first.result.member_id
        return member_id, self.join(member_id, group_id, **kw)

    def stable_group(self, n: int, group_id: str = "g", **kw: Any) -> list[str]:
        """n dynamic members through join + sync; returns member ids, leader first."""
        joins = [self.join_new(group_id, client=f"c{i}", **kw) for i in range(n)]
        self.settle(*(p for _, p in joins))
        results = [p.result for _, p in joins]
        assert all(r.error_code == NONE for r in results), results
        leader = results[0].leader
        gen = results[0].generation_id
        ids = [leader] + [r.member_id for r in results if r.member_id != leader]
        syncs = [self.sync(m, gen, group_id, assignments=[
            (mid, assign(("t", [i]))) for i, mid in enumerate(ids)] if m == leader else None)
            for m in ids]
        assert all(s.result.error_code == NONE for s in syncs)
        return ids


def run(coro_fn) -> Any:
    """Run an async test body on a fresh loop (pytest-asyncio is not used here)."""
    return asyncio.run(coro_fn())
