"""Capture windows: which events go into which file (a time window and a size limit, whichever closes first).

Per partition, time is cut into windows of ``interval`` aligned to the epoch
(a 300 s window starts at :00, :05, ...), by enqueued time. A window's events
go into one file unless the size limit is reached first: then the file closes
and the next one starts (whichever of time and size comes first). A window
with no event gives an empty file unless ``skip_empty``.

Planning works on whole record batches, because all events of a batch share
one append time (so a batch never straddles a time window) and because the
planner then needs only the ``.batches`` index, never the records. The size
counted is the batches' stored bytes (compressed as produced); a file closes
before the first batch that would take it past the limit.

File names come from a time (capture.naming). A window's first file is named
after the window start; a file started by the size limit, or a window resumed
after a forced close, after its first event's time. Names of a partition only
ever increase, by at least one second (the names' resolution): when the
natural time is taken, the next free second is used. So names never collide,
however small the limit.

``plan`` is a pure function of its arguments. The Spark source calls it twice
for a micro-batch: live, to decide where the batch ends (only closed files
are taken; the open one is left for a later batch), and again from the
batch's recorded start and end when Spark replays it, which yields the very
same files. That is what makes a restarted job rewrite a file under the same
name instead of capturing its events twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import NamedTuple, Sequence

logger = logging.getLogger(__name__)

DEFAULT_INTERVAL_SECONDS = 300
DEFAULT_SIZE_LIMIT_BYTES = 314_572_800  # Event Hubs' templates; the service default is unpublished


@dataclass(frozen=True)
class WindowPolicy:
    """Time window (whole seconds), size window (bytes) and the empty-file rule.

    Event Hubs allows 60-900 s and 10-500 MB; the Event Hubs config model
    enforces that. Here any interval of a second or more and any positive size
    is accepted, so tests and demos need not wait minutes.
    """

    interval_ms: int = DEFAULT_INTERVAL_SECONDS * 1000
    size_limit_bytes: int = DEFAULT_SIZE_LIMIT_BYTES
    skip_empty: bool = False

    def __post_init__(self) -> None:
        if self.interval_ms < 1000 or self.interval_ms % 1000:
            raise ValueError(f"capture interval {self.interval_ms} ms is invalid: use a whole number of seconds >= 1")
        if self.size_limit_bytes < 1:
            raise ValueError(f"capture size limit {self.size_limit_bytes} is invalid: use a positive number of bytes")

    def window_of(self, ms: int) -> int:
        return ms // self.interval_ms * self.interval_ms


class BatchRef(NamedTuple):
    """What planning needs of a data batch."""

    base_offset: int
    next_offset: int
    append_time_ms: int
    size: int


class PlannedFile(NamedTuple):
    """One capture file: the data batches holding offsets in
    [first_offset, end_offset) (control and aborted batches in the range are
    not events), named after ``name_ms``."""

    name_ms: int
    window_start: int
    first_offset: int
    end_offset: int
    batches: int
    size: int

    @property
    def empty(self) -> bool:
        return self.batches == 0


@dataclass(frozen=True)
class WindowState:
    """Where capture of a partition stands; JSON-able (it is part of the
    Spark source's offsets)."""

    next_offset: int
    window_start: int = -1  # first window not yet closed (ms); -1: none yet
    last_name_ms: int = -1  # name time of the last file (names only increase)
    window_has_file: bool = False  # the window at window_start already has a file (forced close)

    def to_json(self) -> dict:
        return {"next": self.next_offset, "window": self.window_start, "named": self.last_name_ms,
                "filed": self.window_has_file}

    @classmethod
    def from_json(cls, data: dict) -> WindowState:
        return cls(int(data["next"]), int(data.get("window", -1)), int(data.get("named", -1)),
                   bool(data.get("filed", False)))


def plan(
    state: WindowState,
    batches: Sequence[BatchRef],
    end_offset: int,
    policy: WindowPolicy,
    *,
    close_before: int,
    close_file: bool,
) -> tuple[list[PlannedFile], WindowState]:
    """The files that ``batches`` (the data batches in [state.next_offset,
    end_offset), in order) complete, and the state after them.

    Windows that ended by ``close_before`` are closed (the caller passes "now"
    less a grace period, or a replayed batch's end window start);
    ``close_file`` also closes the file in progress (``--once``, replay).
    Batches of a file still open are not planned: the returned state's
    ``next_offset`` is that file's first offset, to be planned again later.
    """
    interval, limit = policy.interval_ms, policy.size_limit_bytes
    close_before = policy.window_of(close_before)
    files: list[PlannedFile] = []
    nxt, win, named, filed = state.next_offset, state.window_start, state.last_name_ms, state.window_has_file
    cur: list | None = None  # [name, window, first offset, batches, size]
    snapshot = state

    def name_for(natural: int) -> int:
        natural -= natural % 1000
        return natural if named < 0 else max(natural, named + 1000)

    def close_cur(end: int) -> None:
        nonlocal cur, named, filed, nxt
        files.append(PlannedFile(cur[0], cur[1], cur[2], end, cur[3], cur[4]))
        named, filed, nxt, cur = cur[0], True, end, None

    def close_window(end: int) -> None:
        nonlocal win, filed, named
        if cur is not None:
            close_cur(end)
        elif not filed and not policy.skip_empty:
            name = name_for(win)
            files.append(PlannedFile(name, win, nxt, nxt, 0, 0))
            named = name
        win += interval
        filed = False

    def close_windows_before(limit_ms: int, end: int) -> None:
        nonlocal win, filed
        while win < limit_ms:
            if policy.skip_empty and cur is None:
                # Nothing to write before limit_ms: jump rather than walk window by window.
                win = max(win + interval, policy.window_of(limit_ms))
                filed = False
                continue
            close_window(end)

    for b in batches:
        w = policy.window_of(b.append_time_ms)
        if win < 0:
            win = w
        if w > win:
            close_windows_before(w, b.base_offset)
        # w < win: enqueued before a window already closed (seen late, e.g. behind an open
        # transaction): it joins the window in progress.
        if cur is not None and cur[4] + b.size > limit:
            close_cur(b.base_offset)
        if cur is None:
            snapshot = WindowState(nxt, win, named, filed)
            cur = [name_for(b.append_time_ms if filed else win), win, nxt, 0, 0]
        cur[3] += 1
        cur[4] += b.size
    if win < 0:
        win = close_before  # an idle partition: its windows start now
    close_windows_before(close_before, end_offset)
    if cur is not None and close_file:
        close_cur(end_offset)
    if cur is not None:
        return files, snapshot
    return files, WindowState(max(nxt, end_offset), win, named, filed)
