"""Committed offsets: kept in memory per group, written through to the
checkpoint store, loaded from it at start, expired by retention.

Group-level checks (generation, member id) belong to the group managers;
this module applies the per-partition rules (metadata size, unknown
partitions) and owns the Kafka offset ↔ Event Hubs checkpoint mapping:
sequence number = committed Kafka offset; offset = the byte position of the
event at that sequence number, asked of the log through ``position_resolver``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Iterable

import kafka.errors as Errors

from kafka_wire.coordinator.checkpoints import Checkpoint, CheckpointStore
from kafka_wire.coordinator.clock import Clock
from kafka_wire.coordinator.config import GroupCoordinatorConfig
from kafka_wire.coordinator.record_log import RecordTooLarge
from kafka_wire.coordinator.results import CommitPartitionResult, OffsetFetchPartition

__all__ = ["OffsetAndMetadata", "OffsetMetadataManager", "PositionResolver"]

log = logging.getLogger(__name__)

NONE = Errors.NoError.errno
TopicPartition = tuple[str, int]
PositionResolver = Callable[[str, int, int], "int | None"]


@dataclass(slots=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int       # -1: none
    metadata: str
    commit_time_ms: int
    position: int | None    # Event Hubs byte offset of the event at ``offset``


class OffsetMetadataManager:
    def __init__(self, config: GroupCoordinatorConfig, clock: Clock,
                 store: CheckpointStore | None, namespace_of: Callable[[str], str],
                 position_resolver: PositionResolver | None = None,
                 partition_exists: Callable[[str, int], bool] | None = None) -> None:
        self.config = config
        self.clock = clock
        self.store = store
        self.namespace_of = namespace_of
        self.position_resolver = position_resolver
        self.partition_exists = partition_exists
        self.offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        # Called after committed offsets change (a commit, a deletion, an expiry): a
        # replica of the namespace (geo-replication) ships them. None: nobody listens.
        self.on_change: Callable[[], None] | None = None

    def load(self) -> list[str]:
        """Read the store; returns the group ids that have offsets in this namespace."""
        if self.store is None:
            return []
        count = 0
        for c in self.store.load():
            if self.namespace_of(c.consumer_group) != c.namespace:
                continue  # another namespace's coordinator owns it
            self.offsets.setdefault(c.consumer_group, {})[(c.event_hub, c.partition)] = \
                OffsetAndMetadata(c.sequence_number, c.leader_epoch,
                                  c.metadata if c.metadata is not None else "",
                                  c.commit_time_ms, c.offset)
            count += 1
        if count:
            log.info("loaded %d committed offsets of %d groups", count, len(self.offsets))
        return list(self.offsets)

    def has_offsets(self, group_id: str) -> bool:
        return bool(self.offsets.get(group_id))

    def group_ids(self) -> list[str]:
        return list(self.offsets)

    def get(self, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
        return self.offsets.get(group_id, {})

    def commit(self, group_id: str,
               offsets: Iterable[tuple[str, int, int, int, str | None]]) -> list[CommitPartitionResult]:
        """Store offsets that pass the per-partition checks; one store write for all."""
        now = self.clock.now_ms()
        results: list[CommitPartitionResult] = []
        accepted: list[tuple[str, int, OffsetAndMetadata]] = []
        for topic, partition, offset, leader_epoch, metadata in offsets:
            metadata = "" if metadata is None else metadata
            if len(metadata) > self.config.offset_metadata_max_size:
                error = Errors.OffsetMetadataTooLargeError.errno
            elif self.partition_exists is not None and not self.partition_exists(topic, partition):
                error = Errors.UnknownTopicOrPartitionError.errno
            else:
                error = NONE
                accepted.append((topic, partition, OffsetAndMetadata(
                    offset, -1 if leader_epoch is None else leader_epoch, metadata, now,
                    self._position(topic, partition, offset))))
            results.append(CommitPartitionResult(topic, partition, error))
        if not accepted:
            return results
        if self.store is not None:
            namespace = self.namespace_of(group_id)
            try:
                self.store.put_many(Checkpoint(
                    namespace, topic, group_id, partition, om.offset, om.position,
                    om.leader_epoch, om.metadata, om.commit_time_ms)
                    for topic, partition, om in accepted)
            except Exception as exc:
                # Nothing was written. A checkpoint larger than the store holds is refused as
                # Kafka refuses an offset commit too large for its log (no retry helps);
                # anything else (a full disk) the client retries.
                too_large = isinstance(exc, RecordTooLarge)
                if too_large:
                    log.warning("group %.64r (%d characters): %d checkpoints not written: %s",
                                group_id, len(group_id), len(accepted), exc)
                else:
                    log.exception("group %s: cannot write %d checkpoints", group_id, len(accepted))
                failed = {(t, p) for t, p, _ in accepted}
                unavailable = (Errors.InvalidCommitOffsetSizeError.errno if too_large
                               else Errors.CoordinatorNotAvailableError.errno)
                return [r._replace(error_code=unavailable) if (r.topic, r.partition) in failed
                        else r for r in results]
        group_offsets = self.offsets.setdefault(group_id, {})
        for topic, partition, om in accepted:
            group_offsets[(topic, partition)] = om
        if self.on_change is not None:
            self.on_change()
        return results

    def _position(self, topic: str, partition: int, offset: int) -> int | None:
        if self.position_resolver is None or offset < 0:
            return None
        try:
            return self.position_resolver(topic, partition, offset)
        except Exception as exc:  # the log may not know the offset (yet): not fatal
            log.debug("no Event Hubs position for %s-%d@%d: %r", topic, partition, offset, exc)
            return None

    def fetch(self, group_id: str,
              partitions: Iterable[TopicPartition] | None) -> list[OffsetFetchPartition]:
        group_offsets = self.offsets.get(group_id, {})
        wanted = sorted(group_offsets) if partitions is None else list(partitions)
        out = []
        for topic, partition in wanted:
            om = group_offsets.get((topic, partition))
            if om is None:
                out.append(OffsetFetchPartition(topic, partition, -1, -1, "", NONE))
            else:
                out.append(OffsetFetchPartition(topic, partition, om.offset, om.leader_epoch,
                                                om.metadata, NONE))
        return out

    def delete(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        group_offsets = self.offsets.get(group_id)
        if not group_offsets:
            return
        namespace = self.namespace_of(group_id)
        for topic, partition in partitions:
            if group_offsets.pop((topic, partition), None) is not None and self.store is not None:
                self.store.delete(namespace, group_id, topic, partition)
        if not group_offsets:
            del self.offsets[group_id]
        if self.on_change is not None:
            self.on_change()

    def forget_topic(self, topic: str) -> int:
        """Every group's offsets of a deleted ``topic`` (as Kafka drops a deleted
        partition's offsets, and Event Hubs a hub's checkpoints): a topic made again
        under the name starts with none. One store write for all; how many went."""
        gone = []
        for group_id in list(self.offsets):
            group_offsets = self.offsets[group_id]
            for tp in [tp for tp in group_offsets if tp[0] == topic]:
                del group_offsets[tp]
                gone.append((self.namespace_of(group_id), topic, group_id, tp[1]))
            if not group_offsets:
                del self.offsets[group_id]
        if gone:
            if self.store is not None:
                self.store.delete_many(gone)
            if self.on_change is not None:
                self.on_change()
        return len(gone)

    def delete_group(self, group_id: str) -> int:
        removed = len(self.offsets.pop(group_id, {}))
        if removed and self.store is not None:
            self.store.delete_group(self.namespace_of(group_id), group_id)
        if removed and self.on_change is not None:
            self.on_change()
        return removed

    def expire(self, group_id: str, base_time_ms: Callable[[OffsetAndMetadata], int],
               keep_topics: set[str] | frozenset[str] = frozenset()) -> list[TopicPartition]:
        """Remove offsets whose retention, counted from ``base_time_ms``, has passed."""
        now = self.clock.now_ms()
        retention = self.config.offsets_retention_ms
        expired = [tp for tp, om in self.offsets.get(group_id, {}).items()
                   if tp[0] not in keep_topics and now - base_time_ms(om) >= retention]
        if expired:
            log.info("group %s: %d committed offsets expired", group_id, len(expired))
            self.delete(group_id, expired)
        return expired

    def flush(self) -> None:
        if self.store is not None:
            self.store.flush()
