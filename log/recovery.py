"""Opening a partition directory: find its segments and recover them.

After a clean shutdown (marker present) every segment is trusted once cheap
sanity checks of its indexes pass. After an unclean one, the active (last)
segment is re-validated batch by batch (header, CRC-32C, increasing offsets)
and cut at the first torn or corrupt batch; every sealed segment at or above
the recovery point (not yet known to be fsynced) has its indexes checked and
every batch's CRC verified too (a power loss may keep a file's length and
lose its data: zeros, or a torn page), and is rebuilt and cut where that
fails. Any
segment with missing or damaged indexes is rebuilt from its log. A segment
that loses bytes in the middle of the log (junk, or zeros that leave it short
of the next segment) takes every later segment with it: the log is always
the longest valid prefix, as Kafka's recovery leaves it.

Compaction replaces segments in two phases (``swap_segments``): the cleaned
files are written as ``*.cleaned`` and fsynced, then a ``cleaner-swap``
marker naming the groups (new base offset, old base offsets) is written
atomically; that is the commit point. Then the old segments' files are
removed and the cleaned ones renamed into place, ``.log`` last. Opening a
directory first rolls a committed swap forward and deletes the ``*.cleaned``
files of an uncommitted one, so a crash leaves either the old segments or the
new ones. A cleaned segment's ``.positions`` (the Event Hubs positions its
batches had before) is one of those files; if it is later lost or damaged the
segment's positions fall back to its file positions, with a warning.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import uuid
from pathlib import Path

from .config import LogConfig
from .segment import LOG_SUFFIX, SUFFIXES, LogSegment, segment_path

logger = logging.getLogger(__name__)

CLEAN_SHUTDOWN_FILE = "clean-shutdown"
LOG_START_OFFSET_FILE = "log-start-offset"
# Kafka's recovery point: the offset below which the log was fsynced (written
# after a rolled segment's background fsync). After an unclean shutdown a
# segment at or above it that stops short of the next one lost its end.
RECOVERY_POINT_FILE = "recovery-point"
# "<base offset> <byte position>" of the first segment, rewritten whenever
# deletion changes which segment is first: Event Hubs byte offsets survive
# losing every .batches file of a partition.
POSITION_ANCHOR_FILE = "first-segment-position"
SWAP_FILE = "cleaner-swap"
CLEANED_SUFFIX = ".cleaned"
_SEGMENT_NAME = re.compile(r"^(\d{20})\.(log|index|timeindex|batches|txnindex|positions)$")
FULLY_CHECKED_SEGMENTS = 2  # the active one and the one a crash during roll may leave untrimmed


def load_segments(directory: Path, config: LogConfig) -> tuple[list[LogSegment], int]:
    """Open (and recover) the segments of ``directory``; returns them, the last
    one active, and the log start offset."""
    with os.scandir(directory) as entries:
        empty = next(entries, None) is None
    if empty:
        # A new partition's first use: nothing to read or recover (no marker, start offset,
        # recovery point or swap), which spares the six failed opens of the path below.
        return [LogSegment.create(directory, 0, 0, config, stale=False)], 0
    marker = directory / CLEAN_SHUTDOWN_FILE
    clean = marker.exists()
    if clean:
        marker.unlink()  # from now on a crash is an unclean shutdown
        fsync_dir(directory)  # ... a power loss too: the marker must not come back
    persisted_start = read_log_start_offset(directory)
    recovery_point = read_recovery_point(directory)
    # A recovery point is kept once the broker's log flusher has fsynced a rolled segment
    # (or recovery did); without one (a log written without the flusher, or by an older
    # kafka-wire) gaps between segments are trusted, as before.
    recovery_point_known = (directory / RECOVERY_POINT_FILE).exists()
    complete_swap(directory)
    bases = _scan_directory(directory)

    segments: list[LogSegment] = []
    for n, base in enumerate(bases):
        last = n == len(bases) - 1
        full = not clean and n >= len(bases) - FULLY_CHECKED_SEGMENTS
        # Sealed segments wholly below the recovery point were fsynced: their indexes are
        # checked, their batches are not re-read (Kafka recovers from the recovery point on).
        flushed = not last and bases[n + 1] <= recovery_point
        seg = LogSegment.load(directory, base, config, recover=last and not clean, full_check=full,
                              verify=not clean and not last and not flushed)
        if segments and seg.base_offset < segments[-1].next_offset:
            logger.warning(
                "%s: segment %d overlaps the previous one (which ends at %d); dropping it and later segments",
                directory, base, segments[-1].next_offset,
            )
            _delete_from(directory, config, bases[n:], seg)
            break
        segments.append(seg)
        # A segment that lost its tail takes every later one with it: the log is its longest
        # valid prefix, never one with a hole. Zeros count when the segment then stops short
        # of the next one (a power loss kept the file's length but not its data); zeros that
        # reach the next segment are the untrimmed tail of a roll a crash interrupted.
        # A segment recovery cut (or whose batches it lost), or one not yet fsynced that had
        # to be rebuilt, that now stops short of the next one lost its end: a gap the cleaner
        # made is kept, a gap after zeros is not.
        gap = not last and seg.next_offset != bases[n + 1]
        unflushed = not clean and seg.base_offset >= recovery_point and seg.recovered
        # A gap at or above the recovery point: the segments after this one were never known to
        # be on disk, and one of them is gone (its files lost), or this one lost its end. The
        # cleaner makes gaps only below the recovery point (PartitionLog.compaction_view).
        past_point = not clean and recovery_point_known and seg.next_offset >= recovery_point
        if not last and (seg.dropped_bytes or (gap and (seg.cut_bytes or seg.lost_batches or unflushed
                                                        or past_point))):
            logger.warning("%s: dropping the segments after %d, which lost its tail (it ends at offset %d, "
                           "the next segment starts at %d)", directory, base, seg.next_offset, bases[n + 1])
            _delete_from(directory, config, bases[n + 1 :])
            break

    if not clean and segments and segments[0].base_offset > persisted_start and segments[0].positions is None:
        # The first segments' files are gone (a power loss before they reached the disk): what
        # is left does not start where the log does, so it is no prefix of it.
        logger.warning("%s: the log starts at %d but its first segment at %d (the ones before were lost); "
                       "dropping the %d segments left and starting empty at %d", directory, persisted_start,
                       segments[0].base_offset, len(segments), persisted_start)
        for seg in segments:
            seg.delete()
        segments = []
    _fix_base_positions(segments, read_position_anchor(directory))
    # Segments wholly below the log start offset were about to be deleted when we stopped.
    while len(segments) > 1 and segments[0].next_offset <= persisted_start and segments[0].base_offset < persisted_start:
        segments.pop(0).delete()
    if not segments:
        # Without a .log in the directory there is no segment file left either: the scan
        # removed index files whose .log is gone, and deleting a segment removes them all.
        segments.append(LogSegment.create(directory, persisted_start, 0, config, stale=bool(bases)))
    elif persisted_start > segments[-1].next_offset:
        logger.warning(
            "%s: log start offset %d is past the end of the log (%d); starting empty there",
            directory, persisted_start, segments[-1].next_offset,
        )
        position = segments[-1].end_position
        for seg in segments:
            seg.delete()
        segments = [LogSegment.create(directory, persisted_start, position, config)]
    last = segments[-1]
    if last.positions is not None:
        # A compacted segment left last (a crash during truncation, later segments lost) takes no appends.
        if last.active:
            last.seal()
        segments.append(LogSegment.create(directory, last.next_offset, last.end_position, config))
    elif not last.active:
        last.open_for_append()
    lower_recovery_point(directory, segments[-1].next_offset)
    if not clean:
        # What survived an unclean shutdown may be only in the page cache (a process crash) or
        # was just rebuilt: fsync the sealed segments at or above the recovery point before the
        # recovery point passes them, so everything below it is on disk, whatever came before.
        sealed = [seg for seg in segments[:-1] if seg.next_offset > read_recovery_point(directory)]
        for seg in sealed:
            seg.flush()
        if sealed:
            fsync_dir(directory)
            write_recovery_point(directory, sealed[-1].next_offset)
    return segments, max(persisted_start, segments[0].base_offset)


def _delete_from(directory: Path, config: LogConfig, bases: list[int], opened: LogSegment | None = None) -> None:
    for base in bases:
        seg = opened if opened is not None and opened.base_offset == base else LogSegment(directory, base, config)
        seg.delete()


def _scan_directory(directory: Path) -> list[int]:
    """Base offsets of the segments; removes leftovers of interrupted writes."""
    bases, orphans = set(), {}
    for path in directory.iterdir():
        name = path.name
        if name.endswith((".tmp", ".deleted", CLEANED_SUFFIX)):
            logger.info("removing leftover %s", path)
            path.unlink(missing_ok=True)
            continue
        m = _SEGMENT_NAME.match(name)
        if not m:
            continue
        if m.group(2) == LOG_SUFFIX[1:]:
            bases.add(int(m.group(1)))
        else:
            orphans.setdefault(int(m.group(1)), []).append(path)
    for base, paths in orphans.items():
        if base not in bases:
            for path in paths:  # indexes whose .log is gone
                path.unlink(missing_ok=True)
    return sorted(bases)


def _fix_base_positions(segments: list[LogSegment], anchor: tuple[int, int] | None = None) -> None:
    """A segment whose .batches header was lost takes its Event Hubs base
    position from its neighbours, or from the partition's position anchor,
    so byte offsets never move."""
    for i, seg in enumerate(segments):
        if seg.base_position_known:
            continue
        if i > 0:
            value = segments[i - 1].end_position
        else:
            later = next((j for j in range(1, len(segments)) if segments[j].base_position_known), None)
            anchored = None
            if anchor is not None:
                anchored = next((j for j, s in enumerate(segments) if s.base_offset == anchor[0]), None)
            if later is not None:
                value = max(0, segments[later].base_position - sum(s.size for s in segments[:later]))
            elif anchored is not None:
                value = max(0, anchor[1] - sum(s.size for s in segments[:anchored]))
            else:
                value = 0
                if seg.base_offset > 0:
                    logger.warning("%s: no segment knows its byte position; Event Hubs offsets restart at 0",
                                   seg.log_path)
        seg.set_base_position(value)


def read_position_anchor(directory: Path) -> tuple[int, int] | None:
    try:
        base, position = (int(v) for v in (directory / POSITION_ANCHOR_FILE).read_text().split())
    except (FileNotFoundError, ValueError):
        return None
    return (base, position) if base >= 0 and position >= 0 else None


def write_position_anchor(directory: Path, base_offset: int, position: int) -> None:
    write_atomic(directory / POSITION_ANCHOR_FILE, f"{base_offset} {position}\n".encode())


def read_recovery_point(directory: Path) -> int:
    """The offset below which the log was fsynced (0 when unknown)."""
    try:
        return max(0, int((directory / RECOVERY_POINT_FILE).read_text().strip()))
    except (FileNotFoundError, ValueError):
        return 0


def recovery_point_known(directory: Path) -> bool:
    return (directory / RECOVERY_POINT_FILE).exists()


def write_recovery_point(directory: Path, offset: int) -> None:
    if offset > read_recovery_point(directory):
        write_atomic(directory / RECOVERY_POINT_FILE, f"{offset}\n".encode())


def lower_recovery_point(directory: Path, log_end_offset: int) -> None:
    """After truncation: the recovery point is never past the log end."""
    if read_recovery_point(directory) > log_end_offset:
        write_atomic(directory / RECOVERY_POINT_FILE, f"{log_end_offset}\n".encode())


def read_log_start_offset(directory: Path) -> int:
    path = directory / LOG_START_OFFSET_FILE
    try:
        return max(0, int(path.read_text().strip()))
    except FileNotFoundError:
        return 0
    except ValueError:
        logger.warning("%s is unreadable; using the first segment's base offset", path)
        return 0


def write_atomic(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write via tmp + fsync + rename (+ directory fsync): readers see the old
    file or the new one, never a torn one. Without ``durable`` there is no
    fsync: after a power loss the file may be old, empty or torn (callers
    check a CRC), but a process crash still sees old or new."""
    tmp = path.with_name(f".{uuid.uuid4().hex[:8]}.tmp")  # short: a topic name may be 249 chars
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk must not also keep the half-written copy
        raise
    if durable:
        fsync_dir(path.parent)


# -- compaction's segment swap -------------------------------------------------


def swap_segments(directory: Path, groups: list[tuple[int, list[int]]]) -> None:
    """Replace segments by their cleaned versions. ``groups`` pairs each new
    base offset (whose ``*.cleaned`` files are written and fsynced, every
    suffix present) with the base offsets of the segments it replaces."""
    write_atomic(directory / SWAP_FILE, json.dumps({"groups": groups}).encode())
    _roll_swap_forward(directory, groups)


def complete_swap(directory: Path) -> None:
    """Finish a swap interrupted by a crash, or forget an uncommitted one."""
    marker = directory / SWAP_FILE
    try:
        groups = [(int(new), [int(b) for b in old]) for new, old in json.loads(marker.read_bytes())["groups"]]
    except FileNotFoundError:
        return
    except (ValueError, KeyError, TypeError) as exc:
        logger.error("%s is unreadable (%s): keeping the segments as they are", marker, exc)
        marker.unlink()
        return
    logger.warning("%s: completing a compaction swap interrupted by a crash", directory)
    _roll_swap_forward(directory, groups)


def _roll_swap_forward(directory: Path, groups: list[tuple[int, list[int]]]) -> None:
    """Idempotent: each step can be repeated after a crash part way."""
    for new_base, old_bases in groups:
        if not segment_path(directory, new_base, LOG_SUFFIX + CLEANED_SUFFIX).exists():
            continue  # done: the .log is renamed last
        for base in old_bases:
            if base != new_base:
                for suffix in SUFFIXES:
                    segment_path(directory, base, suffix).unlink(missing_ok=True)
        for suffix in SUFFIXES[1:] + (LOG_SUFFIX,):
            src = segment_path(directory, new_base, suffix + CLEANED_SUFFIX)
            dst = segment_path(directory, new_base, suffix)
            if src.exists():  # else renamed before the crash: every suffix is written, even empty
                os.replace(src, dst)
    fsync_dir(directory)
    (directory / SWAP_FILE).unlink(missing_ok=True)
    fsync_dir(directory)


def fsync_dir(directory: Path) -> None:
    """Make a create, rename or delete in ``directory`` durable. Platforms and
    file systems that cannot fsync a directory (Windows, some network mounts)
    are skipped; a real I/O error is raised."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except (PermissionError, IsADirectoryError):  # no directory handles here (Windows)
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EBADF, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)
