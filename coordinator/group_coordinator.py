"""GroupCoordinator: the one object API handlers talk to about groups.

It routes each request to the classic group protocol
(:class:`~coordinator.group_metadata_manager.GroupMetadataManager`), KIP-848
consumer groups (:class:`~coordinator.consumer_group_manager.ConsumerGroupManager`)
and committed offsets
(:class:`~coordinator.offset_metadata_manager.OffsetMetadataManager`), loads
committed offsets from the checkpoint store when it is built, and expires
offsets on a clock timer.

JoinGroup and SyncGroup return asyncio futures (call them on the event loop
thread; the state changes happen during the call, the answer may come
later); everything else answers at once. Usage::

    coordinator = GroupCoordinator(
        SystemClock(), GroupCoordinatorConfig(), store=EmbeddedCheckpointStore(dir),
        namespace="emulatorNs1",
        # Event Hubs byte offset of the record at (topic, partition, offset), or None
        position_resolver=lambda topic, partition, offset: ...,
        # commits to unknown partitions get UNKNOWN_TOPIC_OR_PARTITION
        partition_exists=lambda topic, partition: ...,
        # KIP-848 only: (topic id, partition count) or None
        topic_metadata=lambda topic: ...)
    result = await coordinator.join_group("g", "", None, "consumer", [("range", meta)],
                                          10_000, 30_000, "client-1", "/127.0.0.1", 9)
    ...
    coordinator.close()   # the store is the caller's to close
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, Callable, Collection, Iterable

import kafka.errors as Errors

from kafka_wire.coordinator import consumer_group_records, consumer_protocol
from kafka_wire.coordinator.checkpoints import CheckpointStore
from kafka_wire.coordinator.classic_group import ClassicGroupState as S
from kafka_wire.coordinator.clock import Clock, SystemClock
from kafka_wire.coordinator.config import GroupCoordinatorConfig
from kafka_wire.coordinator.consumer_group import HeartbeatResult
from kafka_wire.coordinator.consumer_group_manager import ConsumerGroupManager
from kafka_wire.coordinator.group_metadata_manager import GroupMetadataManager
from kafka_wire.coordinator.offset_metadata_manager import OffsetMetadataManager, PositionResolver
from kafka_wire.coordinator.results import (
    CommitPartitionResult, DeleteGroupResult, GroupDescription, GroupListing, JoinResult,
    LeaveResult, OffsetDeleteResult, OffsetFetchResult, SyncResult,
)

__all__ = ["GroupCoordinator"]

log = logging.getLogger(__name__)

NONE = Errors.NoError.errno
TopicMetadata = Callable[[str], "tuple[uuid.UUID, int] | None"]


def _resolver(future: asyncio.Future) -> Callable[[Any], None]:
    def respond(result: Any) -> None:
        # The client may have gone away (its handler cancelled the future).
        if not future.done():
            future.set_result(result)
    return respond


class GroupCoordinator:
    def __init__(self, clock: Clock | None = None, config: GroupCoordinatorConfig | None = None,
                 *, store: CheckpointStore | None = None,
                 namespace: str | Callable[[str], str] = "default",
                 position_resolver: PositionResolver | None = None,
                 partition_exists: Callable[[str, int], bool] | None = None,
                 topic_metadata: TopicMetadata | None = None,
                 list_topics: Callable[[], Any] | None = None) -> None:
        self.clock = clock if clock is not None else SystemClock()
        self.config = config if config is not None else GroupCoordinatorConfig()
        namespace_of = namespace if callable(namespace) else (lambda _group, ns=namespace: ns)
        self.offsets = OffsetMetadataManager(self.config, self.clock, store, namespace_of,
                                             position_resolver, partition_exists)
        self.classic = GroupMetadataManager(self.config, self.clock,
                                            has_offsets=self.offsets.has_offsets)
        def persist(group_id: str, bodies: list) -> None:
            store.write_group_records(namespace_of(group_id), group_id, bodies)

        def persist_many(groups: list) -> None:
            store.write_many_group_records(
                [(namespace_of(group_id), group_id, bodies) for group_id, bodies in groups])
        self.consumer = ConsumerGroupManager(self.config, self.clock,
                                             topic_metadata or (lambda _topic: None),
                                             has_offsets=self.offsets.has_offsets,
                                             list_topics=list_topics or (lambda: ()),
                                             persist=persist if store is not None else None,
                                             persist_many=persist_many if store is not None
                                             else None)
        self._cleanup_timer: Any = None
        # Groups open transactions may commit offsets to (the transaction coordinator's
        # groups_in_transactions): the cleanup keeps them. Set by TxnOffsetCommit.
        self.groups_in_transactions: Callable[[], Collection[str]] = frozenset
        self._active = True
        now = self.clock.now_ms()
        # KIP-848 groups come back with their members, epochs and assignments (Kafka's
        # group records in __consumer_offsets); classic members are not kept.
        with_offsets = self.offsets.load()
        consumer_groups = {} if store is None else {
            group_id: recs for (ns, group_id), recs in store.group_records().items()
            if namespace_of(group_id) == ns}
        for group_id in self.consumer.load(consumer_groups):
            if not getattr(store, "read_only", False):  # (kafka-wire groups reads offline)
                try:  # empty, without offsets: its removal was not written (a full disk)
                    persist(group_id, [[consumer_group_records.GROUP_GONE]])
                except Exception as exc:
                    log.warning("consumer group %s: cannot write its removal: %r", group_id, exc)
        for group_id in with_offsets:
            if group_id in consumer_groups:
                continue
            # Classic members are not persisted: a loaded group is Empty until they rejoin.
            self.classic.get_or_create_group(group_id).loaded_at_ms = now

    # -- life cycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Start the offset-expiry timer (also started by the first request)."""
        if self._cleanup_timer is None and self._active:
            try:
                self._cleanup_timer = self.clock.call_later(
                    self.config.offsets_retention_check_interval_ms, self._run_cleanup)
                self.consumer.arm()  # loaded members' sessions start now
            except RuntimeError:
                pass  # SystemClock outside a running loop: the next request retries

    def close(self) -> None:
        """Answer waiting requests with NOT_COORDINATOR, stop timers, flush the store."""
        if not self._active:
            return
        self._active = False
        if self._cleanup_timer is not None:
            self._cleanup_timer.cancel()
            self._cleanup_timer = None
        self.classic.shutdown()
        self.consumer.shutdown()
        self.offsets.flush()

    def _run_cleanup(self) -> None:
        self._cleanup_timer = None
        try:
            self.cleanup_expired_offsets()
        finally:
            self.start()

    def _unavailable(self) -> int | None:
        return None if self._active else Errors.CoordinatorNotAvailableError.errno

    # -- classic group protocol ----------------------------------------------------------

    def join_group(self, group_id: str, member_id: str, group_instance_id: str | None,
                   protocol_type: str, protocols: list[tuple[str, bytes]],
                   session_timeout_ms: int, rebalance_timeout_ms: int, client_id: str,
                   client_host: str, version: int,
                   reason: str | None = None) -> "asyncio.Future[JoinResult]":
        future = asyncio.get_running_loop().create_future()
        self.start()
        if self.consumer.has_group(group_id):
            if not self.consumer.is_empty(group_id):
                # Online migration of a live consumer group is not emulated.
                future.set_result(JoinResult.error(
                    Errors.InconsistentGroupProtocolError.errno, member_id))
                return future
            self.consumer.remove_group(group_id)  # offsets stay, keyed by group id
        self.classic.join_group(group_id, member_id, group_instance_id, protocol_type, protocols,
                                session_timeout_ms, rebalance_timeout_ms, client_id, client_host,
                                version, _resolver(future), reason)
        return future

    def sync_group(self, group_id: str, generation_id: int, member_id: str,
                   group_instance_id: str | None, protocol_type: str | None,
                   protocol_name: str | None,
                   assignments: Iterable[tuple[str, bytes]]) -> "asyncio.Future[SyncResult]":
        future = asyncio.get_running_loop().create_future()
        self.classic.sync_group(group_id, generation_id, member_id, group_instance_id,
                                protocol_type, protocol_name, assignments, _resolver(future))
        return future

    def heartbeat(self, group_id: str, generation_id: int, member_id: str,
                  group_instance_id: str | None = None) -> int:
        return self.classic.heartbeat(group_id, generation_id, member_id, group_instance_id)

    def leave_group(self, group_id: str,
                    members: Iterable[tuple[str, str | None]]) -> LeaveResult:
        return self.classic.leave_group(group_id, members)

    # -- KIP-848 consumer groups ---------------------------------------------------------

    def consumer_group_heartbeat(self, group_id: str, member_id: str, member_epoch: int,
                                 instance_id: str | None = None, rack_id: str | None = None,
                                 rebalance_timeout_ms: int = -1,
                                 subscribed_topic_names: list[str] | None = None,
                                 server_assignor: str | None = None,
                                 topic_partitions_owned: list[tuple[Any, list[int]]] | None = None,
                                 client_id: str = "", client_host: str = "",
                                 subscribed_topic_regex: str | None = None,
                                 topic_visible: Callable[[str], bool] | None = None
                                 ) -> HeartbeatResult:
        self.start()
        if unavailable := self._unavailable():
            return HeartbeatResult.error(unavailable)
        classic = self.classic.get_group(group_id)
        if classic is not None and (classic.members or classic.pending_members):
            # Online migration of a live classic group (KIP-848) is not emulated.
            return HeartbeatResult.error(Errors.GroupIdNotFoundError.errno,
                                         f"group {group_id} is a classic group with members")
        result = self.consumer.heartbeat(group_id, member_id, member_epoch, instance_id, rack_id,
                                         rebalance_timeout_ms, subscribed_topic_names,
                                         server_assignor, topic_partitions_owned,
                                         client_id, client_host, subscribed_topic_regex,
                                         topic_visible)
        if classic is not None and self.consumer.has_group(group_id):
            # An empty classic group (offsets only) becomes a consumer group.
            self.classic.delete_group(group_id)
        return result

    def describe_consumer_groups(self, group_ids: Iterable[str]) -> list:
        return [self.consumer.describe(group_id) for group_id in group_ids]

    # -- offsets -------------------------------------------------------------------------

    def commit_offsets(self, group_id: str, generation_id: int, member_id: str,
                       group_instance_id: str | None,
                       offsets: Iterable[tuple[str, int, int, int, str | None]],
                       api_version: int | None = None) -> list[CommitPartitionResult]:
        """OffsetCommit. ``generation_id`` is the member epoch for consumer groups.
        ``api_version``: the request's (None: a caller of its own, answered as v8)."""
        offsets = list(offsets)
        self.start()

        def all_(error: int) -> list[CommitPartitionResult]:
            return [CommitPartitionResult(t, p, error) for t, p, *_ in offsets]

        if unavailable := self._unavailable():
            return all_(unavailable)
        if group_id is None:
            return all_(Errors.InvalidGroupIdError.errno)
        if self.consumer.has_group(group_id):
            error = self.consumer.validate_offset_commit(group_id, member_id, generation_id,
                                                         api_version)
            return all_(error) if error is not None else self.offsets.commit(group_id, offsets)
        group = self.classic.get_group(group_id)
        if group is None:
            if generation_id >= 0:
                if self.consumer.was_dropped(group_id):
                    # A KIP-848 group that went with its last member: Kafka keeps it (Empty)
                    # until its next cleanup, and its ConsumerGroup answers a member it
                    # does not know UNKNOWN_MEMBER_ID (Java: CommitFailedException).
                    return all_(Errors.UnknownMemberIdError.errno)
                # A commit from an old generation (or member epoch) of a group that is
                # gone: Kafka's OffsetMetadataManager answers GROUP_ID_NOT_FOUND from v9
                # on, ILLEGAL_GENERATION before.
                if api_version is not None and api_version >= 9:
                    return all_(Errors.GroupIdNotFoundError.errno)
                return all_(Errors.IllegalGenerationError.errno)
            # Not using group management: the group exists only for its offsets.
            group = self.classic.get_or_create_group(group_id)
        error = self.classic.validate_offset_commit(group, generation_id, member_id,
                                                    group_instance_id)
        results = all_(error) if error is not None else self.offsets.commit(group_id, offsets)
        self.classic.maybe_remove_group(group)
        return results

    def fetch_offsets(self, group_id: str, partitions: Iterable[tuple[str, int]] | None,
                      require_stable: bool = False, *, member_id: str | None = None,
                      member_epoch: int | None = None) -> OffsetFetchResult:
        """OffsetFetch; ``partitions=None`` means every committed partition.

        ``require_stable`` is answered by the Kafka front end
        (apis/offset_fetch): the pending transactional offsets are the
        transaction coordinator's, which marks those partitions
        UNSTABLE_OFFSET_COMMIT.
        """
        if unavailable := self._unavailable():
            return OffsetFetchResult(unavailable, [])
        if group_id is None:
            return OffsetFetchResult(Errors.InvalidGroupIdError.errno, [])
        if member_epoch is not None and member_epoch >= 0 and self.consumer.has_group(group_id):
            error = self.consumer.validate_offset_fetch(group_id, member_id or "", member_epoch)
            if error is not None:
                return OffsetFetchResult(error, [])
        return OffsetFetchResult(NONE, self.offsets.fetch(
            group_id, None if partitions is None else list(partitions)))

    def delete_offsets(self, group_id: str,
                       partitions: Iterable[tuple[str, int]]) -> OffsetDeleteResult:
        partitions = list(partitions)
        if unavailable := self._unavailable():
            return OffsetDeleteResult(unavailable, [])
        if self.consumer.has_group(group_id):
            subscribed = self.consumer.subscribed_topics(group_id)
            result = self._delete_offsets(group_id, partitions, lambda t: t in subscribed)
            self.consumer.maybe_remove_group(group_id)
            return result
        group = self.classic.get_group(group_id)
        if group is None:
            return OffsetDeleteResult(Errors.GroupIdNotFoundError.errno, [])
        if group.is_(S.EMPTY):
            result = self._delete_offsets(group_id, partitions, lambda t: False)
        elif group.protocol_type == consumer_protocol.PROTOCOL_TYPE:
            result = self._delete_offsets(group_id, partitions, group.is_subscribed_to_topic)
        else:
            return OffsetDeleteResult(Errors.NonEmptyGroupError.errno, [])
        self.classic.maybe_remove_group(group)
        return result

    def _delete_offsets(self, group_id: str, partitions: list[tuple[str, int]],
                        subscribed: Callable[[str], bool]) -> OffsetDeleteResult:
        exists = self.offsets.partition_exists
        results, eligible = [], []
        for topic, partition in partitions:
            if exists is not None and not exists(topic, partition):
                error = Errors.UnknownTopicOrPartitionError.errno
            elif subscribed(topic):
                error = Errors.GroupSubscribedToTopicError.errno
            else:
                error = NONE
                eligible.append((topic, partition))
            results.append(CommitPartitionResult(topic, partition, error))
        self.offsets.delete(group_id, eligible)
        return OffsetDeleteResult(NONE, results)

    def forget_topic(self, topic: str) -> int:
        """A topic was deleted: every group's committed offsets of it go (the groups
        that held only those go with them, once empty, as after an expiry)."""
        removed = self.offsets.forget_topic(topic)
        if removed:
            for group_id in self.group_ids():
                if self.consumer.has_group(group_id):
                    self.consumer.maybe_remove_group(group_id)
                elif (group := self.classic.get_group(group_id)) is not None:
                    self.classic.maybe_remove_group(group)
        return removed

    def cleanup_expired_offsets(self) -> int:
        """One pass of offset expiry (Kafka's cleanupGroupMetadata); returns how many went."""
        removed = 0
        for group_id in self.offsets.group_ids():
            group = self.classic.get_group(group_id)
            keep: frozenset[str] | set[str] = frozenset()
            if self.consumer.has_group(group_id):
                if not self.consumer.is_empty(group_id):
                    keep = self.consumer.subscribed_topics(group_id)
                base = _commit_time
            elif group is None:
                base = _commit_time
            elif group.protocol_type is not None and group.is_(S.EMPTY):
                # Retention counts from the moment the last member left.
                since = group.state_timestamp_ms
                base = lambda om, since=since: since  # noqa: E731
            elif group.protocol_type is None:
                # Offsets-only group: each offset counts from its commit (or
                # from the restart that reloaded it: we do not persist when
                # the group emptied, so never expire earlier than retention
                # after a load).
                floor = group.loaded_at_ms or 0
                base = lambda om, floor=floor: max(om.commit_time_ms, floor)  # noqa: E731
            elif (group.protocol_type == consumer_protocol.PROTOCOL_TYPE and group.is_(S.STABLE)
                  and group.subscribed_topics is not None):
                keep, base = group.subscribed_topics, _commit_time
            else:
                continue
            removed += len(self.offsets.expire(group_id, base, keep))
            if self.consumer.has_group(group_id):
                self.consumer.maybe_remove_group(group_id)
            elif group is not None:
                self.classic.maybe_remove_group(group)
        # Kafka visits every group, not only those with offsets: an Empty one with none
        # and no open transaction naming it goes (one TxnOffsetCommit made, then aborted).
        held = None
        for group in [g for g in self.classic.groups.values() if not self.offsets.has_offsets(g.group_id)]:
            if held is None:
                held = self.groups_in_transactions()
            if group.group_id not in held:
                self.classic.maybe_remove_group(group)
        self.consumer.forget_dropped()
        return removed

    # -- groups --------------------------------------------------------------------------

    def describe_groups(self, group_ids: Iterable[str]) -> list[GroupDescription]:
        """DescribeGroups. A group that does not exist (or is not a classic group)
        gets GROUP_ID_NOT_FOUND and state Dead; before v6 handlers send NONE."""
        out = []
        for group_id in group_ids:
            if unavailable := self._unavailable():
                out.append(GroupDescription(group_id, unavailable, "", "", "", []))
            else:
                out.append(self.classic.describe_group(group_id))
        return out

    def list_groups(self, states_filter: Iterable[str] | None = None,
                    types_filter: Iterable[str] | None = None) -> list[GroupListing]:
        states = {s.lower() for s in states_filter or ()}
        types = {t.lower() for t in types_filter or ()}
        listings = [GroupListing(g.group_id, g.protocol_type or "", str(g.state), "classic")
                    for g in self.classic.groups.values()]
        listings += self.consumer.list_groups()
        return [g for g in listings
                if (not states or g.state.lower() in states)
                and (not types or g.group_type.lower() in types)]

    def delete_groups(self, group_ids: Iterable[str]) -> list[DeleteGroupResult]:
        out = []
        for group_id in group_ids:
            if unavailable := self._unavailable():
                error = unavailable
            elif self.consumer.has_group(group_id):
                error = self.consumer.delete_group(group_id)
            else:
                error = self.classic.delete_group(group_id)
                if (error in (NONE, Errors.GroupIdNotFoundError.errno)
                        and self.consumer.delete_dropped(group_id)):
                    # A KIP-848 group dropped as it emptied: Kafka still has it, Empty,
                    # and deletes it; its old members then find no group.
                    error = NONE
            if error == NONE:
                self.offsets.delete_group(group_id)
            out.append(DeleteGroupResult(group_id, error))
        return out

    def group_ids(self) -> list[str]:
        return list(self.classic.groups) + self.consumer.group_ids()

    def force_rebalance(self, group_id: str) -> bool:
        """Start a rebalance now (fault injection): members must rejoin, as
        when a new member arrives. False if the group cannot rebalance."""
        group = self.classic.get_group(group_id)
        if group is None or not group.can_rebalance():
            return False
        self.classic._maybe_prepare_rebalance(group, "forced by a test fault")
        return True


def _commit_time(om) -> int:
    return om.commit_time_ms
