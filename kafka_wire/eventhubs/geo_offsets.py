"""Event offsets on a geo-replicated namespace: ``SEGMENT:POSITION`` strings.

With geo-replication the service's offsets name the replication segment an
event was written in (the segment grows by one at each promotion) as well as a
position, because a plain byte offset means nothing on another region's copy.
The SDKs carry the string opaquely: Java's ``EventPosition.fromOffsetString``
writes ``amqp.annotation.x-opt-offset > '10:0030'`` and positions by sequence
number as ``x-opt-sequence-number > '19:2506'`` (segment ``-1``: any), the
.NET SDK's ``EventData.Offset`` (a long) throws on it and ``OffsetString``
holds it. The position part here is the event's sequence number, which every
replica shares. An offset whose segment is not in this replica's history, or
whose event that history lost (a forced promotion), is refused with
:data:`INVALID_OFFSET`, the condition the SDKs recognise (Go's
``ErrCondGeoReplicationOffset``, .NET's ``InvalidGeolocationOffset``).
"""
from __future__ import annotations

import re
from bisect import bisect_right
from typing import NamedTuple, Sequence

__all__ = ["GeoOffset", "OffsetSyntaxError", "StaleOffset", "INVALID_OFFSET", "format_offset",
           "parse_offset", "parse_sequence", "is_legacy", "refusal", "segment_of", "check"]

INVALID_OFFSET = "com.microsoft:georeplication:invalid-offset"
MAX_CHARS = 64            # an offset is two longs and a colon; more is not one
_LONG = 2 ** 63 - 1
_GEO = re.compile(r"(-1|0|[1-9][0-9]{0,18}):([0-9]{1,19})")
_LEGACY = re.compile(r"-?[0-9]{1,19}")


class OffsetSyntaxError(ValueError):
    """Text that is not an offset at all; the message is for the client."""


class StaleOffset(ValueError):
    """A well-formed offset this replica's history does not hold; the message
    is the description sent with :data:`INVALID_OFFSET`."""


class GeoOffset(NamedTuple):
    segment: int     # -1: whichever segment holds the position
    position: int    # the event's sequence number


def format_offset(segment: int, position: int) -> str:
    return f"{segment}:{position}"


def is_legacy(text: str) -> bool:
    """A plain (pre-geo-replication) offset: an integer."""
    return len(text) <= 20 and _LEGACY.fullmatch(text) is not None


def parse_offset(text: str) -> GeoOffset:
    """``SEGMENT:POSITION`` (ASCII digits, both at most a long); anything else
    raises :class:`OffsetSyntaxError` saying what an offset looks like."""
    if not isinstance(text, str):
        raise OffsetSyntaxError(f"an offset is a string, not {type(text).__name__}")
    m = _GEO.fullmatch(text) if len(text) <= MAX_CHARS else None
    if m is None or int(m.group(1)) > _LONG or int(m.group(2)) > _LONG:
        shown = text if len(text) <= MAX_CHARS else text[:MAX_CHARS] + "..."
        raise OffsetSyntaxError(f"offset {shown!r} is not SEGMENT:POSITION (two non-negative "
                                "integers below 2^63 joined by a colon; segment -1 for any)")
    return GeoOffset(int(m.group(1)), int(m.group(2)))


def parse_sequence(text: str) -> GeoOffset:
    """A sequence-number filter value: ``N`` or ``SEGMENT:N`` (Java writes the
    segment, ``-1`` when it has none)."""
    if isinstance(text, str) and ":" not in text and len(text) <= 20 and _LEGACY.fullmatch(text):
        return GeoOffset(-1, int(text))
    return parse_offset(text)


def refusal(text: str, why: str) -> str:
    """The description sent with :data:`INVALID_OFFSET`: the service's words for a
    bad offset ("The supplied offset '...' is invalid"), then why."""
    shown = text if len(text) <= MAX_CHARS else text[:MAX_CHARS] + "..."
    return f"The supplied offset '{shown}' is invalid: {why}"


def segment_of(starts: Sequence[tuple[int, int]], sequence: int) -> int:
    """The segment an event was written in, from ``starts``: (segment, first
    sequence number) in order of segment."""
    i = bisect_right([first for _, first in starts], sequence) - 1
    return starts[max(i, 0)][0]


def check(starts: Sequence[tuple[int, int]], offset: GeoOffset, end: int) -> int:
    """The sequence number ``offset`` names, if this replica's history holds it.

    ``starts``: this partition's segments (segment, first sequence number) in
    order; ``end``: the partition's next sequence number. A segment not in the
    list, or a position past the end of a segment that a promotion closed (the
    events a forced promotion lost), raises :class:`StaleOffset`.
    """
    segment, position = offset
    if segment == -1:  # no segment named: a plain sequence number, clamped by the caller
        return position
    for i, (seg, first) in enumerate(starts):
        if seg != segment:
            continue
        closed = starts[i + 1][1] if i + 1 < len(starts) else None
        if position < first:
            raise StaleOffset(f"offset {format_offset(segment, position)} is before replication "
                              f"segment {segment}, which begins at sequence number {first}")
        if closed is not None and position >= closed:
            raise StaleOffset(f"offset {format_offset(segment, position)} is not in this "
                              f"namespace's history: replication segment {segment} ended at "
                              f"sequence number {closed - 1} when segment {starts[i + 1][0]} "
                              f"began (a promotion lost the events after it)")
        if closed is None and position > end:
            raise StaleOffset(f"offset {format_offset(segment, position)} is beyond the last "
                              f"event ({end - 1})")
        return position
    known = ", ".join(str(s) for s, _ in starts) or "none"
    raise StaleOffset(f"offset {format_offset(segment, position)} names replication segment "
                      f"{segment}, which this namespace's history does not hold (segments: {known})")
