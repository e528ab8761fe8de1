"""FileHandleCache: a bound on the descriptors partition logs hold open.

Kafka keeps every segment file open and asks operators for a high
``ulimit -n``; we emulate thousands of partitions on a laptop whose soft
limit is often 1024. Maps hold no descriptor (``mapping``), so what is left
is the active segment of each partition written to: up to four write
descriptors (.log, .index, .timeindex, .batches). Each owner (a ``PartitionLog``) reports
how many it holds after using them; when the total passes the cap, the least
recently used owners are asked to close theirs. A file is reopened when it is
next written (one open(2), a few microseconds: .log and .batches at the next
append, the sparse indexes at their next entry); reads need no descriptor.
The cap is soft: a log being written keeps its files even if it alone passes it.
Files also close when idle: ``close_idle`` (the log flusher calls it about once
a second) closes those of owners that used none for ``IDLE_CLOSE_S``, so a
broker that wrote to thousands of partitions holds few descriptors once they
go quiet, whatever the cap.

An owner that is busy (another thread holds its lock) is skipped rather than
waited for, so eviction never blocks and never deadlocks: the total may then
pass the cap by one partition's worth for a moment. One cache serves the whole
process, since the descriptor limit is per process.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import Protocol

logger = logging.getLogger(__name__)



IDLE_CLOSE_S = 10.0  # reopening costs one open(2) per file: closing early is cheap


def default_max_open_files() -> int:
    """A quarter of the process's soft descriptor limit, between 16 and 4096:
    256 under the common 1024 (64 partitions written at once keep their
    files; sockets, the checkpoint store and clients keep the rest), 64 under
    macOS's 256, 4096 where the limit allows it: 1,000 partitions written
    round robin then keep their four files each instead of reopening them at
    every append (idle ones close after ``IDLE_CLOSE_S`` anyway)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):  # no rlimits (Windows)
        return 256
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(16, min(4096, soft // 4))


DEFAULT_MAX_OPEN_FILES = default_max_open_files()


class HandleOwner(Protocol):
    def close_idle_handles(self) -> bool:
        """Close the descriptors if idle, calling ``forget``; False if busy now."""


class FileHandleCache:
    """LRU of owners of open log descriptors, at most ``max_open_files`` in all.

    >>> cache = FileHandleCache(max_open_files=8)
    >>> cache.open_files
    0
    """

    def __init__(self, max_open_files: int = DEFAULT_MAX_OPEN_FILES):
        self._lock = threading.Lock()
        self._owners: OrderedDict[HandleOwner, int] = OrderedDict()  # least recently used first
        self._used: dict[HandleOwner, float] = {}  # owner -> time.monotonic() of its last touch
        self._open = 0
        self._max = 0
        self.max_open_files = max_open_files

    @property
    def max_open_files(self) -> int:
        return self._max

    @max_open_files.setter
    def max_open_files(self, value: int) -> None:
        if value < 1:
            raise ValueError(f"the log's open file limit must be at least 1, not {value}")
        self._max = value
        self._evict(None)

    @property
    def open_files(self) -> int:
        """Descriptors the owners reported holding."""
        return self._open

    def __len__(self) -> int:
        return len(self._owners)

    def touch(self, owner: HandleOwner, descriptors: int) -> None:
        """``owner`` used its files just now and holds ``descriptors`` open."""
        with self._lock:
            owners = self._owners
            if descriptors and owners.get(owner) == descriptors:  # the usual case: only its place moves
                owners.move_to_end(owner)
                self._used[owner] = time.monotonic()
                return
            self._open += descriptors - owners.pop(owner, 0)
            if descriptors:
                self._owners[owner] = descriptors
                self._used[owner] = time.monotonic()
            else:
                self._used.pop(owner, None)
            if self._open <= self._max:
                return
        self._evict(owner)

    def touched_within(self, owner: HandleOwner, descriptors: int, seconds: float) -> bool:
        """Did ``owner`` report holding ``descriptors`` less than ``seconds`` ago? Without
        the lock (two dict reads): an append that gets True need not touch, and the LRU
        order and idle times are then that coarse. False once its files were closed."""
        return (self._owners.get(owner) == descriptors
                and time.monotonic() - self._used.get(owner, -seconds) < seconds)

    def forget(self, owner: HandleOwner) -> None:
        """``owner`` closed its descriptors."""
        with self._lock:
            self._open -= self._owners.pop(owner, 0)
            self._used.pop(owner, None)

    def close_idle(self, idle_s: float = IDLE_CLOSE_S, *, now: float | None = None) -> int:
        """Ask the owners that used their files last more than ``idle_s`` ago to
        close them (busy ones are passed over until the next call); returns how
        many did."""
        cutoff = (time.monotonic() if now is None else now) - idle_s
        with self._lock:
            idle = []
            for owner in self._owners:  # least recently used first: stop at the first recent one
                if self._used.get(owner, 0.0) > cutoff:
                    break
                idle.append(owner)
        return sum(1 for owner in idle if owner.close_idle_handles())

    def _evict(self, keep: HandleOwner | None) -> None:
        # Victims are asked outside our lock: each takes its own lock (without
        # waiting), then ours in forget(). Busy ones are passed over this time.
        passed: set[int] = set()
        while True:
            with self._lock:
                if self._open <= self._max:
                    return
                victim = next((o for o in self._owners if o is not keep and id(o) not in passed), None)
            if victim is None:
                return
            if not victim.close_idle_handles():
                logger.debug("%r is busy: its files stay open for now", victim)
                passed.add(id(victim))


_shared = FileHandleCache()


def shared_cache() -> FileHandleCache:
    """The process's cache, which logs use unless given another: the descriptor
    limit is per process. Set its ``max_open_files`` to change the cap."""
    return _shared
