"""Log lines a person can act on: UTC timestamps, and repeats from one client
counted rather than printed (a misconfigured client retries many times a second)."""
from __future__ import annotations

import logging
import time
from datetime import datetime, timezone
from typing import Callable

__all__ = ["iso_utc", "client_address", "shortened", "RepeatedWarnings"]


def iso_utc(seconds: float) -> str:
    """``2026-11-24T20:01:29Z``: what a person compares with a clock."""
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def client_address(peer: str) -> str:
    """``"127.0.0.1:53124"`` -> ``"127.0.0.1"``: repeats are counted per client address."""
    return peer.rsplit(":", 1)[0]


def shortened(text: str, most: int = 100) -> str:
    """``text`` cut to ``most`` characters, saying how long it was: for a client's value
    quoted in a log line or a refusal (a detach echoing a huge one would not fit the
    peer's frames)."""
    return text if len(text) <= most else f"{text[:most]}... ({len(text)} characters)"


class RepeatedWarnings:
    """The first warning of a kind from a client address is logged at once; repeats
    within ``window_s`` are counted, and the next one after the window says how many
    there were. Memory is bounded: past ``max_keys`` addresses the oldest are forgotten."""

    def __init__(self, logger: logging.Logger, window_s: float = 60.0, max_keys: int = 4096,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger = logger
        self.window_s = window_s
        self.max_keys = max_keys
        self.clock = clock
        self._seen: dict[tuple[str, str], list] = {}  # key -> [window start, repeats]

    def warn(self, kind: str, address: str, message: str) -> bool:
        """Log ``message`` unless it repeats within the window; True when logged."""
        now = self.clock()
        key = (kind, address)
        entry = self._seen.get(key)
        if entry is not None and now - entry[0] < self.window_s:
            entry[1] += 1
            return False
        if entry is not None and entry[1]:
            self.logger.warning("%s (and %d more like it from %s in the last %.0f s)", message,
                                entry[1], address, now - entry[0])
        else:
            self.logger.warning("%s", message)
        self._seen.pop(key, None)
        if len(self._seen) >= self.max_keys:
            del self._seen[next(iter(self._seen))]  # dicts keep insertion order: the oldest
        self._seen[key] = [now, 0]
        return True
