"""Time for the coordinator: every timeout, timestamp and delayed operation goes
through a :class:`Clock`, so the group state machine can be stepped by tests
without sleeping.

``SystemClock`` uses wall time for timestamps and the running asyncio loop for
timers. ``VirtualClock`` is frozen until a test moves it; ``advance(ms)`` fires
due timers in time order, including timers those callbacks schedule inside
the window, each with ``now_ms()`` equal to its due time.

Driving a ``VirtualClock`` from another thread (a test thread next to a broker
running its loop in a background thread): never call ``advance`` there
directly, because timer callbacks touch coordinator state owned by the loop.
Hop onto the loop instead and wait for the result::

    done = clock.advance_threadsafe(loop, 10_000)   # concurrent.futures.Future
    done.result(timeout=5)

which is ``loop.call_soon_threadsafe(clock.advance, 10_000)`` plus a future to
wait on. Reading ``now_ms()`` and scheduling timers are guarded by a lock, so
they are safe from any thread.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import heapq
import itertools
import logging
import threading
import time
from typing import Any, Callable, Protocol

__all__ = ["Clock", "TimerHandle", "SystemClock", "VirtualClock"]

log = logging.getLogger(__name__)


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch (wall time: it is stored in checkpoints)."""
        ...

    def call_later(self, delay_ms: int, callback: Callable[[], Any]) -> TimerHandle:
        """Run ``callback()`` once, ``delay_ms`` from now, on the event loop thread."""
        ...


class SystemClock:
    """Wall-clock timestamps; timers on the asyncio loop (the running one by default)."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def call_later(self, delay_ms: int, callback: Callable[[], Any]) -> TimerHandle:
        loop = self._loop or asyncio.get_running_loop()
        return loop.call_later(max(delay_ms, 0) / 1000.0, callback)


class _VirtualTimer:
    __slots__ = ("due_ms", "seq", "callback", "cancelled")

    def __init__(self, due_ms: int, seq: int, callback: Callable[[], Any]) -> None:
        self.due_ms = due_ms
        self.seq = seq
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        self.callback = None  # drop references held by a dead timer

    def __lt__(self, other: "_VirtualTimer") -> bool:
        return (self.due_ms, self.seq) < (other.due_ms, other.seq)

    def __repr__(self) -> str:
        return f"<VirtualTimer due={self.due_ms} cancelled={self.cancelled}>"


class VirtualClock:
    """A clock that moves only when told to. Timers fire from ``advance``/``set``.

    A timer scheduled with delay 0 does not run inside ``call_later`` (callers
    are never re-entered); it runs at the next ``advance``, even ``advance(0)``.
    Exceptions raised by a callback propagate out of ``advance`` so that tests
    see them; the clock stays at that timer's due time.
    """

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._heap: list[_VirtualTimer] = []
        self._seq = itertools.count()
        self._lock = threading.RLock()

    def now_ms(self) -> int:
        with self._lock:
            return self._now

    def call_later(self, delay_ms: int, callback: Callable[[], Any]) -> _VirtualTimer:
        with self._lock:
            timer = _VirtualTimer(self._now + max(int(delay_ms), 0), next(self._seq), callback)
            heapq.heappush(self._heap, timer)
            return timer

    def pending(self) -> int:
        """Timers scheduled and not cancelled (for tests)."""
        with self._lock:
            return sum(1 for t in self._heap if not t.cancelled)

    def next_due_ms(self) -> int | None:
        with self._lock:
            live = [t.due_ms for t in self._heap if not t.cancelled]
            return min(live) if live else None

    def advance(self, ms: int) -> None:
        """Move time forward by ``ms`` and run every timer that falls due, in order."""
        if ms < 0:
            raise ValueError(f"cannot advance a clock by {ms} ms: use set() to move it back")
        with self._lock:
            target = self._now + int(ms)
        self._run_until(target)

    def set(self, now_ms: int) -> None:
        """Jump to ``now_ms``. Forward jumps fire due timers like ``advance``;
        a backward jump (a wall-clock step) moves time without firing anything,
        and pending timers keep their absolute due times."""
        with self._lock:
            if now_ms < self._now:
                self._now = int(now_ms)
                return
        self._run_until(int(now_ms))

    def advance_threadsafe(self, loop: asyncio.AbstractEventLoop,
                           ms: int) -> concurrent.futures.Future:
        """Advance on ``loop``'s thread; returns a future the caller may wait on."""
        done: concurrent.futures.Future = concurrent.futures.Future()

        def run() -> None:
            try:
                self.advance(ms)
            except BaseException as exc:  # hand the failure to the waiting thread
                done.set_exception(exc)
            else:
                done.set_result(None)

        loop.call_soon_threadsafe(run)
        return done

    def _run_until(self, target: int) -> None:
        while True:
            with self._lock:
                while self._heap and self._heap[0].cancelled:
                    heapq.heappop(self._heap)
                if not self._heap or self._heap[0].due_ms > target:
                    self._now = max(self._now, target)
                    return
                timer = heapq.heappop(self._heap)
                # Time moves to the timer's due time so the callback sees it.
                self._now = max(self._now, timer.due_ms)
                callback = timer.callback
                timer.cancel()
            # Run outside the lock: callbacks schedule timers and read the time.
            callback()
