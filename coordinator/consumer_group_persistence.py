"""KIP-848 groups in the coordinator's record log: what is written when a group or
member changes or goes, the groups rebuilt from the records at start, and the groups
dropped as they emptied, remembered until the next offset cleanup.

Each change of a group's epochs, of a member's metadata, epoch or assignment, or of a
target assignment is written (``persist``; the records are
:mod:`coordinator.consumer_group_records`) before the heartbeat is answered; a heartbeat
that changes nothing writes nothing. A failed write is logged and retried at the next
change or heartbeat: the group is kept in memory as it is.

Kafka keeps an empty consumer group (Empty) until the offset cleanup that finds it
without offsets; until then an old member of it is an unknown member. kafka-wire drops
such a group at once and remembers it (a DROPPED record, so across a restart too) until
that cleanup, which writes its GROUP_GONE (all of them in one write when the store
can: ``persist_many``). A DeleteGroups of such a group deletes it at once (Kafka: an
Empty group), writing its GROUP_GONE.
"""
from __future__ import annotations

import logging
from typing import Callable

from kafka_wire.coordinator import consumer_group_records as records
from kafka_wire.coordinator.consumer_group import ConsumerGroup, ConsumerGroupMember

__all__ = ["ConsumerGroupPersistence", "Persist", "PersistMany"]

log = logging.getLogger(__name__)

_DROPPED_MAX = 10_000  # Bounds.kafka_groups_per_namespace's default
# persist(group_id, [[kind, *body], ...]) writes a group's records at once or raises.
Persist = Callable[[str, list], None]
# persist_many([(group_id, [[kind, *body], ...]), ...]): several groups' records in one write.
PersistMany = Callable[[list[tuple[str, list]]], None]


class ConsumerGroupPersistence:
    def __init__(self, persist: Persist | None, has_offsets: Callable[[str], bool],
                 persist_many: PersistMany | None = None) -> None:
        self.persist = persist  # None: nothing is kept (a coordinator without a store)
        self.persist_many = persist_many
        self.has_offsets = has_offsets
        # Groups dropped as they emptied since the last offset cleanup, oldest first.
        self._dropped: dict[str, None] = {}

    def load(self, groups: dict[str, dict]) -> tuple[list[ConsumerGroup], list[str]]:
        """The groups ``groups``' records rebuild, and the ids of those left out: empty,
        without offsets, their removal not written (the caller may write it now). Dropped
        groups are remembered, not rebuilt (unless they got offsets since)."""
        loaded, stale = [], []
        for group_id, group_records in groups.items():
            group = records.restore(group_id, group_records)
            if not group.members and not self.has_offsets(group_id):
                if records.dropped_epoch(group_records) is not None:
                    self._remember_dropped(group_id)  # gone, known until the next cleanup
                else:
                    stale.append(group_id)
                continue
            loaded.append(group)
        return loaded, stale

    def save(self, group: ConsumerGroup, *members: ConsumerGroupMember,
             described: bool = True) -> None:
        """Write what changed of ``group`` and ``members`` (nothing if nothing did;
        ``described=False``: their metadata did not)."""
        if self.persist is None:
            return
        if not described and len(members) == 1 and records.unchanged(group, members[0]):
            return  # the heartbeat of a member that is where it was (most of them)
        bodies, saved = records.changes(group, members, described)
        if not bodies:
            if saved is not None:
                saved()  # an equal target computed again: nothing to write
            return
        try:
            self.persist(group.group_id, bodies)
        except Exception as exc:
            log.warning("consumer group %s: state not written (kept in memory, retried at the "
                        "next heartbeat): %r", group.group_id, exc)
            return
        saved()

    def removed(self, group: ConsumerGroup, dropped: bool = False) -> None:
        """``group`` went; ``dropped``: it emptied (no offsets) and is remembered until
        the next cleanup."""
        if self.persist is not None:
            bodies: list[list] = []
            # group_epoch > 0: a group loaded from its DROPPED record has nothing saved yet.
            if (group.saved_head is not None or group.gone or group.group_epoch > 0
                    or any(m.saved_meta for m in group.members.values())):
                bodies.append([records.GROUP_GONE])
            if dropped:
                bodies.append([records.DROPPED, group.group_epoch])
            if bodies:
                self._write_removal(group.group_id, bodies)
        if dropped:
            self._remember_dropped(group.group_id)

    def _write_removal(self, group_id: str, bodies: list[list]) -> None:
        try:
            self.persist(group_id, bodies)
        except Exception:
            log.exception("consumer group %s: cannot write its removal", group_id)

    def _remember_dropped(self, group_id: str) -> None:
        self._dropped[group_id] = None
        if len(self._dropped) > _DROPPED_MAX:
            oldest = next(iter(self._dropped))
            del self._dropped[oldest]
            if self.persist is not None:
                self._write_removal(oldest, [[records.GROUP_GONE]])

    def was_dropped(self, group_id: str) -> bool:
        return group_id in self._dropped

    def rejoined(self, group_id: str) -> None:
        """A member joined ``group_id`` again: its first GROUP record takes its DROPPED
        record away."""
        if self._dropped:
            self._dropped.pop(group_id, None)

    def delete_dropped(self, group_id: str) -> bool:
        """DeleteGroups of a group dropped as it emptied (Kafka: Empty, so deleted): it is
        forgotten now, not at the next cleanup. False: it was not dropped."""
        if group_id not in self._dropped:
            return False
        del self._dropped[group_id]
        if self.persist is not None:
            self._write_removal(group_id, [[records.GROUP_GONE]])
        return True

    def forget_dropped(self) -> None:
        """An offset cleanup ran: Kafka would have deleted those empty groups now."""
        dropped, self._dropped = self._dropped, {}
        if self.persist is None or not dropped:
            return
        if self.persist_many is None:
            for group_id in dropped:
                self._write_removal(group_id, [[records.GROUP_GONE]])
            return
        try:  # one write (one fsync) for up to _DROPPED_MAX groups
            self.persist_many([(group_id, [[records.GROUP_GONE]]) for group_id in dropped])
        except Exception:
            log.exception("cannot write the removal of %d consumer groups dropped as they "
                          "emptied", len(dropped))
