"""LogManager: every partition log under one root directory.

Layout::

    root/{topic}-{partition}/      one PartitionLog each
    root/__topics/{topic}.json     name, topic_id, partition count, config overrides

Topic metadata is written atomically (tmp + fsync + rename). Deleting a topic
renames its partition directories to ``*.deleted`` before removing them, so a
crash half way leaves nothing that looks like live data; leftovers are removed
at the next start.

Partition logs are opened lazily (``PartitionLog(lazy=True)``): creating or
loading a topic only makes its directories, so start-up with thousands of
partitions reads no segment, and a partition's recovery runs when it is first
used. Descriptors are bounded by one ``FileHandleCache`` (``handles``). A
creation that fails part way (EMFILE, ENOSPC, any error) removes the partition
directories it made and registers nothing.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping

from .config import LogConfig
from .errors import StorageError, TopicExists, UnknownTopic
from .handles import FileHandleCache, shared_cache
from .partition_log import PartitionLog
from .recovery import write_atomic

logger = logging.getLogger(__name__)

TOPICS_DIR = "__topics"
# ~0.3 ms each after a clean shutdown, a few ms after a crash (an empty partition).
RETENTION_OPENS_PER_PASS = 64
MAX_TOPIC_NAME = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")  # used with fullmatch: "$" would accept a final newline


def topic_name_error(name: str | None) -> str | None:
    """Why ``name`` is not a legal Kafka topic name, or None when it is (Kafka's rule:
    1-249 letters, digits, '.', '_' and '-', not '.' or '..')."""
    rule = f"use 1-{MAX_TOPIC_NAME} letters, digits, '.', '_' and '-'"
    if not isinstance(name, str) or not name:
        return f"topic name is empty: {rule}"
    if name in (".", ".."):
        return f"topic name {name!r} is invalid: '.' and '..' are reserved; {rule}"
    if len(name) > MAX_TOPIC_NAME:
        return f"topic name is {len(name)} characters long: {rule}"
    if not _LEGAL.fullmatch(name):
        return f"topic name {name!r} is invalid: {rule}"
    return None


def validate_topic_name(name: str) -> None:
    """Raise ValueError unless ``name`` is a legal Kafka topic name."""
    problem = topic_name_error(name)
    if problem:
        raise ValueError(problem)


def collision_key(name: str) -> str:
    """Kafka refuses a topic whose name differs from another's only by '.' vs '_'
    (their metric names would clash): names with the same key collide."""
    return name.replace(".", "_")


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: str  # uuid4 string
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)  # overrides only
    config: LogConfig = field(default_factory=LogConfig)  # effective: defaults + overrides
    created_ms: int | None = None  # Event Hubs' created_at; None in files written before it was kept

    def to_json(self) -> dict:
        doc = {"name": self.name, "topic_id": self.topic_id, "partitions": self.partitions, "configs": self.configs}
        if self.created_ms is not None:
            doc["created_ms"] = self.created_ms
        return doc


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class LogManager:
    def __init__(self, root: Path, default_config: LogConfig, *, clock: Callable[[], int] = _wall_clock_ms,
                 handles: FileHandleCache | None = None):
        self.root = Path(root)
        self.default_config = default_config
        self._clock = clock
        self.handles = handles if handles is not None else shared_cache()
        self._lock = threading.RLock()
        self._topics: dict[str, TopicInfo] = {}
        # collision_key -> the names that have it: a creation checks its clash in O(1), not
        # by a walk of every topic (10,000 hubs). More than one only for files from before.
        self._clashes: dict[str, set[str]] = {}
        self._logs: dict[tuple[str, int], PartitionLog] = {}
        self._closed = False
        (self.root / TOPICS_DIR).mkdir(parents=True, exist_ok=True)
        self._load()

    # -- queries ----------------------------------------------------------------

    def topic(self, name: str) -> TopicInfo | None:
        return self._topics.get(name)

    def topics(self) -> dict[str, TopicInfo]:
        return dict(self._topics)

    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def logs(self) -> dict[tuple[str, int], PartitionLog]:
        """Every open partition log by (topic, partition)."""
        return dict(self._logs)

    def now_ms(self) -> int:
        return self._clock()

    def partition_dir(self, topic: str, partition: int) -> Path:
        return self.root / f"{topic}-{partition}"

    # -- topic administration ---------------------------------------------------

    def create_topic(self, name: str, partitions: int, configs: Mapping[str, str] | None = None,
                     *, topic_id: str | None = None) -> TopicInfo:
        """Create a topic and open its partitions. Raises ValueError for a bad
        name, partition count or config, TopicExists if it (or a name that
        collides with it) exists. ``topic_id``: keep another log's id (a replica's
        copy of a topic), else a new one."""
        validate_topic_name(name)
        if partitions < 1:
            raise ValueError(f"topic {name!r}: the number of partitions must be at least 1, not {partitions}")
        overrides = {k: str(v) for k, v in (configs or {}).items()}
        config = LogConfig.from_kafka(overrides, base=self.default_config)
        with self._lock:
            self._check_open()
            if name in self._topics:
                raise TopicExists(f"topic {name!r} already exists")
            clashing = self._clashes.get(collision_key(name))
            if clashing:
                other = min(clashing)
                raise TopicExists(f"topic {name!r} collides with existing topic {other!r} ('.' and '_' clash)")
            info = TopicInfo(name, topic_id or str(uuid.uuid4()), partitions, overrides, config,
                             created_ms=self._clock())
            made: list[Path] = []
            try:
                for p in range(partitions):
                    self._open_partition(info, p, made)
                self._save(info)
            except BaseException as exc:
                (self.root / TOPICS_DIR / f"{name}.json").unlink(missing_ok=True)
                self._discard_partitions(name, range(partitions), made)
                if isinstance(exc, OSError):
                    raise _storage_error(f"topic {name!r}", exc) from exc
                raise
            self._add(info)
            logger.info("created topic %s with %d partitions in %s", name, partitions, self.root)
            return info

    def delete_topic(self, name: str) -> None:
        with self._lock:
            self._check_open()
            info = self._require(name)
            doomed = []
            for p in range(info.partitions):
                log = self._logs.pop((name, p), None)
                if log is not None:
                    log.abandon()  # no trimming or markers: the files are going
                src = self.partition_dir(name, p)
                if src.exists():
                    dst = src.with_name(f"{src.name[:200]}.{uuid.uuid4().hex[:8]}.deleted")
                    os.rename(src, dst)
                    doomed.append(dst)
            (self.root / TOPICS_DIR / f"{name}.json").unlink(missing_ok=True)
            self._remove(name)
        for path in doomed:
            shutil.rmtree(path, ignore_errors=True)
        logger.info("deleted topic %s", name)

    def create_partitions(self, name: str, new_total: int) -> TopicInfo:
        with self._lock:
            self._check_open()
            info = self._require(name)
            if new_total <= info.partitions:
                raise ValueError(
                    f"topic {name!r} has {info.partitions} partitions: the new count must be larger, not {new_total}"
                )
            new = TopicInfo(info.name, info.topic_id, new_total, info.configs, info.config, info.created_ms)
            made: list[Path] = []
            try:
                for p in range(info.partitions, new_total):
                    self._open_partition(new, p, made)
                self._save(new)
            except BaseException as exc:
                self._discard_partitions(name, range(info.partitions, new_total), made)
                try:
                    self._save(info)  # the new file may have replaced it before the failure
                except OSError:
                    logger.exception("cannot rewrite the metadata of topic %s", name)
                if isinstance(exc, OSError):
                    raise _storage_error(f"partitions {info.partitions}..{new_total - 1} of topic {name!r}",
                                         exc) from exc
                raise
            self._topics[name] = new
            return new

    def alter_topic_config(
        self, name: str, overrides: Mapping[str, str | None], *, replace: bool = False
    ) -> TopicInfo:
        """Set (or with value None, remove) config overrides and apply them to
        the open logs. ``replace`` drops overrides not named (legacy AlterConfigs)."""
        with self._lock:
            self._check_open()
            info = self._require(name)
            merged = {} if replace else dict(info.configs)
            for key, value in overrides.items():
                if value is None:
                    merged.pop(key, None)
                else:
                    merged[key] = str(value)
            config = LogConfig.from_kafka(merged, base=self.default_config)
            new = TopicInfo(info.name, info.topic_id, info.partitions, merged, config, info.created_ms)
            self._save(new)
            self._topics[name] = new
            for p in range(info.partitions):
                log = self._logs.get((name, p))
                if log is not None:
                    log.update_config(config)
            return new

    # -- maintenance ------------------------------------------------------------

    def enforce_retention(self, now_ms: int) -> int:
        """Apply retention to every log; returns segments deleted. Partitions not
        opened yet are opened for it, at most RETENTION_OPENS_PER_PASS a pass:
        the pass runs on the event loop, and opening thousands after a crash
        (each recovers its active segment) would stall it for seconds."""
        deleted = opened = 0
        for log in list(self._logs.values()):
            if log.closed:
                continue
            if not log.loaded:
                if opened >= RETENTION_OPENS_PER_PASS:
                    continue  # a later pass: once open, a log no longer counts
                opened += 1
            deleted += log.enforce_retention(now_ms)
        return deleted

    def expire_producers(self, now_ms: int) -> int:
        """Forget idle producer state in every log (Kafka checks every
        producer.id.expiration.check.interval.ms, 10 minutes)."""
        return sum(log.expire_producers(now_ms) for log in list(self._logs.values()) if not log.closed)

    def flush(self) -> None:
        for log in list(self._logs.values()):
            log.flush()

    def flush_due(self, now_ms: int) -> int | None:
        """Kafka's log flusher: fsync the segments rolled since the last pass, and
        the partitions whose ``flush.ms`` has passed with data not yet flushed, appends or not. Returns the smallest ``flush.ms``
        configured (when to look again), or None when no partition has one."""
        smallest = None
        for log in list(self._logs.values()):
            if log.closed:
                continue
            ms = log.config.flush_ms
            if ms is not None:
                smallest = ms if smallest is None else min(smallest, ms)
            if not log.loaded:
                # Never used since start: nothing rolled, waiting or unflushed. Most of
                # 10,000 partitions are here; each costs a dict look-up, not a lock.
                continue
            log.flush_rolled()  # Kafka fsyncs a rolled segment in the background too
            log.write_pending_entries()  # other processes' readers see what was appended
            if ms is not None and not log.closed:
                log.maybe_flush(now_ms)
        # Here because the flusher calls this about once a second, off the event loop.
        self.handles.close_idle()
        return smallest

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for log in self._logs.values():
                log.close()

    # -- internals --------------------------------------------------------------

    def _require(self, name: str) -> TopicInfo:
        info = self._topics.get(name)
        if info is None:
            raise UnknownTopic(f"topic {name!r} does not exist")
        return info

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the log manager is closed")

    def _open_partition(self, info: TopicInfo, partition: int, made: list[Path] | None = None) -> PartitionLog:
        """A lazy log: only its directory is made here. ``made`` collects the
        directories this call creates (listed first, so a half-made one is too)."""
        path = self.partition_dir(info.name, partition)
        if made is not None and not path.exists():
            made.append(path)
        log = PartitionLog(path, info.config, now_ms=self._clock(), handles=self.handles, lazy=True)
        self._logs[(info.name, partition)] = log
        return log

    def _discard_partitions(self, name: str, partitions: range, made: list[Path]) -> None:
        """Undo a failed creation: forget the logs, remove the directories made."""
        for p in partitions:
            log = self._logs.pop((name, p), None)
            if log is not None:
                log.abandon()
        for path in made:
            shutil.rmtree(path, ignore_errors=True)

    def _add(self, info: TopicInfo) -> None:
        self._topics[info.name] = info
        self._clashes.setdefault(collision_key(info.name), set()).add(info.name)

    def _remove(self, name: str) -> None:
        del self._topics[name]
        key = collision_key(name)
        names = self._clashes[key]
        names.discard(name)
        if not names:
            del self._clashes[key]

    def _save(self, info: TopicInfo) -> None:
        data = json.dumps(info.to_json(), indent=2, sort_keys=True).encode()
        write_atomic(self.root / TOPICS_DIR / f"{info.name}.json", data)

    def _load(self) -> None:
        for path in self.root.iterdir():
            if path.name.endswith(".deleted"):  # a delete interrupted by a crash
                shutil.rmtree(path, ignore_errors=True)
        for path in sorted((self.root / TOPICS_DIR).iterdir()):
            if path.suffix != ".json":
                path.unlink(missing_ok=True)  # an interrupted atomic write
                continue
            try:
                raw = json.loads(path.read_text())
                name, partitions = raw["name"], int(raw["partitions"])
                validate_topic_name(name)
                configs = {str(k): str(v) for k, v in raw.get("configs", {}).items()}
                config = LogConfig.from_kafka(configs, base=self.default_config)
                created = raw.get("created_ms")
                if created is None:  # older metadata: the file's time is the best we know
                    created = int(path.stat().st_mtime * 1000)
                info = TopicInfo(name, str(raw["topic_id"]), partitions, configs, config, int(created))
            except (ValueError, KeyError, TypeError) as exc:
                logger.error("ignoring unreadable topic metadata %s: %s", path, exc)
                continue
            for p in range(partitions):
                self._open_partition(info, p)
            self._add(info)
        logger.info("loaded %d topics, %d partitions from %s", len(self._topics), len(self._logs), self.root)


def _storage_error(what: str, exc: OSError) -> StorageError:
    """A failed creation's OSError as StorageError, saying what to do."""
    hint = ""
    if exc.errno == errno.EMFILE:
        hint = "; raise the open file limit (ulimit -n) or lower the log's max open files"
    elif exc.errno == errno.ENOSPC:
        hint = "; free disk space"
    return StorageError(
        f"cannot create {what}: {exc.strerror or exc}{hint}; nothing was kept", errno=exc.errno,
    )
