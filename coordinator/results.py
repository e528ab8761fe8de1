"""Plain results the coordinator hands back to API handlers.

They carry Kafka error codes (``kafka.errors.X.errno``) and Python values;
the handler turns them into response messages. Tuples, so that callers may
unpack them like the lists of tuples they stand for.
"""
from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "JoinMember", "JoinResult", "SyncResult", "LeaveMember", "LeaveResult",
    "CommitPartitionResult", "OffsetFetchPartition", "OffsetFetchResult", "MemberDescription",
    "GroupDescription", "GroupListing", "DeleteGroupResult", "OffsetDeleteResult",
    "NO_GENERATION", "NO_LEADER", "UNKNOWN_MEMBER_ID",
]

NO_GENERATION = -1
NO_LEADER = ""
UNKNOWN_MEMBER_ID = ""


class JoinMember(NamedTuple):
    member_id: str
    group_instance_id: str | None
    metadata: bytes


class JoinResult(NamedTuple):
    error_code: int
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader: str
    member_id: str
    members: list[JoinMember]  # filled for the leader only
    skip_assignment: bool = False

    @classmethod
    def error(cls, error_code: int, member_id: str = UNKNOWN_MEMBER_ID) -> "JoinResult":
        return cls(error_code, NO_GENERATION, None, None, NO_LEADER, member_id, [], False)


class SyncResult(NamedTuple):
    error_code: int
    protocol_type: str | None
    protocol_name: str | None
    assignment: bytes

    @classmethod
    def error(cls, error_code: int) -> "SyncResult":
        return cls(error_code, None, None, b"")


class LeaveMember(NamedTuple):
    member_id: str
    group_instance_id: str | None
    error_code: int


class LeaveResult(NamedTuple):
    error_code: int
    members: list[LeaveMember]


class CommitPartitionResult(NamedTuple):
    topic: str
    partition: int
    error_code: int


class OffsetFetchPartition(NamedTuple):
    topic: str
    partition: int
    offset: int          # -1: nothing committed
    leader_epoch: int    # -1: unknown
    metadata: str | None
    error_code: int


class OffsetFetchResult(NamedTuple):
    error_code: int
    partitions: list[OffsetFetchPartition]


class MemberDescription(NamedTuple):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


class GroupDescription(NamedTuple):
    group_id: str
    error_code: int
    state: str
    protocol_type: str
    protocol_name: str
    members: list[MemberDescription]


class GroupListing(NamedTuple):
    group_id: str
    protocol_type: str
    state: str
    group_type: str  # "classic" or "consumer"


class DeleteGroupResult(NamedTuple):
    group_id: str
    error_code: int


class OffsetDeleteResult(NamedTuple):
    error_code: int
    partitions: list[CommitPartitionResult]
