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

import heapq
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
        if not members:
            return {}
        first = subscriptions[members[0]]
        if all(subscriptions[m] == first for m in members):
            return self._homogeneous(members, first, topics, current)
        return self._heterogeneous(members, subscriptions, topics, current)

    @staticmethod
    def _homogeneous(members: list[str], subscribed: set[str], topics: Mapping[str, int],
                     current: Mapping[str, Mapping[str, set[int]]]) -> Assignment:
        """Every member subscribes to the same topics (the usual group): each gets
        ``quota`` or ``quota + 1`` of the partitions. O(partitions log partitions +
        members log members): a join to a group of a thousand members on a hub of a
        thousand partitions costs milliseconds, not the half second a per-partition scan
        of every member took (the event loop waits for it)."""
        names = sorted(t for t in subscribed if t in topics)
        total = sum(topics[t] for t in names)
        quota, extra = divmod(total, len(members))
        # Members keep what they have, up to their share: the lowest partitions, so
        # that a rebalance moves the highest ones (as moving the fullest member's
        # highest partitions to the emptiest would).
        taken: set[tuple[str, int]] = set()
        kept: dict[str, list[tuple[str, int]]] = {}
        for m in members:
            mine = kept[m] = []
            for t in sorted(current.get(m, {})):
                if t not in topics or t not in subscribed:
                    continue
                size = topics[t]
                for p in sorted(current[m][t]):
                    if p < size and (t, p) not in taken:
                        taken.add((t, p))
                        mine.append((t, p))
        for m in members:
            mine = kept[m]
            if len(mine) > quota:
                cap = quota + 1 if extra else quota
                extra -= cap - quota
                for tp in mine[cap:]:
                    taken.discard(tp)
                del mine[cap:]
        # The rest goes to the least loaded member (ties: the first name), none past
        # its share: first everyone up to ``quota``, then one more while extras last.
        heap = [(len(kept[m]), m) for m in members
                if len(kept[m]) < quota or (len(kept[m]) == quota and extra)]
        heapq.heapify(heap)
        for t in names:
            for p in range(topics[t]):
                if (t, p) in taken:
                    continue
                count, m = heapq.heappop(heap)
                kept[m].append((t, p))
                count += 1
                if count > quota:
                    extra -= 1
                    if not extra:  # the extras are gone: whoever has ``quota`` is full
                        heap = [(c, x) for c, x in heap if c < quota]
                        heapq.heapify(heap)
                elif count < quota or extra:
                    heapq.heappush(heap, (count, m))
        out: Assignment = {m: {} for m in members}
        for m in members:
            for t, p in kept[m]:
                out[m].setdefault(t, set()).add(p)
        return out

    @staticmethod
    def _heterogeneous(members: list[str], subscriptions: Mapping[str, set[str]],
                       topics: Mapping[str, int],
                       current: Mapping[str, Mapping[str, set[int]]]) -> Assignment:
        """Members subscribe to different topics. Each partition goes to the least
        loaded member (ties: the first name) among those subscribed to its topic; the
        per-topic minimum is kept up to date as counts change rather than searched for
        every partition, which cost members x partitions per pass."""
        out: Assignment = {m: {} for m in members}
        by_topic = {t: [m for m in members if t in subscriptions[m]] for t in sorted(topics)}
        by_topic = {t: ms for t, ms in by_topic.items() if ms}
        mine = {m: [t for t in by_topic if t in subscriptions[m]] for m in members}
        count = {m: 0 for m in members}
        # Members keep what they have and may still have; balancing below
        # moves only what it must.
        owner: dict[tuple[str, int], str] = {}
        for m in members:
            for t, ps in current.get(m, {}).items():
                if t not in by_topic or t not in subscriptions[m]:
                    continue
                for p in ps:
                    if 0 <= p < topics[t] and (t, p) not in owner:
                        owner[(t, p)] = m
                        count[m] += 1
        # The rest goes to the least loaded eligible member: one heap per topic, its
        # entries refreshed when popped (counts only grow here, so a stale entry is low).
        heaps = {t: [(count[m], m) for m in ms] for t, ms in by_topic.items()}
        for heap in heaps.values():
            heapq.heapify(heap)
        for t, ms in by_topic.items():
            heap = heaps[t]
            for p in range(topics[t]):
                if (t, p) in owner:
                    continue
                while heap[0][0] != count[heap[0][1]]:
                    heapq.heapreplace(heap, (count[heap[0][1]], heap[0][1]))
                m = heap[0][1]
                owner[(t, p)] = m
                count[m] += 1
        # Even out: move partitions from the fullest to the emptiest member that may
        # take them, until no move narrows the gap. ``least[t]`` is the topic's least
        # loaded member at every step.
        def key(x: str) -> tuple[int, str]:
            return count[x], x

        least = {t: min(ms, key=key) for t, ms in by_topic.items()}
        moved = True
        while moved:
            moved = False
            for tp in sorted(owner, reverse=True):
                src = owner[tp]
                dst = least[tp[0]]
                if count[src] - count[dst] > 1:
                    owner[tp] = dst
                    moved = True
                    # One count at a time, so that ``least`` holds before each.
                    count[src] -= 1
                    for t in mine[src]:
                        if key(src) < key(least[t]):
                            least[t] = src
                    count[dst] += 1
                    for t in mine[dst]:
                        if least[t] == dst:
                            least[t] = min(by_topic[t], key=key)
        for (t, p), m in owner.items():
            out[m].setdefault(t, set()).add(p)
        return out


ASSIGNORS: dict[str, ServerAssignor] = {a.name: a for a in (UniformAssignor(), RangeAssignor())}
