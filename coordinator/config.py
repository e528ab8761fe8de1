"""Group coordinator settings: one typed home, defaults documented once.

Names follow Kafka's broker configs (``group.min.session.timeout.ms`` →
``group_min_session_timeout_ms``). Defaults are Kafka's, except the initial
rebalance delay, which Kafka sets to 3000 ms for production clusters; an
emulator serves tests, where waiting three seconds per fresh group is waste.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GroupCoordinatorConfig"]


@dataclass(frozen=True, slots=True)
class GroupCoordinatorConfig:
    # JoinGroup session timeouts outside this range get INVALID_SESSION_TIMEOUT.
    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    # How long an Empty group waits for more members before its first
    # generation (Kafka: group.initial.rebalance.delay.ms = 3000).
    group_initial_rebalance_delay_ms: int = 100
    # None = unlimited (Kafka: group.max.size = Int.MaxValue).
    group_max_size: int | None = None
    # A new member whose JoinGroup has waited this long is dropped; it is
    # expected to retry (Kafka: GroupCoordinator.NewMemberJoinTimeoutMs).
    new_member_join_timeout_ms: int = 300_000
    # Committed offset metadata longer than this gets OFFSET_METADATA_TOO_LARGE.
    offset_metadata_max_size: int = 4096
    # Offsets of an Empty group expire this long after the group became empty
    # (Kafka: offsets.retention.minutes = 7 days).
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600_000

    # KIP-848 consumer groups (ConsumerGroupHeartbeat).
    consumer_group_session_timeout_ms: int = 45_000
    consumer_group_heartbeat_interval_ms: int = 5_000
    consumer_group_max_size: int | None = None
    consumer_group_assignors: tuple[str, ...] = ("uniform", "range")

    def __post_init__(self) -> None:
        if self.group_min_session_timeout_ms > self.group_max_session_timeout_ms:
            raise ValueError(
                "group_min_session_timeout_ms must not exceed group_max_session_timeout_ms "
                f"({self.group_min_session_timeout_ms} > {self.group_max_session_timeout_ms})")
        if self.group_initial_rebalance_delay_ms < 0:
            raise ValueError("group_initial_rebalance_delay_ms must be >= 0")
        if self.offsets_retention_check_interval_ms <= 0:
            raise ValueError("offsets_retention_check_interval_ms must be > 0")
        if not self.consumer_group_assignors:
            raise ValueError("consumer_group_assignors needs at least one assignor name")
