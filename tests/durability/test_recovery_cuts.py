"""Recovery after a power loss, file by file: a partition log is written (with
rolls), its directory is photographed after every write (each append, each
roll flush), and then every file independently goes back to one of those
write boundaries: what a power loss leaves when each file reached the disk
up to a different point. Optionally the rest of the file's length reads as
zeros (a size that reached the disk before the data). Reopening must give the
longest valid prefix of what was written, as Kafka's recovery does: every
batch whose bytes survived in its segment, up to the first one that did not,
and nothing after it; the indexes agree; and the log takes appends again.

Files fsynced (sealed segments below the recovery point) keep their state, as
a power loss keeps them. Seeded by hypothesis (``--hypothesis-seed``).
"""
from __future__ import annotations

import shutil
from pathlib import Path

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from kafka_wire.log import batch as rb
from kafka_wire.log.config import LogConfig
from kafka_wire.log.partition_log import PartitionLog
from kafka_wire.log.recovery import read_recovery_point
from tests.unit.log.log_helpers import make_batch

CONFIG = LogConfig(segment_bytes=600, message_timestamp_type="CreateTime")
NOW = 1_700_000_000_000


def _photo(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}


def _batches(plog: PartitionLog) -> list[bytes]:
    """Every stored batch from the log start, with its offsets checked contiguous."""
    out, offset = [], plog.log_start_offset
    while offset < plog.log_end_offset:
        view = plog.read(offset, 1 << 20)
        assert len(view), f"nothing readable at {offset} below the log end {plog.log_end_offset}"
        pos = 0
        while pos < len(view):
            header = rb.parse_header(view, pos)
            assert header.base_offset == offset, "a hole in the recovered log"
            out.append(bytes(view[pos + 21:pos + header.size]))  # from the attributes on: offsets aside
            offset = header.next_offset
            pos += header.size
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.tuples(st.integers(1, 4), st.integers(5, 120)), min_size=1, max_size=14),
       data=st.data())
def test_recovery_keeps_the_longest_valid_prefix_whatever_each_file_kept(tmp_path_factory, sizes, data):
    root = tmp_path_factory.mktemp("cuts")
    directory = root / "t-0"
    plog = PartitionLog(directory, CONFIG, now_ms=NOW)
    photos = [_photo(directory)]
    for n, (records, size) in enumerate(sizes):
        plog.append(make_batch(records, value_size=size, ts=NOW + n, tag=n), now_ms=NOW + n)
        photos.append(_photo(directory))
        if data.draw(st.booleans(), label="flusher pass"):
            plog.flush_rolled()  # the log flusher's pass: rolled segments fsynced, the recovery point moves
            photos.append(_photo(directory))
    expected_all = _batches(plog)
    rp = read_recovery_point(directory)
    final = _photo(directory)
    plog.abandon()  # the power goes

    # Each file: the state it had at some write boundary (never fsynced files only; sealed
    # segments below the recovery point were fsynced and keep their final state).
    shutil.rmtree(directory)
    directory.mkdir()
    for name, content in sorted(final.items()):
        base = int(name.split(".")[0]) if name[0].isdigit() else None
        if name == "recovery-point" or (base is not None and base < rp and _segment_end(final, base) <= rp):
            (directory / name).write_bytes(content)
            continue
        states = [p[name] for p in photos if name in p] or [content]
        kept = data.draw(st.sampled_from(states), label=f"{name} kept")
        if data.draw(st.booleans(), label=f"{name} zero tail") and len(kept) < len(content):
            kept = kept + bytes(len(content) - len(kept))
        (directory / name).write_bytes(kept)

    longest = _longest_prefix(directory)
    reopened = PartitionLog(directory, CONFIG, now_ms=NOW + 100)
    got = _batches(reopened)
    # A prefix of what was written, and the longest one the .log files allow.
    assert got == expected_all[:len(got)], "recovery kept batches that are not a prefix of the log"
    assert len(got) == longest, "recovery dropped valid batches"
    event("all kept" if len(got) == len(expected_all) else "cut back")
    event(f"{len(list(directory.glob('*.log')))} segments left of {sum(1 for n in final if n.endswith('.log'))}")
    # The indexes agree with the log: every batch is found by its offset.
    for offset in range(reopened.log_start_offset, reopened.log_end_offset):
        assert reopened.batch_position(offset) is not None
    end = reopened.log_end_offset
    info = reopened.append(make_batch(1, tag=99), now_ms=NOW + 200)
    assert info.base_offset == end
    reopened.close()
    again = PartitionLog(directory, CONFIG, now_ms=NOW + 300)
    assert _batches(again)[:len(got)] == got and again.log_end_offset == end + 1
    again.close()


def _segment_end(files: dict[str, bytes], base: int) -> int:
    """The next segment's base offset (where this one ends), or a large number for the last."""
    bases = sorted(int(n[:20]) for n in files if n.endswith(".log"))
    later = [b for b in bases if b > base]
    return later[0] if later else 1 << 62


def _longest_prefix(directory: Path) -> int:
    """Batches recoverable from the .log files as they were left (before reopening):
    in segment order, every whole valid batch, up to the first segment whose valid
    batches stop short of the next segment's base offset (it lost its end)."""
    bases = sorted(int(p.name[:20]) for p in directory.glob("*.log"))
    count = 0
    for i, base in enumerate(bases):
        buf = (directory / f"{base:020d}.log").read_bytes()
        found, _ = rb.scan_stored_batches(buf, 0, len(buf), base)
        count += len(found)
        end = found[-1][1].next_offset if found else base
        if i + 1 < len(bases) and end != bases[i + 1]:
            break
    return count
