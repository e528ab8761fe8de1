"""Server-side partition assignors for KIP-848 consumer groups.

An assignor maps member subscriptions and topic sizes to a target
assignment: ``{member_id: {topic: {partition, ...}}}``. ``uniform`` spreads
all partitions evenly and keeps partitions where they are when it can (so a
rebalance moves few of them); ``range`` gives each member a contiguous range
of every topic it subscribes to, so members line up across co-partitioned
topics. Both are deterministic: members and partitions are taken in sorted
order.
"""
from __future__ import annotations

import logging
from typing import Mapping, Protocol

__all__ = ["Assignment", "ServerAssignor", "UniformAssignor", "RangeAssignor", "ASSIGNORS"]

log = logging.getLogger(__name__)

Assignment = dict[str, dict[str, set[int]]]


class ServerAssignor(Protocol):
    name: str

    def assign(self, subscriptions: Mapping[str, set[str]], topics: Mapping[str, int],
               current: Mapping[str, Mapping[str, set[int]]]) -> Assignment: ...


class RangeAssignor:
    name = "range"

    def assign(self, subscriptions: Mapping[str, set[str]], topics: Mapping[str, int],
               current: Mapping[str, Mapping[str, set[int]]]) -> Assignment:
        out: Assignment = {m: {} for m in subscriptions}
        for topic in sorted(topics):
            members = sorted(m for m, subs in subscriptions.items() if topic in subs)
            if not members:
                continue
            quota, extra = divmod(topics[topic], len(members))
            start = 0
            for i, member in enumerate(members):
                count = quota + (1 if i < extra else 0)
                if count:
                    out[member][topic] = set(range(start, start + count))
                start += count
        return out


class UniformAssignor:
    name = "uniform"

    def assign(self, subscriptions: Mapping[str, set[str]], topics: Mapping[str, int],
               current: Mapping[str, Mapping[str, set[int]]]) -> Assignment:
        members = sorted(subscriptions)
        out: Assignment = {m: {} for m in members}
        if not members:
            return out
        eligible = {(t, p): [m for m in members if t in subscriptions[m]]
                    for t in sorted(topics) for p in range(topics[t])}
        eligible = {tp: ms for tp, ms in eligible.items() if ms}
        count = {m: 0 for m in members}
        # Members keep what they have and may still have; balancing below
        # moves only what it must.
        owner: dict[tuple[str, int], str] = {}
        for m in members:
            for t, ps in current.get(m, {}).items():
                for p in ps:
                    if m in eligible.get((t, p), ()) and (t, p) not in owner:
                        owner[(t, p)] = m
                        count[m] += 1
        # The rest goes to the least loaded eligible member.
        for tp, ms in eligible.items():
            if tp not in owner:
                m = min(ms, key=lambda x: (count[x], x))
                owner[tp] = m
                count[m] += 1
        # Even out: move partitions from the fullest to the emptiest member
        # that may take them, until no move narrows the gap.
        moved = True
        while moved:
            moved = False
            for tp in sorted(owner, reverse=True):
                src = owner[tp]
                dst = min(eligible[tp], key=lambda x: (count[x], x))
                if count[src] - count[dst] > 1:
                    owner[tp] = dst
                    count[src] -= 1
                    count[dst] += 1
                    moved = True
        for (t, p), m in owner.items():
            out[m].setdefault(t, set()).add(p)
        return out


ASSIGNORS: dict[str, ServerAssignor] = {a.name: a for a in (UniformAssignor(), RangeAssignor())}
