"""Power loss at the file boundary, for tests: what survives is what was fsynced.

Inside the broker process (``install``), the os-level calls that change or
sync files are wrapped: ``os.pwrite``/``os.write``/``os.ftruncate`` record
which byte ranges of which file changed, and ``os.fsync``/``os.fdatasync``
copy the file's state at that moment into a *shadow* in the journal
directory, named by the file's inode (renames keep it; ``os.unlink``,
``os.replace`` and ``os.rename`` drop the shadow of an inode they remove).
A shadow is updated before the fsync returns, so whatever the broker
acknowledged after an fsync is in it; SIGKILL cannot tear an acknowledged
one.

After the broker is SIGKILLed, ``power_loss`` rolls the data directory back:
a file with a shadow gets the shadow's contents (in ``zero-tail`` mode a
segment file keeps its length and its unsynced tail reads as zeros, the way
some file systems leave a file whose size reached disk before its data); a
file never fsynced is lost: deleted, emptied, or zero-filled at its length
(chosen per file by a seeded random generator).

Why this is sound for kafka-wire: segment and index files are written only
with ``os.pwrite`` (and cut with ``os.ftruncate``) and read through
*read-only* maps, so no data reaches a file through a shared writable map
(where ``msync`` would matter and this layer would see nothing); every other
file is small and is copied whole at each fsync. Bytes written through
Python file objects (``open(...).write``) are not seen as ranges, which is
why only the append-only segment files (``NNNNNNNNNNNNNNNNNNNN.log`` and its
indexes) are copied incrementally: from the lowest byte changed since the
last fsync (or the file's new end if it shrank) to the end, holes skipped.

Not modelled: directory entries (creates, renames and unlinks are taken as
durable at once), and reordering of writes inside one fsync interval
(unsynced data is all lost, never partly kept, except ``zero-tail``).
"""
from __future__ import annotations

import os
import random
import re
import stat
import sys
import threading
from collections import defaultdict
from pathlib import Path

APPEND_ONLY = re.compile(r"^\d{20}\.(log|index|timeindex|batches|txnindex)$")
ENV = "KAFKA_WIRE_FSYNC_JOURNAL"
_CHUNK = 1 << 20


def _key(st: os.stat_result) -> str:
    return f"{st.st_dev}-{st.st_ino}"


def copy_sparse(src: int, dst: int, lo: int, hi: int) -> None:
    """Copy bytes [lo, hi) from ``src`` to ``dst`` at the same positions,
    skipping holes (``dst`` must read as zeros there already)."""
    pos = lo
    while pos < hi:
        try:
            start = os.lseek(src, pos, os.SEEK_DATA)
        except OSError:  # ENXIO: no data after pos
            return
        if start >= hi:
            return
        end = min(os.lseek(src, start, os.SEEK_HOLE), hi)
        while start < end:
            data = os.pread(src, min(_CHUNK, end - start), start)
            if not data:
                return
            _real["pwrite"](dst, data, start)
            start += len(data)
        pos = end


_real: dict = {name: getattr(os, name) for name in
               ("pwrite", "write", "ftruncate", "fsync", "fdatasync", "unlink", "remove", "replace", "rename")}


class Journal:
    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._low: dict[str, int] = {}  # inode key -> lowest byte changed since its last fsync

    def shadow(self, key: str) -> Path:
        return self.directory / key

    def changed(self, fd: int, low: int) -> None:
        try:
            st = os.fstat(fd)
        except OSError:
            return
        if not stat.S_ISREG(st.st_mode):
            return
        key = _key(st)
        with self._lock:
            self._low[key] = min(self._low.get(key, low), low)

    def forget_path(self, path, dir_fd=None) -> None:
        try:
            st = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
        except (OSError, TypeError, ValueError):
            return
        if stat.S_ISREG(st.st_mode):
            with self._lock:
                self._low.pop(_key(st), None)
                try:
                    _real["unlink"](self.shadow(_key(st)))
                except FileNotFoundError:
                    pass

    def synced(self, fd: int) -> None:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return  # a directory: entries are not modelled
        key = _key(st)
        name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
        if os.environ.get("KAFKA_WIRE_JOURNAL_DEBUG"):
            print(f"journal: fsync {os.readlink(f'/proc/self/fd/{fd}')} ({st.st_size} bytes, inode {st.st_ino})",
                  file=sys.stderr, flush=True)
        shadow = self.shadow(key)
        src = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY)
        try:
            size = os.fstat(src).st_size
            with self._lock:
                low = self._low.pop(key, None)
                if APPEND_ONLY.match(name) and shadow.exists():
                    dst = os.open(shadow, os.O_RDWR)
                    try:
                        old = os.fstat(dst).st_size
                        low = min(size if low is None else low, size, old)
                        _real["ftruncate"](dst, low)
                        _real["ftruncate"](dst, size)
                        copy_sparse(src, dst, low, size)
                    finally:
                        os.close(dst)
                    return
                tmp = shadow.with_name(key + ".tmp")
                dst = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
                try:
                    _real["ftruncate"](dst, size)
                    copy_sparse(src, dst, 0, size)
                finally:
                    os.close(dst)
                _real["replace"](tmp, shadow)
        finally:
            os.close(src)


def install(directory: str | os.PathLike) -> Journal:
    """Wrap the os functions in this process (call before the broker starts)."""
    journal = Journal(directory)

    def pwrite(fd, data, offset, *a, **k):
        n = _real["pwrite"](fd, data, offset, *a, **k)
        journal.changed(fd, offset)
        return n

    def write(fd, data):
        n = _real["write"](fd, data)
        try:
            journal.changed(fd, os.lseek(fd, 0, os.SEEK_CUR) - n)
        except OSError:  # a pipe or socket
            pass
        return n

    def ftruncate(fd, length):
        _real["ftruncate"](fd, length)
        journal.changed(fd, length)

    def fsync(fd):
        fd = fd if isinstance(fd, int) else fd.fileno()
        _real["fsync"](fd)
        journal.synced(fd)

    def fdatasync(fd):
        fd = fd if isinstance(fd, int) else fd.fileno()
        _real["fdatasync"](fd)
        journal.synced(fd)

    def unlink(path, *a, dir_fd=None, **k):
        journal.forget_path(path, dir_fd)
        return _real["unlink"](path, *a, dir_fd=dir_fd, **k)

    def remove(path, *a, dir_fd=None, **k):
        journal.forget_path(path, dir_fd)
        return _real["remove"](path, *a, dir_fd=dir_fd, **k)

    def replace(src, dst, *a, **k):
        if os.path.realpath(src) != os.path.realpath(dst):
            journal.forget_path(dst, k.get("dst_dir_fd"))
        return _real["replace"](src, dst, *a, **k)

    def rename(src, dst, *a, **k):
        if os.path.realpath(src) != os.path.realpath(dst):
            journal.forget_path(dst, k.get("dst_dir_fd"))
        return _real["rename"](src, dst, *a, **k)

    os.pwrite, os.write, os.ftruncate, os.fsync, os.fdatasync = pwrite, write, ftruncate, fsync, fdatasync
    os.unlink, os.remove, os.replace, os.rename = unlink, remove, replace, rename
    return journal


def power_loss(data_dir: str | os.PathLike, journal_dir: str | os.PathLike, *, seed: int,
               zero_tail: bool = False, writeback: bool = True) -> dict[str, int]:
    """Roll ``data_dir`` back to what was fsynced, as a power loss would (the
    broker must be dead). Per file, chosen by a generator seeded with ``seed``:

    * fsynced at least once: its last fsynced state ("synced"); with
      ``writeback`` (the kernel may have written some unsynced data back
      before the power went) also all of it ("current") or its fsynced state
      plus a random part of what followed ("cut": the file cut at a random
      length between the two); with ``zero_tail`` the fsynced state with the
      rest of its length zero-filled ("zeroed", segment files only);
    * never fsynced: lost ("deleted", "emptied", or with ``zero_tail``
      "zeroed" at its length) or, with ``writeback``, "current" or "cut".

    Returns how many files met each fate."""
    rng = random.Random(seed)
    journal = Path(journal_dir)
    counts: dict[str, int] = defaultdict(int)
    for root, dirs, files in os.walk(data_dir):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(root, name)
            st = os.lstat(path)
            if not stat.S_ISREG(st.st_mode):
                continue
            shadow = journal / _key(st)
            segment = APPEND_ONLY.match(name) is not None
            if shadow.exists():
                fates = ["synced"] + (["current", "cut"] if writeback else []) + (["zeroed"] if zero_tail and segment
                                                                                 else [])
            else:
                fates = ["deleted", "emptied"] + (["current", "cut"] if writeback else []) + (["zeroed"] if zero_tail
                                                                                            else [])
            fate = rng.choice(fates)
            counts[fate] += 1
            synced = shadow.stat().st_size if shadow.exists() else 0
            if os.environ.get("KAFKA_WIRE_JOURNAL_DEBUG"):
                print(f"power loss: {os.path.relpath(path, data_dir)} {fate} (synced {synced if shadow.exists() else None},"
                      f" now {st.st_size}, inode {st.st_ino})")
            if fate == "current":
                continue
            if fate == "deleted":
                os.unlink(path)
            elif fate == "emptied":
                with open(path, "r+b") as f:
                    f.truncate(0)
            elif fate == "cut":
                # What the kernel wrote back: the fsynced state, then part of what followed it.
                cut = rng.randint(min(synced, st.st_size), st.st_size)
                with open(path, "rb") as f:
                    f.seek(synced)
                    tail = f.read(max(0, cut - synced))
                if shadow.exists():
                    _restore(path, shadow, st.st_size, False)
                with open(path, "r+b") as f:
                    f.truncate(min(synced, cut))
                    f.seek(synced)
                    f.write(tail)
                    f.truncate(cut)
            elif fate == "zeroed":
                if shadow.exists():
                    _restore(path, shadow, st.st_size, True)
                else:
                    with open(path, "r+b") as f:
                        f.truncate(0)
                        f.truncate(st.st_size)
            else:  # synced
                _restore(path, shadow, st.st_size, False)
    return dict(counts)


def _restore(path: str, shadow: Path, size: int, zero_tail: bool) -> None:
    synced = shadow.stat().st_size
    with open(shadow, "rb") as s, open(path, "r+b") as f:
        f.truncate(0)
        f.truncate(max(size, synced) if zero_tail else synced)
        f.flush()
        copy_sparse(s.fileno(), f.fileno(), 0, synced)
