"""Read-only file maps that hold no file descriptor.

CPython's ``mmap.mmap`` keeps a dup() of the descriptor it was given for as
long as the map lives (for ``size()`` and ``resize()``), so every mapped
segment and index file used to cost a descriptor: 8 per empty partition (4
write descriptors of the active segment, 4 dups behind its maps). The kernel
needs no descriptor to keep a mapping, so we map with ``trackfd=False`` where
Python has it (3.13+) and otherwise call mmap(2) through ctypes; the map is
then a read-only ``memoryview`` whose last view (a socket write in flight,
say) unmaps it when it goes. Platforms without either keep ``mmap.mmap``.

Nothing is ever mapped past the end of its file: touching such a page kills
the whole process with SIGBUS, not the one read. ``map_read_only`` checks the
opened file's length (and, given its ``file_id``, that it is still the file the
caller opened, not one renamed over its path since) and raises StorageError
instead. Segments map by path, lazily, from lock-free readers, so the path may
name another file by then (the cleaner's swap, a log started over at the same
base offset): ``LogSegment.keep_mapped`` maps a segment's files before they go.
"""

from __future__ import annotations

import ctypes
import errno
import mmap
import os
import sys
from pathlib import Path
from typing import Union

from .errors import StorageError

Map = Union[mmap.mmap, memoryview]

_libc = None
if sys.version_info < (3, 13) and os.name == "posix":
    try:
        _libc = ctypes.CDLL(None, use_errno=True)  # the process's own symbols, libc's among them
        _libc.mmap.restype = ctypes.c_void_p
        _libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                               ctypes.c_int64)
        _libc.munmap.restype = ctypes.c_int
        _libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    except (OSError, AttributeError):
        _libc = None
_MAP_FAILED = ctypes.c_void_p(-1).value


class _Mapping:
    """Owns one mmap(2) region; unmaps it when the last view of it is gone."""

    __slots__ = ("address", "length")

    def __init__(self, address: int, length: int):
        self.address = address
        self.length = length

    def __del__(self) -> None:
        try:
            _libc.munmap(self.address, self.length)  # type: ignore[union-attr]
        except Exception:  # interpreter shutdown: the process is going anyway
            pass


def _map_with_libc(fd: int, length: int) -> memoryview:
    address = _libc.mmap(None, length, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)  # type: ignore[union-attr]
    if address is None or address == _MAP_FAILED:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    region = (ctypes.c_char * length).from_address(address)
    region.mapping = _Mapping(address, length)  # lives as long as the array, which every view keeps
    return memoryview(region).cast("B").toreadonly()


FileId = tuple[int, int]  # (st_dev, st_ino): which file a path named when it was opened


def file_id(st: os.stat_result) -> FileId:
    return st.st_dev, st.st_ino


def map_read_only(path: Path, fd: int | None, length: int, expected: FileId | None = None) -> Map | None:
    """A read-only map of the first ``length`` bytes (None if empty); uses ``fd``
    when given, else opens ``path`` just for the mapping. The map holds no
    descriptor of its own, except on platforms noted in the module doc.
    Raises StorageError, mapping nothing, if the file is shorter than ``length``
    or is not the file ``expected`` names (another was renamed over the path)."""
    if length <= 0:
        return None
    own = fd if fd is not None else os.open(path, os.O_RDONLY)
    try:
        st = os.fstat(own)
        if expected is not None and file_id(st) != expected:
            raise StorageError(f"{path} was replaced by another file since it was opened: not mapping the "
                               "new one in place of the old", errno=errno.ESTALE)
        if st.st_size < length:
            # Pages past the end would raise SIGBUS when touched, killing the process.
            raise StorageError(f"{path} is {st.st_size} bytes, shorter than the {length} bytes to map: it was "
                               "cut or replaced under a reader", errno=errno.ESTALE)
        if _libc is not None:
            return _map_with_libc(own, length)
        if sys.version_info >= (3, 13):
            return mmap.mmap(own, length, access=mmap.ACCESS_READ, trackfd=False)  # type: ignore[call-arg]
        return mmap.mmap(own, length, access=mmap.ACCESS_READ)
    finally:
        if own is not fd:
            os.close(own)


def release_map(m: Map | None) -> None:
    """Let go of a map. An ``mmap.mmap`` with a view still out (a pending socket
    write) is left to the garbage collector; a memoryview map is unmapped when
    its last view goes, whatever we do."""
    if m is None:
        return
    try:
        m.release() if isinstance(m, memoryview) else m.close()
    except BufferError:
        pass


def find_bytes(buf: Map, needle: bytes, start: int, end: int) -> int:
    """``buf.find(needle, start, end)`` for maps that are memoryviews too."""
    if isinstance(buf, mmap.mmap):
        return buf.find(needle, start, end)
    step = 1 << 20
    pos = start
    while pos < end:
        stop = min(end, pos + step + len(needle) - 1)
        found = bytes(buf[pos:stop]).find(needle)
        if found >= 0:
            return pos + found
        pos += step
    return -1
