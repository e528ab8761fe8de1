"""Waiting in a test for something another thread (the broker's loop, a client's
callbacks) brings about: a condition polled until it holds or a bounded time runs out.

Example::

    from kafka_wire.testing.waits import wait_for

    assert wait_for(lambda: len(received) >= 10, timeout=20), f"{len(received)} of 10"
"""
from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float = 10.0, every: float = 0.05) -> T:
    """``predicate()``'s first true value, asked every ``every`` seconds; once ``timeout``
    seconds have passed, its value then, true or not (the caller asserts on it, saying
    what it waited for)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    return predicate()
