"""Broker metrics: cheap counters updated on the Kafka path, read at scrape time.

The hooks below do a few dictionary and integer operations each; everything
that walks the broker (partitions, groups, capture files) happens only when
``/metrics`` or the console asks (:func:`render_prometheus`, :mod:`views`).

Hooks and where they are installed (by :func:`kafka_wire.console.attach`):

=====================================  =========================================
``services.observer`` (this object)    server, after each response is written:
                                       ``on_request(header, seconds, ctx)``;
                                       Fetch, records served: ``on_fetch(ctx,
                                       reads)`` (outgoing events and bytes)
``TopicManager.on_append`` (chained)   every append: incoming events and bytes
=====================================  =========================================
"""
from __future__ import annotations

import bisect
import logging
import time
from collections import deque
from typing import Any, Callable, Iterable

from kafka_wire.codec import ApiKey
from kafka_wire.context import BrokerObserver

log = logging.getLogger(__name__)

__all__ = ["BrokerMetrics", "LATENCY_BUCKETS", "ThrottleEvent"]

# Seconds; Kafka's request latencies on a laptop span ~50 µs to the long-poll maximum.
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                   0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_PRODUCE, _FETCH = int(ApiKey.Produce), int(ApiKey.Fetch)
_THROTTLE_EVENTS = 200


def api_name(key: int) -> str:
    try:
        return ApiKey(key).name
    except ValueError:
        return f"ApiKey{key}"


class _Histogram:
    __slots__ = ("buckets", "sum", "count")

    def __init__(self) -> None:
        self.buckets = [0] * (len(LATENCY_BUCKETS) + 1)  # last: +Inf only
        self.sum = 0.0
        self.count = 0

    def observe(self, seconds: float) -> None:
        self.buckets[bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1
        self.sum += seconds
        self.count += 1


class ThrottleEvent(tuple):
    """(time_ms, namespace, hub or None, api, client_id, ms)."""
    __slots__ = ()

    def as_json(self) -> dict:
        t, ns, hub, api, client, ms = self
        return {"time_ms": t, "namespace": ns, "hub": hub, "api": api, "client_id": client,
                "throttle_ms": ms}


class BrokerMetrics(BrokerObserver):
    """Counters of one broker. All methods run on the broker's event loop."""

    def __init__(self, wall_ms: Callable[[], int] | None = None) -> None:
        self._wall_ms = wall_ms or (lambda: time.time_ns() // 1_000_000)
        self.started_ms = self._wall_ms()
        self.latency: dict[int, _Histogram] = {}
        # (namespace, hub, partition) -> [in events, in bytes, out events, out bytes]
        self.partitions: dict[tuple[str, str, int], list[int]] = {}
        # (namespace, api) -> [throttled requests, throttle ms]
        self.throttled: dict[tuple[str, str], list[int]] = {}
        # (namespace, hub) -> [throttled requests that hub's traffic drew, throttle ms]
        self.throttled_hubs: dict[tuple[str, str], list[int]] = {}
        self.throttle_events: deque[ThrottleEvent] = deque(maxlen=_THROTTLE_EVENTS)
        # the other endpoints' shares of the partition counters (amqp, https):
        # protocol -> [in events, in bytes, out events, out bytes]; Kafka's is the rest
        self.protocols: dict[str, list[int]] = {}

    # -- hooks on the Kafka path --------------------------------------------------
    def on_request(self, header, seconds: float, ctx=None) -> None:
        hist = self.latency.get(header.api_key)
        if hist is None:
            hist = self.latency[header.api_key] = _Histogram()
        hist.observe(seconds)
        if ctx is not None and ctx.throttle_ms > 0:
            namespace, ms = ctx.namespace.name, ctx.throttle_ms
            hubs = sorted(ctx.throttle_hubs or ())
            for hub in hubs:
                c = self.throttled_hubs.get((namespace, hub))
                if c is None:
                    c = self.throttled_hubs[(namespace, hub)] = [0, 0]
                c[0] += 1
                c[1] += ms
            self._throttle(namespace, ", ".join(hubs) or None, api_name(header.api_key),
                           header.client_id, ms)

    def appender(self, namespace: str, chained: Callable | None = None) -> Callable:
        """A ``TopicManager.on_append`` hook counting incoming events and bytes."""
        parts = self.partitions

        def on_append(topic: str, partition: int, info) -> None:
            if not info.duplicate:
                key = (namespace, topic, partition)
                c = parts.get(key)
                if c is None:
                    c = parts[key] = [0, 0, 0, 0]
                for h in info.headers:
                    c[0] += h.records_count
                    c[1] += h.size
            if chained is not None:
                chained(topic, partition, info)
        return on_append

    def on_fetch(self, ctx, reads: Iterable) -> None:
        """Records a Fetch returns (objects with .topic, .partition, .records and
        .events, the records counted once by Fetch)."""
        namespace = None
        parts = self.partitions
        for r in reads:
            records = r.records
            if not len(records):
                continue
            if namespace is None:
                namespace = ctx.namespace.name
            key = (namespace, r.topic, r.partition)
            c = parts.get(key)
            if c is None:
                c = parts[key] = [0, 0, 0, 0]
            c[2] += r.events
            c[3] += len(records)

    def on_events(self, protocol: str, namespace: str, hub: str, partition: int, incoming: bool,
                  events: int, nbytes: int) -> None:
        i = 0 if incoming else 2
        c = self.protocols.get(protocol)
        if c is None:
            c = self.protocols[protocol] = [0, 0, 0, 0]
        c[i] += events
        c[i + 1] += nbytes
        if not incoming:  # appends reach the partition counters through the append hook
            key = (namespace, hub, partition)
            c = self.partitions.get(key)
            if c is None:
                c = self.partitions[key] = [0, 0, 0, 0]
            c[2] += events
            c[3] += nbytes

    def protocol_counters(self) -> dict[str, list[int]]:
        """{protocol: [in events, in bytes, out events, out bytes]}: Kafka's is what the
        partitions saw less the other endpoints'."""
        total = [0, 0, 0, 0]
        for c in self.partitions.values():
            for i in range(4):
                total[i] += c[i]
        out = {"amqp": [0, 0, 0, 0], **{p: list(c) for p, c in self.protocols.items()}}
        for c in self.protocols.values():
            total = [t - n for t, n in zip(total, c)]
        out["kafka"] = [max(t, 0) for t in total]
        return out

    def record_throttle(self, namespace: str, hub: str | None, ms: int, *,
                        api: str = "", client_id: str | None = None) -> None:
        """For the Event Hubs layer: a request of ``hub`` (None: namespace-wide) was
        delayed ``ms``. Requests whose response carries a throttle time are
        already counted by the server hook; call this for throttling it cannot
        see (per hub detail, AMQP-style refusals)."""
        if ms > 0:
            self._throttle(namespace, hub, api, client_id, ms)

    def _throttle(self, namespace: str, hub: str | None, api: str, client_id: str | None,
                  ms: int) -> None:
        c = self.throttled.get((namespace, api))
        if c is None:
            c = self.throttled[(namespace, api)] = [0, 0]
        c[0] += 1
        c[1] += ms
        self.throttle_events.append(
            ThrottleEvent((self._wall_ms(), namespace, hub, api, client_id, ms)))

    # -- reading ----------------------------------------------------------------------
    def partition_counters(self, namespace: str, hub: str, partition: int) -> list[int]:
        return self.partitions.get((namespace, hub, partition)) or [0, 0, 0, 0]

    def hub_throttling(self, namespace: str, hub: str) -> list[int]:
        """[throttled requests, throttle ms] drawn by ``hub``'s traffic."""
        return list(self.throttled_hubs.get((namespace, hub)) or [0, 0])

    def latency_snapshot(self) -> dict[str, Any]:
        return {api_name(k): (list(h.buckets), h.sum, h.count) for k, h in self.latency.items()}
