"""Topics as the API handlers see them: names, ids, partitions, configs, and
the wake-ups that let a waiting Fetch answer as soon as data arrives."""
from __future__ import annotations

import asyncio
import logging
import uuid

import kafka.errors as Errors
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import ClassVar, Iterable, Mapping

from kafka_wire.log.config import LogConfig
from kafka_wire.log.manager import LogManager, TopicInfo, collision_key, topic_name_error  # noqa: F401  (re-exported)
from kafka_wire.log.partition_log import PartitionLog

log = logging.getLogger(__name__)

LEADER_EPOCH = 0  # one broker, never re-elected: stable unless a test fault moves the leader


@dataclass(frozen=True, slots=True)
class TopicView:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: dict[str, str]
    internal: bool = False


def is_internal(name: str) -> bool:
    """Kafka's own topics (``__consumer_offsets``...): named, but no event hub."""
    return name.startswith("__")


@dataclass(frozen=True, slots=True)
class HubSize:
    """An event hub as the door counts it when another is made or grown
    (:class:`kafka_wire.eventhubs.policy.SizedHub`): its name and partition count."""
    name: str
    partitions: int
    internal: ClassVar[bool] = False  # Kafka's own topics are not counted at all


class TopicManager:
    """Thin layer over :class:`log.manager.LogManager` for the Kafka APIs."""

    def __init__(self, logs: LogManager, *, num_partitions: int = 1,
                 auto_create: bool = True, topic_defaults: dict[str, str] | None = None) -> None:
        self.logs = logs
        self.num_partitions = num_partitions
        self.auto_create = auto_create
        self.topic_defaults = dict(topic_defaults or {})
        # Fetches (and AMQP receivers) waiting for data: topic -> partition -> their futures,
        # in arrival order (a dict as an ordered set: a waiter leaves in O(1)). By topic, so
        # that a deletion wakes its own hub's and touches no other's.
        self._waiters: dict[str, dict[int, dict[asyncio.Future, None]]] = {}
        # Indexes of the log manager's topics, kept by create, delete and create_partitions
        # (each changes one entry: a namespace of 10,000 hubs makes one more without a walk)
        # and rebuilt when the topics are loaded (here, switch_logs). The log manager is
        # changed through these methods only, or switch_logs follows.
        self._by_id: dict[uuid.UUID, str] = {}
        # Event Hubs' names are case-insensitive (Kafka's are not): each name, lower-cased,
        # to the name it was made with; None for two names in one case (a data directory
        # from before such twins were refused), which no other case then names.
        self._folded: dict[str, str | None] = {}
        # collision_key -> the topics of that key ('.' and '_' clash), in creation order:
        # one, but for a data directory written by hand
        self._colliding: dict[str, list[str]] = {}
        # The event hubs (Kafka's internal topics left out) and their partitions' total:
        # what the door counts when a hub is made or grown ([limits], the tier's quotas).
        self._hubs: dict[str, HubSize] = {}
        self._hub_partitions = 0
        self._views: dict[str, tuple[object, TopicView]] = {}
        # topic -> partition -> [(epoch, start offset)], only for partitions whose leader
        # moved (a geo promotion, kept durable by it; a test fault, in memory only); all
        # others stay at LEADER_EPOCH from offset 0. By topic: a deletion drops its own.
        self._epochs: dict[str, dict[int, list[tuple[int, int]]]] = {}
        # Hooks the Event Hubs layer and metrics attach to.
        self.on_append = None
        self.on_delete: list = []  # called with a deleted topic's name (the groups' offsets go)
        # A geo-replicated namespace's replication (kafka_wire.replication.geo): told of
        # every append and hub change; None otherwise (one attribute check per append).
        self.replication = None
        self._index_all()

    def switch_logs(self, logs: LogManager) -> None:
        """Serve from ``logs`` from now on (a geo-replicated namespace's new primary):
        cached views and ids are rebuilt, waiting fetches are woken."""
        self.logs = logs
        self._views.clear()
        self._index_all()
        for topic in list(self._waiters):
            self._wake_topic(topic)

    # -- the indexes ----------------------------------------------------------
    def _index_all(self) -> None:
        """Every index from the log manager's topics (a start, another log manager)."""
        self._by_id, self._folded, self._colliding = {}, {}, {}
        self._hubs, self._hub_partitions = {}, 0
        for info in self.logs.topics().values():
            self._index(info)

    def _index(self, info: TopicInfo) -> None:
        name = info.name
        self._by_id[uuid.UUID(info.topic_id)] = name
        low = name.lower()
        self._folded[low] = None if low in self._folded else name
        self._colliding.setdefault(collision_key(name), []).append(name)
        if not is_internal(name):
            self._hubs[name] = HubSize(name, info.partitions)
            self._hub_partitions += info.partitions

    def _unindex(self, info: TopicInfo) -> None:
        name = info.name
        self._by_id.pop(uuid.UUID(info.topic_id), None)
        low = name.lower()
        if self._folded.get(low, name) is None:  # one of twins (a walk: only they have no name)
            twins = [n for n in self.logs.topics() if n.lower() == low]
            if twins:
                self._folded[low] = twins[0] if len(twins) == 1 else None
            else:
                del self._folded[low]
        else:
            self._folded.pop(low, None)
        key = collision_key(name)
        clashing = self._colliding.get(key, [])
        if name in clashing:
            clashing.remove(name)
        if not clashing:
            self._colliding.pop(key, None)
        hub = self._hubs.pop(name, None)
        if hub is not None:
            self._hub_partitions -= hub.partitions

    def _resized(self, info: TopicInfo) -> None:
        hub = self._hubs.get(info.name)
        if hub is not None:
            self._hubs[info.name] = HubSize(info.name, info.partitions)
            self._hub_partitions += info.partitions - hub.partitions

    def hub_sizes(self) -> Mapping[str, HubSize]:
        """The event hubs (Kafka's internal topics left out) by name, each with its partition
        count: a read-only view that follows the topics, for a count without a walk."""
        return MappingProxyType(self._hubs)

    def hub_partitions(self) -> int:
        """The partitions of every event hub (:meth:`hub_sizes`'s total)."""
        return self._hub_partitions

    # -- naming and lookup --------------------------------------------------
    def get(self, name: str) -> TopicView | None:
        info = self.logs.topic(name)
        if info is None:
            self._views.pop(name, None)
            return None
        # Produce and Fetch ask for every partition of every request: build the view
        # once per TopicInfo (the log manager replaces it on every change).
        cached = self._views.get(name)
        if cached is not None and cached[0] is info:
            return cached[1]
        view = TopicView(info.name, uuid.UUID(info.topic_id), info.partitions,
                         dict(info.configs), is_internal(name))
        self._views[name] = (info, view)
        return view

    def hub(self, name: str) -> TopicView | None:
        """Event hub ``name`` as the AMQP and HTTPS front ends look it up: without regard to
        case, as Event Hubs does; the view carries the name the hub was made with, which
        is the one to use after the lookup. Kafka's topic names are case-sensitive: Kafka
        handlers use :meth:`get`. Only ASCII is folded (hub names are ASCII): ``str.lower``
        makes the Kelvin sign a 'k'."""
        view = self.get(name)
        if view is not None or not name.isascii():
            return view
        same = self._folded.get(name.lower())
        return self.get(same) if same is not None else None

    def case_twin(self, name: str) -> str | None:
        """A hub other than ``name`` whose name is ``name`` in another case (``str.lower``
        folds both: the door refuses it as a twin), or None: one look-up in the index but
        for twins an older data directory holds, which are walked (the index keeps no name
        for them)."""
        low = name.lower()
        if low not in self._folded:
            return None
        same = self._folded[low]
        if same is None:
            return next((n for n in sorted(self.logs.topics()) if n != name and n.lower() == low), None)
        return same if same != name else None

    def name_for_id(self, topic_id: uuid.UUID) -> str | None:
        return self._by_id.get(topic_id)

    def names(self) -> list[str]:
        return sorted(self.logs.topics())

    def all(self) -> Iterable[TopicView]:
        for name in self.names():
            view = self.get(name)
            if view is not None:
                yield view

    def log(self, topic: str, partition: int) -> PartitionLog | None:
        return self.logs.get_log(topic, partition)

    def logs_dir(self) -> Path:
        """The directory holding this manager's partitions (DescribeLogDirs' log dir)."""
        return self.logs.root

    def collision(self, name: str) -> str | None:
        """An existing topic whose name clashes with ``name`` ('.' vs '_'), as Kafka refuses."""
        return next((other for other in self._colliding.get(collision_key(name), ()) if other != name), None)

    def validate_configs(self, overrides: dict[str, str]) -> LogConfig:
        """The config a topic with ``overrides`` would get; ValueError says what is wrong."""
        merged = dict(self.topic_defaults)
        merged.update(overrides)
        return LogConfig.from_kafka(merged, base=self.logs.default_config)

    def effective_config(self, name: str) -> LogConfig:
        info = self.logs.topic(name)
        overrides = dict(self.topic_defaults)
        if info is not None:
            overrides.update(info.configs)
        return LogConfig.from_kafka(overrides, base=self.logs.default_config)

    # -- leader epochs ------------------------------------------------------
    def _history(self, topic: str, partition: int) -> list[tuple[int, int]] | None:
        partitions = self._epochs.get(topic)
        return partitions.get(partition) if partitions else None

    def leader_epoch(self, topic: str, partition: int) -> int:
        history = self._history(topic, partition)
        return history[-1][0] if history else LEADER_EPOCH

    def bump_leader_epoch(self, topic: str, partition: int) -> int:
        """A new leader epoch starting at the log end, as after a leader election."""
        plog = self.log(topic, partition)
        history = self._epochs.setdefault(topic, {}).setdefault(partition, [(LEADER_EPOCH, 0)])
        epoch = history[-1][0] + 1
        history.append((epoch, plog.log_end_offset if plog is not None else 0))
        log.info("leader epoch of %s-%d is now %d", topic, partition, epoch)
        return epoch

    def restore_leader_epochs(self, topic: str, partition: int, starts: list[int]) -> None:
        """The history after a restart: epoch ``i + 1`` began at ``starts[i]``, as
        :meth:`bump_leader_epoch` recorded them (the caller keeps them durable: geo-replication's
        state file; Kafka's leader-epoch-checkpoint). A longer history known already is kept."""
        history = [(LEADER_EPOCH, 0), *((LEADER_EPOCH + 1 + i, start) for i, start in enumerate(starts))]
        if len(history) > len(self._history(topic, partition) or ()):
            self._epochs.setdefault(topic, {})[partition] = history

    def epoch_error(self, topic: str, partition: int, requested: int | None) -> int:
        """Kafka's check of a client's current_leader_epoch: 0 when it matches."""
        if requested is None or requested < 0:
            return 0
        current = self.leader_epoch(topic, partition)
        if requested < current:
            return Errors.FencedLeaderEpochError.errno
        if requested > current:
            return Errors.UnknownLeaderEpochError.errno
        return 0

    def end_offset_for_epoch(self, topic: str, partition: int, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (largest epoch <= ``epoch``, its end offset), or (-1, -1)."""
        plog = self.log(topic, partition)
        history = self._history(topic, partition) or [(LEADER_EPOCH, 0)]
        found = None
        for i, (e, _start) in enumerate(history):
            if e <= epoch:
                found = i
        if found is None:
            return -1, -1
        e = history[found][0]
        if found + 1 < len(history):
            return e, history[found + 1][1]
        return e, plog.high_watermark if plog is not None else 0

    # -- administration -----------------------------------------------------
    def create(self, name: str, partitions: int | None = None,
               configs: dict[str, str] | None = None) -> TopicView:
        """Create a topic; partitions open on first use. A failure part way (a
        full disk, any error) registers nothing: the log manager removes the
        partition directories it made and raises (StorageError for an OSError)."""
        error = topic_name_error(name)
        if error:
            raise ValueError(error)
        merged = dict(self.topic_defaults)
        merged.update(configs or {})
        self._index(self.logs.create_topic(name, partitions or self.num_partitions, merged))
        # (the log manager logs the creation, once)
        if self.replication is not None:
            self.replication.changed()
        return self.get(name)

    def delete(self, name: str) -> None:
        info = self.logs.topic(name)
        self.logs.delete_topic(name)  # (raises for a topic it does not hold)
        self._unindex(info)
        # A topic made again with this name is a new topic (Kafka: a new topic id) whose
        # epochs start at LEADER_EPOCH: the old one's history goes with it.
        self._epochs.pop(name, None)
        for hook in list(self.on_delete):
            hook(name)
        self._wake_topic(name)
        log.info("deleted topic %s", name)
        if self.replication is not None:
            self.replication.changed()

    def create_partitions(self, name: str, total: int) -> None:
        """Grow a topic to ``total`` partitions; on failure it keeps its old count
        and the new partitions' directories are removed."""
        self._resized(self.logs.create_partitions(name, total))
        if self.replication is not None:
            self.replication.changed()

    def alter_config(self, name: str, overrides: dict[str, str]) -> None:
        self.logs.alter_topic_config(name, overrides)
        if self.replication is not None:
            self.replication.changed()

    def replace_configs(self, name: str, overrides: dict[str, str]) -> None:
        """Make ``overrides`` the topic's whole override set (others go back to defaults)."""
        self.logs.alter_topic_config(name, overrides, replace=True)
        if self.replication is not None:
            self.replication.changed()

    # -- data path ----------------------------------------------------------
    def append(self, topic: str, partition: int, records, now_ms: int, headers=None):
        """``headers``: the batch headers from validating ``records``, when done already."""
        plog = self.logs.get_log(topic, partition)
        history = self._history(topic, partition) if self._epochs else None
        # Records are views of the request frame, which nothing else reads: patch in place.
        # Every batch gets the leader's epoch (Kafka's LogValidator): what OffsetForLeaderEpoch
        # answers is the epochs' history, and a consumer validates its position with the one read.
        info = plog.append(records, now_ms=now_ms, in_place=True, headers=headers,
                           leader_epoch=history[-1][0] if history else LEADER_EPOCH)
        waiting = self._waiters.get(topic)
        if waiting is not None and partition in waiting:
            self._wake(topic, partition)
        if self.on_append is not None:
            self.on_append(topic, partition, info)
        if self.replication is not None:
            self.replication.appended(topic, partition, info)
        return info

    def append_control(self, topic: str, partition: int, producer_id: int, producer_epoch: int,
                       commit: bool, coordinator_epoch: int, now_ms: int):
        """A transaction marker; read_committed fetchers waiting on the LSO wake up."""
        plog = self.logs.get_log(topic, partition)
        info = plog.append_control(producer_id, producer_epoch, commit, coordinator_epoch, now_ms=now_ms,
                                   leader_epoch=self.leader_epoch(topic, partition))
        waiting = self._waiters.get(topic)
        if waiting is not None and partition in waiting:
            self._wake(topic, partition)
        if self.replication is not None:
            self.replication.appended(topic, partition, info)
        return info

    # -- waiting fetches --------------------------------------------------------
    def _wake(self, topic: str, partition: int) -> None:
        waiting = self._waiters[topic]
        futures = waiting.pop(partition, ())
        if not waiting:
            del self._waiters[topic]
        for fut in futures:
            if not fut.done():
                fut.set_result(None)

    def _wake_topic(self, topic: str) -> None:
        """Every waiter on ``topic``'s partitions (a deletion, another log manager)."""
        for futures in self._waiters.pop(topic, {}).values():
            for fut in futures:
                if not fut.done():
                    fut.set_result(None)

    def wait_for_data(self, keys: Iterable[tuple[str, int]]) -> asyncio.Future:
        """A future resolved at the next append to any of ``keys`` ((topic, partition)),
        or when its topic is deleted; the waiter calls :meth:`forget_waiter` when done."""
        fut = asyncio.get_running_loop().create_future()
        for topic, partition in keys:
            self._waiters.setdefault(topic, {}).setdefault(partition, {})[fut] = None
        return fut

    def forget_waiter(self, fut: asyncio.Future, keys: Iterable[tuple[str, int]]) -> None:
        for topic, partition in keys:
            waiting = self._waiters.get(topic)
            futures = waiting.get(partition) if waiting is not None else None
            if futures is None:
                continue
            futures.pop(fut, None)
            if not futures:
                del waiting[partition]
                if not waiting:
                    del self._waiters[topic]
