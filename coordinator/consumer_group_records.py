"""The records that keep KIP-848 consumer groups across a restart, written to the
coordinator's record log next to the checkpoints (as Kafka writes its
ConsumerGroupMetadata, ConsumerGroupMemberMetadata, target-assignment and
current-member-assignment records to ``__consumer_offsets``).

Each record is a msgpack list ``[kind, namespace, group, *body]``; the last
record of a key wins, tombstones remove:

=========  ==============================================================================
kind        body
=========  ==============================================================================
GROUP       group epoch, assignment epoch, [[topic, topic id (16 bytes), partitions]]
GROUP_GONE  (nothing): the group's members and assignments go (its offsets stay)
MEMBER      member id, instance id, rack id, client id, client host, rebalance timeout,
            [subscribed names], subscribed regex, server assignor, [topics the regex
            resolved to] (None without a regex)
MEMBER_GONE member id: its metadata, current and target assignment go
CURRENT     member id, member epoch, previous epoch, state, [[topic, [partitions]]] assigned,
            [[topic, [partitions]]] being revoked
TARGET      member id, [[topic, [partitions]]]
PIECE       member id, kind (CURRENT or TARGET), field index, [[topic, [partitions]]]
DROPPED     group epoch: the group emptied without offsets and went (after its GROUP_GONE);
            Kafka keeps it Empty until the next offset cleanup, which writes GROUP_GONE.
            A GROUP record (the group joined again) takes it away.
=========  ==============================================================================

One member's assignment over one record (tens of thousands of partitions) is written
as PIECEs completed by its own record in the same write; pieces with no record after
them (a torn write) are not read, and the log is cut before them (:class:`GroupRecords`).
Timers are not kept: a loaded member's session starts when the coordinator starts.
"""
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, Iterable

from kafka_wire.coordinator.record_log import MAX_RECORD, frame, framed, packed

if TYPE_CHECKING:
    from kafka_wire.coordinator.consumer_group import ConsumerGroup, ConsumerGroupMember

__all__ = ["GROUP", "GROUP_GONE", "MEMBER", "MEMBER_GONE", "CURRENT", "TARGET", "PIECE", "DROPPED",
           "KINDS", "dropped_epoch",
           "GroupRecords", "encode", "validate", "partitions_of", "partition_list",
           "MEMBER_RECORD_MAX", "changes", "unchanged", "restore", "member_record_size_ok"]

GROUP, GROUP_GONE, MEMBER, MEMBER_GONE, CURRENT, TARGET, PIECE, DROPPED = range(4, 12)
KINDS = frozenset(range(4, 12))
_PIECE_BYTES = MAX_RECORD // 4
# A member's metadata (ids, subscription) must fit one record with room to spare; a
# heartbeat that would make it larger is refused before anything changes.
MEMBER_RECORD_MAX = MAX_RECORD // 2
_PARTITION_FIELDS = {CURRENT: (7, 8), TARGET: (4,)}  # indexes in the full record


def partition_list(partitions: dict[str, set[int]]) -> list:
    return [[t, sorted(ps)] for t, ps in sorted(partitions.items()) if ps]


def partitions_of(items: list) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for topic, ps in items:
        out.setdefault(topic, set()).update(ps)
    return out


def encode(fields: list) -> list[bytes]:
    """The framed records of one group record: one, or (an assignment over one record)
    PIECEs then the record; RecordTooLarge, writing nothing, if that cannot be done."""
    payload = packed(fields)
    if len(payload) <= MAX_RECORD or fields[0] not in _PARTITION_FIELDS:
        return [framed(payload)]
    kind, ns, group, member_id = fields[:4]
    head = list(fields)
    out: list[bytes] = []
    for index in _PARTITION_FIELDS[kind]:
        items, head[index] = head[index], []
        chunk: list = []
        size = 0
        for item in items:
            item_size = len(packed(item))
            if chunk and size + item_size > _PIECE_BYTES:
                out.append(frame([PIECE, ns, group, member_id, kind, index, chunk]))
                chunk, size = [], 0
            chunk.append(item)
            size += item_size
        if chunk:
            out.append(frame([PIECE, ns, group, member_id, kind, index, chunk]))
    out.append(frame(head))
    return out


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _opt_str(v: Any) -> bool:
    return v is None or isinstance(v, str)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(i, str) for i in v)


def _partitions(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(i, list) and len(i) == 2 and _str(i[0]) and isinstance(i[1], list)
        and all(_int(p) for p in i[1]) for i in v)


def _topics(v: Any) -> bool:
    return isinstance(v, list) and all(
        isinstance(i, list) and len(i) == 3 and _str(i[0]) and isinstance(i[1], bytes)
        and len(i[1]) == 16 and _int(i[2]) for i in v)


def validate(fields: list) -> list:
    """``fields`` if it is a group record as written; ValueError otherwise (the log ends
    there, as at a torn write)."""
    kind, n = fields[0], len(fields)
    ok = n >= 3 and _str(fields[1]) and _str(fields[2])
    if kind == GROUP:
        ok = ok and n == 6 and _int(fields[3]) and _int(fields[4]) and _topics(fields[5])
    elif kind == GROUP_GONE:
        ok = ok and n == 3
    elif kind == MEMBER:
        ok = (ok and n == 13 and _str(fields[3]) and all(_opt_str(v) for v in fields[4:6])
              and _str(fields[6]) and _str(fields[7]) and _int(fields[8])
              and _strings(fields[9]) and _opt_str(fields[10]) and _opt_str(fields[11])
              and (fields[12] is None or _strings(fields[12])))
    elif kind == MEMBER_GONE:
        ok = ok and n == 4 and _str(fields[3])
    elif kind == CURRENT:
        ok = (ok and n == 9 and _str(fields[3]) and _int(fields[4]) and _int(fields[5])
              and _str(fields[6]) and _partitions(fields[7]) and _partitions(fields[8]))
    elif kind == TARGET:
        ok = ok and n == 5 and _str(fields[3]) and _partitions(fields[4])
    elif kind == DROPPED:
        ok = ok and n == 4 and _int(fields[3])
    elif kind == PIECE:
        ok = (ok and n == 7 and _str(fields[3]) and fields[4] in _PARTITION_FIELDS
              and fields[5] in _PARTITION_FIELDS[fields[4]] and _partitions(fields[6]))
    else:
        ok = False
    if not ok:
        raise ValueError(f"malformed consumer group record of kind {kind!r}")
    return fields


class GroupRecords:
    """The live group records of one log, by (namespace, group) then by key:
    (GROUP | DROPPED, "") or (MEMBER | CURRENT | TARGET, member id). Fed the records in log
    order (:meth:`apply`); ``pending_since`` is where unfinished PIECEs start (the
    reader cuts the log there), None when every piece found its record."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str], dict[tuple[int, str], list]] = {}
        self.live = 0
        self._pieces: dict[tuple, dict[int, list]] = {}
        self.pending_since: int | None = None

    def apply(self, fields: list, position: int | None = None) -> None:
        kind, ns, group = fields[0], fields[1], fields[2]
        if kind == PIECE:
            key = (ns, group, fields[3], fields[4])
            if not self._pieces and position is not None:
                self.pending_since = position
            self._pieces.setdefault(key, {}).setdefault(fields[5], []).extend(fields[6])
            return
        if kind in _PARTITION_FIELDS and self._pieces:
            got = self._pieces.pop((ns, group, fields[3], kind), None)
            if got:
                fields = list(fields)
                for index, items in got.items():
                    fields[index] = items + fields[index]
            if not self._pieces:
                self.pending_since = None
        records = self.groups.get((ns, group))
        if kind == GROUP_GONE:
            if records is not None:
                self.live -= len(records)
                del self.groups[(ns, group)]
            return
        if kind == MEMBER_GONE:
            if records is not None:
                for k in (MEMBER, CURRENT, TARGET):
                    if records.pop((k, fields[3]), None) is not None:
                        self.live -= 1
            return
        if records is None:
            records = self.groups[(ns, group)] = {}
        elif kind == GROUP and records.pop((DROPPED, ""), None) is not None:
            self.live -= 1  # the group was joined again
        key = (kind, fields[3] if kind in (MEMBER, CURRENT, TARGET) else "")
        if key not in records:
            self.live += 1
        records[key] = fields

    def drop_pending(self) -> None:
        self._pieces.clear()
        self.pending_since = None

    def apply_all(self, records: Iterable[list]) -> None:
        for fields in records:
            self.apply(fields)

    def snapshot(self) -> list[list]:
        """Every live record (for a compaction)."""
        return [f for records in self.groups.values() for f in records.values()]


def topics_field(topics: dict[str, tuple[uuid.UUID, int]]) -> list:
    return [[t, tid.bytes, n] for t, (tid, n) in sorted(topics.items())]


def topics_from(items: list) -> dict[str, tuple[uuid.UUID, int]]:
    return {t: (uuid.UUID(bytes=tid), n) for t, tid, n in items}


def member_record_size_ok(strings: Iterable[str | None], names: list[str] | None) -> bool:
    """Whether a member's metadata surely fits MEMBER_RECORD_MAX (UTF-8 is at most 4 bytes
    a character; msgpack adds at most 5 bytes a string); exact only when in doubt."""
    total = sum(len(s) for s in strings if s) + sum(len(n) for n in names or ())
    count = len(names or ()) + 8
    if 4 * total + 5 * count + 64 <= MEMBER_RECORD_MAX:
        return True
    size = sum(len(s.encode("utf-8", "surrogatepass")) for s in strings if s)
    size += sum(len(n.encode("utf-8", "surrogatepass")) for n in names or ())
    return size + 5 * count + 64 <= MEMBER_RECORD_MAX


# -- groups and members <-> records ---------------------------------------------------------

def unchanged(group: "ConsumerGroup", m: "ConsumerGroupMember") -> bool:
    """True if the log surely holds ``group`` and ``m`` as they are, ``m``'s metadata aside
    (identity checks only: the heartbeat path's fast answer; False means "look closer")."""
    head, current = group.saved_head, m.saved_current
    return (not group.gone and group.target is group.saved_target_of
            and current is not None and head is not None and current[3] is m.assigned
            and current[4] is m.revoking and current[0] == m.member_epoch
            and current[1] == m.previous_member_epoch and current[2] == m.state
            and head[0] == group.group_epoch and head[1] == group.assignment_epoch
            and group.saved_target.get(m.member_id) is group.target.get(m.member_id))


def changes(group: "ConsumerGroup", members: Iterable["ConsumerGroupMember"],
            described: bool = True) -> tuple[list, Any]:
    """The records ``group`` and ``members`` need so the log matches them, and a function
    to call once they are written (it marks them saved). Nothing changed: no records
    (and, unless only the target dict was replaced by an equal one, no function).
    ``described=False``: the members' metadata is known unchanged (not compared)."""
    bodies: list[list] = []
    done: list = []
    for member_id in sorted(group.gone):
        bodies.append([MEMBER_GONE, member_id])
    head = group.saved_head
    if head is None or head[0] != group.group_epoch or head[1] != group.assignment_epoch:
        head = (group.group_epoch, group.assignment_epoch)
        bodies.append([GROUP, *head, topics_field(group.topics)])
    target_changed = group.target is not group.saved_target_of
    saved_target = group.saved_target
    if group.gone:  # their tombstones take their targets with them
        saved_target = {k: v for k, v in saved_target.items() if k not in group.gone}
    new_target: dict[str, Any] = {}
    for m in members:
        if m.member_id not in group.members:
            continue
        if described or m.saved_meta is None:
            meta = m.meta()
            if meta != m.saved_meta:
                bodies.append([MEMBER, *meta])
                done.append((m, "saved_meta", meta))
        saved = m.saved_current
        if (saved is None or saved[0] != m.member_epoch or saved[1] != m.previous_member_epoch
                or saved[2] != m.state or not (saved[3] is m.assigned or saved[3] == m.assigned)
                or not (saved[4] is m.revoking or saved[4] == m.revoking)):
            current = (m.member_epoch, m.previous_member_epoch, m.state, m.assigned, m.revoking)
            bodies.append([CURRENT, m.member_id, *current[:3], partition_list(m.assigned),
                           partition_list(m.revoking)])
            done.append((m, "saved_current", current))
        if not target_changed:
            target = group.target.get(m.member_id)
            was = saved_target.get(m.member_id)
            if was is not target and target is not None and was != target:
                bodies.append([TARGET, m.member_id, partition_list(target)])
                new_target[m.member_id] = target
    if target_changed:
        for member_id, target in group.target.items():
            was = saved_target.get(member_id)
            if was is not target and was != target:
                bodies.append([TARGET, member_id, partition_list(target)])
                new_target[member_id] = target
    if not bodies and not target_changed:
        return bodies, None
    gone = set(group.gone)
    target_of = group.target

    def saved() -> None:
        group.gone -= gone
        group.saved_head = head
        saved_target.update(new_target)
        group.saved_target = saved_target
        group.saved_target_of = target_of
        for member, slot, value in done:
            setattr(member, slot, value)
    return bodies, saved


def dropped_epoch(records: dict[tuple[int, str], list]) -> int | None:
    """The group epoch a group's DROPPED record keeps; None: not dropped."""
    marker = records.get((DROPPED, ""))
    return None if marker is None else marker[3]


def restore(group_id: str, records: dict[tuple[int, str], list]) -> "ConsumerGroup":
    """A group as its records left it (timers are the caller's to start); a dropped one
    Empty in the epoch it went in."""
    from kafka_wire.coordinator.consumer_group import ConsumerGroup, ConsumerGroupMember
    group = ConsumerGroup(group_id)
    head = records.get((GROUP, ""))
    dropped = dropped_epoch(records)
    if dropped is not None and head is None:
        group.group_epoch = group.assignment_epoch = dropped
    if head is not None:
        group.group_epoch, group.assignment_epoch = head[3], head[4]
        group.topics = topics_from(head[5])
        group.saved_head = (head[3], head[4])
    for (kind, member_id), f in records.items():
        if kind != MEMBER:
            continue
        m = ConsumerGroupMember(member_id, f[4])
        (m.rack_id, m.client_id, m.client_host, m.rebalance_timeout_ms, m.subscribed_names,
         m.subscribed_regex, m.server_assignor) = f[5:12]
        m.subscribed = f[12] if m.subscribed_regex else m.subscribed_names
        m.saved_meta = m.meta()
        group.members[member_id] = m
        if m.instance_id is not None:
            group.static_members[m.instance_id] = member_id
    for (kind, member_id), f in records.items():
        m = group.members.get(member_id)
        if kind == CURRENT and m is not None:
            m.member_epoch, m.previous_member_epoch, m.state = f[4], f[5], f[6]
            group.set_ownership(m, partitions_of(f[7]), partitions_of(f[8]))
            m.saved_current = (m.member_epoch, m.previous_member_epoch, m.state, m.assigned,
                               m.revoking)
        elif kind == TARGET and m is not None:
            group.target[member_id] = partitions_of(f[4])
    group.saved_target = dict(group.target)
    group.saved_target_of = group.target
    return group
