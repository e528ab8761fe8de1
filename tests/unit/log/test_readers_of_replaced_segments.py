"""Lock-free readers of segments whose files are replaced, cut or deleted under them.

Reads take no lock: a reader works on the segment list it took, which the cleaner's swap
(on its own thread), truncation and retention replace while it reads. A segment maps its
files by path on first read, so a segment never read since it was loaded must not map a
file renamed over its name since: that file may be shorter, and touching a page past its
end kills the whole broker with SIGBUS. Each racing step runs in a child process, in a
fixed interleaving (a hook between the swap's renames and the segment list's
replacement), and the test asserts the child's exit status.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kafka_wire.log.config import LogConfig
from kafka_wire.log.errors import StorageError
from kafka_wire.log.manager import LogManager
from kafka_wire.log import mapping

from .log_helpers import keyed_batch, read_all

ROOT = Path(__file__).resolve().parents[3]
SIGBUS_EXIT = -7

_PRELUDE = """
import sys, tempfile
from pathlib import Path
from kafka_wire.log import partition_log
from kafka_wire.log.cleaner import LogCleaner
from kafka_wire.log.config import LogConfig
from kafka_wire.log.manager import LogManager
from tests.unit.log.log_helpers import keyed_batch, read_all

DAY = 86400000
now = [10 * DAY]
path = Path(sys.argv[1])

def manager():
    return LogManager(path, LogConfig(), clock=lambda: now[0])

def put(log, key, value):
    log.append(keyed_batch([(key, value)], ts=now[0]), now_ms=now[0])
    now[0] += 1
"""


def run_child(code: str, directory: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``code`` (after the prelude) in a child; a SIGBUS there is its exit status, not ours."""
    return subprocess.run([sys.executable, "-c", _PRELUDE + textwrap.dedent(code), str(directory), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def assert_clean_exit(out: subprocess.CompletedProcess) -> None:
    assert out.returncode != SIGBUS_EXIT, f"killed by SIGBUS: {out.stdout[-1500:]}"
    assert out.returncode == 0, out.stdout[-1500:] + out.stderr[-3000:]


_SWAP = """
m = manager()
m.create_topic("t", 1, {"cleanup.policy": "compact", "segment.bytes": str(64 << 10),
                        "message.timestamp.type": "CreateTime"})
log = m.get_log("t", 0)
for i in range(600):  # 4 keys, ~330-byte batches: 3 full sealed segments compact to a few records
    put(log, b"k%d" % (i % 4), b"v" * 300)
log.roll()
put(log, b"x", b"y")
last_batches = {seg.base_offset: bytes(log.read(seg.next_offset - 1, 1 << 20)) for seg in log.segments[:-1]}
m.close()
m = manager()  # a restart: the segments are loaded, then unmapped until first read
log = m.get_log("t", 0)
held = log.segments  # what a lock-free reader (PartitionLog.read) took before the swap
assert len(held) >= 4 and all(seg._mapped is None for seg in held[:-1])
seen = []
real_swap = partition_log.swap_segments

def swap_then_read(directory, groups):
    real_swap(directory, groups)  # renamed and unlinked; the log still lists the old segments
    for seg in held[:-1]:  # the end of each: past the end of the shorter file now at its name
        last = seg.next_offset - 1
        assert bytes(seg.read(last, 1 << 20, last + 1, True)) == last_batches[seg.base_offset], seg
        seen.append(seg.base_offset)

partition_log.swap_segments = swap_then_read
result = LogCleaner(m).clean_now("t", 0, now_ms=now[0])
assert result is not None and result.bytes_after < result.bytes_before / 10, result
assert len(seen) == len(held) - 1, seen
print("read the old segments during the swap:", seen)
"""


def test_a_reader_holding_the_old_segments_reads_them_during_the_compaction_swap(tmp_path):
    assert_clean_exit(run_child(_SWAP, tmp_path))


_START_OVER = """
m = manager()
m.create_topic("t", 1, {"preallocate": "false"})  # files grow as written: a new one is empty
log = m.get_log("t", 0)
for i in range(300):
    put(log, b"k%d" % i, b"v" * 300)
before = read_all(log)
m.close()
m = manager()
log = m.get_log("t", 0)
held = log._segments  # taken by a lock-free reader; none of them mapped yet
log.truncate_fully_and_start_at(held[0].base_offset)  # new files at the first segment's names
put(log, b"new", b"n")
got = b"".join(bytes(seg.read(seg.base_offset, 1 << 24, seg.next_offset, True)) for seg in held)
assert got == before, (len(got), len(before))
print("the old segments read whole after the log started over at their base offset")
"""


def test_a_reader_holding_segments_of_a_log_started_over_at_their_base_offset_reads_them(tmp_path):
    assert_clean_exit(run_child(_START_OVER, tmp_path))


def test_segments_deleted_by_retention_stay_readable_by_readers_holding_them(tmp_path):
    now = [10**12]
    m = LogManager(tmp_path, LogConfig(), clock=lambda: now[0])
    m.create_topic("t", 1, {"segment.bytes": "4096", "retention.ms": "1000"})
    log = m.get_log("t", 0)
    for i in range(60):
        log.append(keyed_batch([(b"k", b"v" * 200)], ts=now[0]), now_ms=now[0])
    before = read_all(log)
    m.close()
    m = LogManager(tmp_path, LogConfig(), clock=lambda: now[0])
    log = m.get_log("t", 0)
    held = log.segments
    log.append(keyed_batch([(b"k", b"late")], ts=now[0] + 5000), now_ms=now[0] + 5000)
    assert log.enforce_retention(now[0] + 5000) == len(held)
    assert not (tmp_path / "t-0" / held[0].log_path.name).exists()
    got = b"".join(bytes(seg.read(seg.base_offset, 1 << 24, seg.next_offset, True)) for seg in held)
    assert got == before
    m.close()


def test_a_map_is_never_made_past_the_end_of_its_file_or_of_another_file(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10_000)
    opened = mapping.file_id(os.stat(path))
    assert bytes(mapping.map_read_only(path, None, 10_000, opened)[-3:]) == b"xxx"
    os.truncate(path, 100)
    with pytest.raises(StorageError, match="shorter than the 10000 bytes"):
        mapping.map_read_only(path, None, 10_000, opened)
    other = tmp_path / "g"
    other.write_bytes(b"y" * 20_000)
    os.replace(other, path)  # longer, but not the file the caller opened
    with pytest.raises(StorageError, match="replaced"):
        mapping.map_read_only(path, None, 10_000, opened)


_REPLACED_UNDER_A_SEGMENT = """
import os
from kafka_wire.log.errors import StorageError
m = manager()
m.create_topic("t", 1, {})
log = m.get_log("t", 0)
for i in range(200):
    put(log, b"k", b"v" * 300)
log.roll()
put(log, b"x", b"y")
m.close()
m = manager()
log = m.get_log("t", 0)
seg = log.segments[0]  # loaded, not mapped
name = seg.log_path
os.link(name, path / "kept")  # the old file stays: its inode number is not reused by the new ones
for length in (100, 10 * seg.size):  # shorter (SIGBUS if mapped at the old length), longer (other bytes)
    name.with_suffix(".tmp").write_bytes(b"\\0" * length)
    Path(name.with_suffix(".tmp")).replace(name)
    try:
        seg.read(seg.next_offset - 1, 1 << 20, seg.next_offset, True)
    except StorageError as exc:
        print("refused:", exc)
    else:
        raise AssertionError("read a file renamed over the segment's")
"""


def test_a_segment_never_maps_a_file_renamed_over_its_own(tmp_path):
    out = run_child(_REPLACED_UNDER_A_SEGMENT, tmp_path)
    assert_clean_exit(out)
    assert out.stdout.count("refused:") == 2


_MANY_SEGMENTS = """
import os, resource
m = manager()
m.create_topic("t", 1, {"cleanup.policy": "compact", "segment.bytes": "100",
                        "message.timestamp.type": "CreateTime"})
log = m.get_log("t", 0)
for i in range(int(sys.argv[2])):  # one batch a segment
    put(log, b"k%d" % (i % 7), b"v%d" % i)
log.roll()
m.close()
m = manager()
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
limit = len(os.listdir("/proc/self/fd")) + int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))  # a few descriptors to spare, no more
result = LogCleaner(m).clean_now("t", 0, now_ms=now[0])
assert result is not None and result.segments_before == int(sys.argv[2]), result
assert result.records_removed == int(sys.argv[2]) - 7, result
print("compacted", result.segments_before, "segments with", sys.argv[3], "descriptors to spare")
"""


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_compaction_of_a_backlog_of_segments_needs_a_handful_of_descriptors(tmp_path):
    # Each source segment used to hold a descriptor (an mmap.mmap's dup) for the whole cleaning.
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[1] == resource.RLIM_INFINITY or \
        resource.getrlimit(resource.RLIMIT_NOFILE)[1] > 64
    assert_clean_exit(run_child(_MANY_SEGMENTS, tmp_path, "400", "16"))
