"""The test's handle on a broker's virtual clock.

A broker started with ``EmulatedBroker(virtual_clock=True)`` reads time from a
:class:`coordinator.clock.VirtualClock` that stands still until the test moves
it. Everything that follows time follows it: retention, session and rebalance
timeouts, offset expiry, transaction timeouts, throughput-unit windows and
capture windows. ``advance`` runs the timers that fall due on the broker's
own event loop and returns when they have run::

    with EmulatedBroker(virtual_clock=True) as broker:
        ...
        broker.clock.advance(seconds=7)   # a 6 s session timeout expires now
"""
from __future__ import annotations

import asyncio

from kafka_wire.coordinator.clock import VirtualClock


class BrokerClock:
    def __init__(self, clock: VirtualClock, loop: asyncio.AbstractEventLoop) -> None:
        self._clock = clock
        self._loop = loop

    def now_ms(self) -> int:
        return self._clock.now_ms()

    def advance(self, ms: int = 0, *, seconds: float = 0) -> int:
        """Move time forward and run what falls due; returns the new time (ms)."""
        total = int(ms + seconds * 1000)
        if total < 0:
            raise ValueError("time only moves forward")
        self._clock.advance_threadsafe(self._loop, total).result(30)
        return self._clock.now_ms()

    def set(self, epoch_ms: int) -> None:
        """Jump to an absolute time (not backwards)."""
        delta = epoch_ms - self._clock.now_ms()
        if delta < 0:
            raise ValueError("time only moves forward")
        self.advance(delta)
