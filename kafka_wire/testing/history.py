"""A history checker for soak and fault tests: what producers got acknowledged,
what each consumer group read, and whether that is "every acknowledged event
read exactly once per consumer group, in order per partition".

Producers call :meth:`History.sent` for every send the application makes (a
re-send of a send that failed or timed out is a second call with the same
payload id) and :meth:`History.acked` when the service acknowledged it (with the
offset when the protocol says it: Kafka does, AMQP does not). Consumers call
:meth:`History.read` for every event they get, with its position (Kafka offset
or Event Hubs sequence number) in its partition. :meth:`History.check` then
tells apart:

- **lost**: acknowledged, never read by a group (a failure);
- **stored twice**: one payload at two positions of the log although the
  application sent it once: the broker or the SDK doubled it (a failure);
- **re-sent**: one payload at two positions because the application sent it
  again after a send it was not told succeeded: what at-least-once producers
  legitimately do (counted, not a failure);
- **redelivered**: a position a group read before, read again (after a
  rebalance or a reconnect from a checkpoint: at-least-once consumers; counted,
  not a failure);
- **out of order**: a group read a position below one it read before without
  having read it yet (a skip filled in later), or one producer's events stand
  in a partition in another order than it sent them (a failure);
- **misplaced**: read at another partition or offset than the one acknowledged
  (a failure).

Thread-safe: producers and consumers record from their own threads.
"""
from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field

__all__ = ["History", "Verdict"]

_SHOW = 20  # examples kept per finding


@dataclass
class Verdict:
    acknowledged: int = 0
    sent: int = 0
    acknowledged_by: dict[str, int] = field(default_factory=dict)  # producer -> events acknowledged
    read: dict[str, int] = field(default_factory=dict)          # group -> events read (all copies)
    lost: dict[str, list[str]] = field(default_factory=dict)    # group -> payload ids
    stored_twice: list[str] = field(default_factory=list)       # payloads sent once, stored twice
    resent: int = 0                                              # extra copies of re-sent payloads
    redelivered: dict[str, int] = field(default_factory=dict)   # group -> positions read again
    # group -> the first re-reads: "hub/partition: from N" where a run of them began
    redelivery_starts: dict[str, list[str]] = field(default_factory=dict)
    out_of_order: dict[str, list[str]] = field(default_factory=dict)
    misplaced: list[str] = field(default_factory=list)
    unacknowledged_read: int = 0  # read, never acknowledged (a send whose answer was lost)

    @property
    def ok(self) -> bool:
        return not (any(self.lost.values()) or self.stored_twice or any(self.out_of_order.values())
                    or self.misplaced)

    def counts(self) -> dict:
        """The figures (no examples), for artifacts and printing."""
        return {"acknowledged": self.acknowledged, "sent": self.sent,
                "acknowledged_by": dict(self.acknowledged_by), "read": dict(self.read),
                "lost": {g: len(v) for g, v in self.lost.items()},
                "stored_twice": len(self.stored_twice), "resent_copies": self.resent,
                "redelivered": dict(self.redelivered),
                "redelivery_starts": {g: v[:_SHOW] for g, v in self.redelivery_starts.items() if v},
                "out_of_order": {g: len(v) for g, v in self.out_of_order.items()},
                "misplaced": len(self.misplaced), "unacknowledged_read": self.unacknowledged_read}

    def explain(self) -> str:
        parts = [f"{k}: {v}" for k, v in self.counts().items()]
        for g, ids in self.lost.items():
            if ids:
                parts.append(f"lost by {g}: {ids[:_SHOW]}")
        if self.stored_twice:
            parts.append(f"stored twice: {self.stored_twice[:_SHOW]}")
        for g, what in self.out_of_order.items():
            if what:
                parts.append(f"out of order for {g}: {what[:_SHOW]}")
        if self.misplaced:
            parts.append(f"misplaced: {self.misplaced[:_SHOW]}")
        return "; ".join(parts)


class History:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._attempts: dict[str, int] = defaultdict(int)       # payload -> sends by the app
        self._seq: dict[str, tuple[str, int]] = {}              # payload -> (producer, send order)
        self._next_seq: dict[str, int] = defaultdict(int)
        self._acked: dict[str, tuple[str, int, int | None]] = {}  # payload -> hub, partition, offset
        # group -> list of (hub, partition, position, payload), in the order read
        self._reads: dict[str, list[tuple[str, int, int, str]]] = defaultdict(list)

    # -- recording ---------------------------------------------------------------------
    def sent(self, producer: str, payload: str) -> None:
        """The application sent ``payload`` (again, if called twice)."""
        with self._lock:
            self._attempts[payload] += 1
            if payload not in self._seq:
                self._seq[payload] = (producer, self._next_seq[producer])
                self._next_seq[producer] += 1

    def acked(self, payload: str, hub: str, partition: int, offset: int | None = None) -> None:
        with self._lock:
            self._acked[payload] = (hub, int(partition), offset)

    def read(self, group: str, hub: str, partition: int, position: int, payload: str) -> None:
        with self._lock:
            self._reads[group].append((hub, int(partition), int(position), payload))

    def acknowledged_ids(self) -> set[str]:
        with self._lock:
            return set(self._acked)

    def read_ids(self, group: str) -> set[str]:
        with self._lock:
            return {r[3] for r in self._reads.get(group, ())}

    # -- checking ----------------------------------------------------------------------
    def check(self) -> Verdict:
        with self._lock:
            attempts = dict(self._attempts)
            seq = dict(self._seq)
            acked = dict(self._acked)
            reads = {g: list(rs) for g, rs in self._reads.items()}
        v = Verdict(acknowledged=len(acked), sent=sum(attempts.values()))
        for payload in acked:
            producer = seq.get(payload, ("?", 0))[0]
            v.acknowledged_by[producer] = v.acknowledged_by.get(producer, 0) + 1
        stored_twice: set[str] = set()
        resent: dict[str, int] = {}  # payload -> extra copies (the most any group read)
        unacked: set[str] = set()
        misplaced: list[str] = []
        for group, rs in reads.items():
            v.read[group] = len(rs)
            seen: set[tuple[str, int, int]] = set()
            top: dict[tuple[str, int], int] = {}
            redelivered = 0
            starts: list[str] = []
            last_at: dict[tuple[str, int], int] = {}
            disorder: list[str] = []
            copies: dict[str, dict[tuple[str, int], int]] = defaultdict(dict)  # payload -> where -> pos
            positions: dict[str, set[tuple[str, int, int]]] = defaultdict(set)
            for hub, partition, position, payload in rs:
                where = (hub, partition, position)
                previous, last_at[(hub, partition)] = last_at.get((hub, partition)), position
                if where in seen:
                    redelivered += 1
                    if previous is None or position != previous + 1:
                        starts.append(f"{hub}/{partition}: from {position} (after {previous})")
                    continue
                seen.add(where)
                last = top.get((hub, partition))
                if last is not None and position < last:
                    disorder.append(f"{hub}/{partition}: position {position} first read after {last}")
                top[(hub, partition)] = max(position, last if last is not None else position)
                positions[payload].add(where)
                copies[payload].setdefault((hub, partition), position)
                copies[payload][(hub, partition)] = min(copies[payload][(hub, partition)], position)
            # One producer's events, in the order they stand in each partition: sent order?
            by_partition: dict[tuple[str, int, str], list[tuple[int, int, str]]] = defaultdict(list)
            for payload, first in copies.items():
                if payload not in seq:
                    continue
                producer, order = seq[payload]
                for (hub, partition), position in first.items():
                    by_partition[(hub, partition, producer)].append((position, order, payload))
            for (hub, partition, producer), items in by_partition.items():
                items.sort()
                for (p1, o1, id1), (p2, o2, id2) in zip(items, items[1:]):
                    if o2 < o1:
                        disorder.append(f"{hub}/{partition}: {producer} sent {id2} before {id1}, "
                                        f"stored at {p2} after {p1}")
            for payload, where in positions.items():
                if len(where) > 1:
                    if attempts.get(payload, 0) > 1:
                        resent[payload] = max(resent.get(payload, 0), len(where) - 1)
                    else:
                        stored_twice.add(payload)
                if payload not in acked:
                    unacked.add(payload)
                    continue
                hub, partition, offset = acked[payload]
                if not any(w[0] == hub and w[1] == partition and (offset is None or w[2] == offset)
                           for w in where):
                    misplaced.append(f"{payload}: acknowledged at {hub}/{partition}"
                                     f"{'' if offset is None else f'@{offset}'}, read at "
                                     f"{sorted(where)[:3]}")
            hubs = {r[0] for r in rs}
            lost = sorted(p for p, (hub, _, _) in acked.items()
                          if p not in positions and hub in hubs)
            v.lost[group] = lost
            v.redelivered[group] = redelivered
            v.redelivery_starts[group] = starts
            v.out_of_order[group] = disorder
        v.stored_twice = sorted(stored_twice)
        v.resent = sum(resent.values())
        v.misplaced = misplaced
        v.unacknowledged_read = len(unacked)
        return v
