"""VirtualClock and SystemClock."""
from __future__ import annotations

import asyncio
import threading

import pytest

from kafka_wire.coordinator.clock import SystemClock, VirtualClock


def test_advance_fires_due_timers_in_time_order_with_their_own_now():
    clock = VirtualClock(start_ms=0)
    seen = []
    clock.call_later(30, lambda: seen.append(("b", clock.now_ms())))
    clock.call_later(10, lambda: seen.append(("a", clock.now_ms())))
    clock.call_later(30, lambda: seen.append(("c", clock.now_ms())))  # ties keep order
    clock.call_later(31, lambda: seen.append(("late", clock.now_ms())))
    clock.advance(30)
    assert seen == [("a", 10), ("b", 30), ("c", 30)]
    assert clock.now_ms() == 30 and clock.pending() == 1


def test_timers_scheduled_by_callbacks_fire_within_the_window():
    clock = VirtualClock(start_ms=0)
    seen = []

    def tick():
        seen.append(clock.now_ms())
        if len(seen) < 5:
            clock.call_later(10, tick)

    clock.call_later(10, tick)
    clock.advance(35)
    assert seen == [10, 20, 30]
    clock.advance(100)
    assert seen == [10, 20, 30, 40, 50]


def test_zero_delay_runs_on_next_advance_not_inline():
    clock = VirtualClock()
    seen = []
    clock.call_later(0, lambda: seen.append(1))
    assert seen == []
    clock.advance(0)
    assert seen == [1]


def test_cancel_and_set():
    clock = VirtualClock(start_ms=1000)
    seen = []
    h = clock.call_later(5, lambda: seen.append("x"))
    clock.call_later(50, lambda: seen.append("y"))
    h.cancel()
    clock.set(1010)
    assert seen == [] and clock.next_due_ms() == 1050
    clock.set(500)  # a wall-clock step back fires nothing
    assert clock.now_ms() == 500 and seen == []
    clock.set(1050)
    assert seen == ["y"]
    with pytest.raises(ValueError):
        clock.advance(-1)


def test_callback_errors_reach_the_test():
    clock = VirtualClock(start_ms=0)
    clock.call_later(1, lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        clock.advance(5)
    assert clock.now_ms() == 1


def test_advance_threadsafe_runs_callbacks_on_the_loop_thread():
    clock = VirtualClock()
    loop = asyncio.new_event_loop()
    ran_on = []
    clock.call_later(100, lambda: ran_on.append(threading.get_ident()))
    t = threading.Thread(target=loop.run_forever)
    t.start()
    try:
        clock.advance_threadsafe(loop, 100).result(timeout=5)
        assert ran_on == [t.ident]
    finally:
        loop.call_soon_threadsafe(loop.stop)
        t.join()
        loop.close()


def test_system_clock_uses_the_running_loop():
    async def body():
        clock = SystemClock()
        done = asyncio.get_running_loop().create_future()
        before = clock.now_ms()
        clock.call_later(1, lambda: done.set_result(clock.now_ms()))
        assert await asyncio.wait_for(done, 2) >= before
    asyncio.run(body())
