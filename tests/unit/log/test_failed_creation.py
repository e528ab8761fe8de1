"""A topic or partition creation that fails part way leaves nothing behind:
no partition directory it made, no metadata, no registered topic."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from kafka_wire.log import manager as manager_module
from kafka_wire.log.config import LogConfig
from kafka_wire.log.errors import StorageError
from kafka_wire.log.handles import FileHandleCache
from kafka_wire.log.manager import LogManager

from .log_helpers import make_batch


def entries(root: Path) -> set[str]:
    """What the data directory holds, metadata files included."""
    return {p.name for p in root.iterdir()} | {f"__topics/{p.name}" for p in (root / "__topics").iterdir()}


def fail_mkdir_after(monkeypatch, n: int, exc: BaseException) -> None:
    """Partition directories are made with Path.mkdir: the n+1st call fails."""
    real = Path.mkdir
    calls = [0]

    def mkdir(self, *args, **kwargs):
        calls[0] += 1
        if calls[0] > n:
            raise exc
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)


@pytest.fixture
def manager(tmp_path):
    m = LogManager(tmp_path, LogConfig(), handles=FileHandleCache(16))
    yield m
    m.close()


@pytest.mark.parametrize("code", [errno.EMFILE, errno.ENOSPC])
def test_a_creation_failing_part_way_removes_the_partitions_it_made(manager, tmp_path, monkeypatch, code):
    before = entries(tmp_path)
    fail_mkdir_after(monkeypatch, 40, OSError(code, os.strerror(code)))
    with pytest.raises(StorageError, match="nothing was kept") as info:
        manager.create_topic("big", 100)
    assert info.value.errno == code
    monkeypatch.undo()
    assert entries(tmp_path) == before
    assert manager.topic("big") is None and not any(t == "big" for t, _ in manager.logs())
    manager.create_topic("big", 3)  # the name is free again, and empty
    assert [manager.get_log("big", p).log_end_offset for p in range(3)] == [0, 0, 0]


def test_any_exception_part_way_cleans_up_too(manager, tmp_path, monkeypatch):
    before = entries(tmp_path)
    fail_mkdir_after(monkeypatch, 5, RuntimeError("boom"))
    with pytest.raises(RuntimeError, match="boom"):
        manager.create_topic("t", 10)
    monkeypatch.undo()
    assert entries(tmp_path) == before and manager.topic("t") is None


def test_a_failure_writing_the_metadata_removes_every_partition(manager, tmp_path, monkeypatch):
    before = entries(tmp_path)

    def full_disk(path, data, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(manager_module, "write_atomic", full_disk)
    with pytest.raises(StorageError, match="free disk space"):
        manager.create_topic("t", 20)
    monkeypatch.undo()
    assert entries(tmp_path) == before and manager.topic("t") is None


def test_the_metadata_write_leaves_no_temporary_file_when_the_disk_is_full(tmp_path, monkeypatch):
    from kafka_wire.log import recovery

    def fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(recovery.os, "fsync", fsync)
    with pytest.raises(OSError):
        recovery.write_atomic(tmp_path / "x.json", b"{}")
    monkeypatch.undo()
    assert list(tmp_path.iterdir()) == []


def test_adding_partitions_failing_part_way_keeps_the_topic_as_it_was(manager, tmp_path, monkeypatch):
    manager.create_topic("t", 4)
    for p in range(4):
        manager.get_log("t", p).append(make_batch(2, tag=p), now_ms=1)
    before = entries(tmp_path)
    fail_mkdir_after(monkeypatch, 10, OSError(errno.EMFILE, "Too many open files"))
    with pytest.raises(StorageError, match="ulimit"):
        manager.create_partitions("t", 50)
    monkeypatch.undo()
    assert entries(tmp_path) == before
    assert manager.topic("t").partitions == 4 and len(manager.logs()) == 4
    assert [manager.get_log("t", p).log_end_offset for p in range(4)] == [2] * 4
    manager.close()
    reopened = LogManager(tmp_path, LogConfig(), handles=FileHandleCache(16))
    assert reopened.topic("t").partitions == 4
    assert [reopened.get_log("t", p).log_end_offset for p in range(4)] == [2] * 4
    reopened.close()


def test_a_partition_that_cannot_be_opened_on_first_use_can_be_later(manager, monkeypatch):
    manager.create_topic("t", 1)
    log = manager.get_log("t", 0)
    real_open = os.open

    def emfile(*args, **kwargs):
        raise OSError(errno.EMFILE, "Too many open files")

    monkeypatch.setattr(os, "open", emfile)
    with pytest.raises(StorageError, match="cannot open"):
        log.append(make_batch(1), now_ms=1)
    monkeypatch.setattr(os, "open", real_open)
    assert log.append(make_batch(1), now_ms=1).base_offset == 0
