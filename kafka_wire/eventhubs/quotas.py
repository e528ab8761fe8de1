"""Throughput units: per-namespace ingress and egress limits (1 MB/s or 1,000 events/s in, 2 MB/s or 4,096 events/s out per unit), throttled as the Kafka endpoint throttles.

A unit allows 1 MB/s or 1,000 events/s in and 2 MB/s or 4,096 events/s out,
whichever is reached first, shared by every hub and connection of the
namespace. Each limit is a token bucket on the injected clock holding up to
``burst_s`` seconds of quota. A request always completes (as with Kafka
quotas, KIP-219) and may drive its bucket into debt; the answer's
``throttle_time_ms`` is the time the debt takes to repay, and the server stops
reading that connection for as long. A Fetch that arrives while egress is in
debt gets no records, only the throttle time. A publication whose wait would
outlast the producer's request timeout is refused instead (Event Hubs answers
POLICY_VIOLATION) and not counted against the bucket.

Auto-inflate (Standard) adds one unit, up to the configured maximum, when
the namespace is over its units: traffic it took has driven a bucket into debt
(a request throttled, or a publication refused while ingress is in debt), and
the last increase is at least ``inflate_cooldown_ms`` old; units never go down.
A refusal on a namespace that is not in debt inflates nothing: the wait was too
long only for the caller's own timeout (zero, negative, or shorter than its
publication needs), which is no load at all. Otherwise any Send right could
raise a namespace to its maximum units one refused request at a time.
"""
from __future__ import annotations

import logging
import math
from typing import Callable

log = logging.getLogger(__name__)

__all__ = ["TokenBucket", "ThroughputQuota"]


class TokenBucket:
    __slots__ = ("rate", "burst_s", "tokens", "updated")

    def __init__(self, rate_per_s: float, now_ms: int, burst_s: float = 1.0) -> None:
        self.rate = float(rate_per_s)
        self.burst_s = burst_s
        self.tokens = self.capacity
        self.updated = now_ms

    @property
    def capacity(self) -> float:
        return self.rate * self.burst_s

    def _refill(self, now_ms: int) -> None:
        elapsed = now_ms - self.updated
        if elapsed > 0:
            self.tokens = min(self.capacity, self.tokens + self.rate * elapsed / 1000.0)
            self.updated = now_ms

    def set_rate(self, rate_per_s: float, now_ms: int) -> None:
        self._refill(now_ms)
        self.rate = float(rate_per_s)

    def take(self, amount: float, now_ms: int) -> int:
        """Spend ``amount``; the ms until the bucket is out of debt (0 if it is not in debt)."""
        self._refill(now_ms)
        self.tokens -= amount
        return self.delay_ms(now_ms)

    def delay_ms(self, now_ms: int) -> int:
        return self.delay_after(0, now_ms)

    def delay_after(self, amount: float, now_ms: int) -> int:
        """The delay spending ``amount`` now would cause, without spending it."""
        self._refill(now_ms)
        left = self.tokens - amount
        if left >= 0:
            return 0
        return math.ceil(-left * 1000.0 / self.rate)


class ThroughputQuota:
    """The throughput units of one namespace."""

    def __init__(self, namespace: str, units: int, limits, now_ms: int, *,
                 auto_inflate_max: int | None = None, burst_s: float = 1.0,
                 max_throttle_ms: int = 30_000, inflate_cooldown_ms: int = 1_000,
                 on_inflate: Callable[[int], None] | None = None) -> None:
        self.namespace = namespace
        self.limits = limits
        self.units = units
        self.auto_inflate_max = auto_inflate_max
        self.max_throttle_ms = max_throttle_ms
        self.inflate_cooldown_ms = inflate_cooldown_ms
        self.on_inflate = on_inflate
        self._last_inflate = now_ms
        self.ingress_bytes = TokenBucket(limits.ingress_bytes_per_unit * units, now_ms, burst_s)
        self.ingress_events = TokenBucket(limits.ingress_events_per_unit * units, now_ms, burst_s)
        self.egress_bytes = TokenBucket(limits.egress_bytes_per_unit * units, now_ms, burst_s)
        self.egress_events = TokenBucket(limits.egress_events_per_unit * units, now_ms, burst_s)
        self.throttled_requests = 0
        self.throttled_ms = 0
        self.refused_requests = 0

    def _rates(self, now_ms: int) -> None:
        lim, u = self.limits, self.units
        self.ingress_bytes.set_rate(lim.ingress_bytes_per_unit * u, now_ms)
        self.ingress_events.set_rate(lim.ingress_events_per_unit * u, now_ms)
        self.egress_bytes.set_rate(lim.egress_bytes_per_unit * u, now_ms)
        self.egress_events.set_rate(lim.egress_events_per_unit * u, now_ms)

    def rescale(self, units: int, limits, auto_inflate_max: int | None, now_ms: int) -> None:
        """New units (or a new tier's limits) from now on."""
        self.units, self.limits, self.auto_inflate_max = units, limits, auto_inflate_max
        self._rates(now_ms)

    def _throttled(self, delay: int, now_ms: int) -> int:
        if delay <= 0:
            return 0
        self.throttled_requests += 1
        self._maybe_inflate(now_ms)
        delay = min(delay, self.max_throttle_ms)
        self.throttled_ms += delay
        return delay

    def _maybe_inflate(self, now_ms: int) -> bool:
        """One more unit, if auto-inflate allows it now; whether it did. Callers ask only
        when traffic the namespace took put it in debt."""
        if (self.auto_inflate_max is None or self.units >= self.auto_inflate_max
                or now_ms - self._last_inflate < self.inflate_cooldown_ms):
            return False
        self.units += 1
        self._last_inflate = now_ms
        self._rates(now_ms)
        if self.on_inflate is not None:  # it logs the change (the compatibility report's note)
            self.on_inflate(self.units)
        else:
            log.info("namespace %s auto-inflated to %d throughput units", self.namespace, self.units)
        return True

    def ingress_wait(self, nbytes: int, events: int, now_ms: int) -> int:
        """ms a publication arriving now would have to wait, without accounting it."""
        return max(self.ingress_bytes.delay_after(nbytes, now_ms),
                   self.ingress_events.delay_after(events, now_ms))

    def refuse_ingress(self, now_ms: int) -> int:
        """Count a publication refused for waiting too long; the throttle time to send back.
        Inflates only when ingress is in debt now (the namespace is over its units): a
        refusal with no debt was the caller's short timeout, not load."""
        self.refused_requests += 1
        wait = max(self.ingress_bytes.delay_ms(now_ms), self.ingress_events.delay_ms(now_ms))
        if wait > 0 and self._maybe_inflate(now_ms):
            wait = max(self.ingress_bytes.delay_ms(now_ms), self.ingress_events.delay_ms(now_ms))
        return min(wait, self.max_throttle_ms)

    def ingress(self, nbytes: int, events: int, now_ms: int) -> int:
        """Account a publication; the throttle time (ms) its sender must wait."""
        delay = max(self.ingress_bytes.take(nbytes, now_ms),
                    self.ingress_events.take(events, now_ms))
        return self._throttled(delay, now_ms)

    def ingress_if_free(self, nbytes: int, events: int, now_ms: int) -> bool:
        """Account a publication that leaves the units out of debt, as ``ingress`` would
        (no throttle, nothing counted); False, accounting nothing, for one that would not."""
        in_bytes, in_events = self.ingress_bytes, self.ingress_events
        if in_bytes.delay_after(nbytes, now_ms) or in_events.delay_after(events, now_ms):
            return False
        in_bytes.tokens -= nbytes  # both refilled to ``now_ms`` just above
        in_events.tokens -= events
        return True

    def egress_delay(self, now_ms: int) -> int:
        """ms until egress is out of debt: a Fetch arriving now gets no records."""
        delay = max(self.egress_bytes.delay_ms(now_ms), self.egress_events.delay_ms(now_ms))
        return min(delay, self.max_throttle_ms)

    def egress(self, nbytes: int, events: int, now_ms: int) -> int:
        delay = max(self.egress_bytes.take(nbytes, now_ms),
                    self.egress_events.take(events, now_ms))
        return self._throttled(delay, now_ms)
