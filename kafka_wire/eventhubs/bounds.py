"""How much one broker lets clients create, whatever the namespace's mode.

Event Hubs' tiers have quotas (:mod:`model`'s ``TIER_LIMITS``), which strict
namespaces enforce and relaxed ones only report. Relaxed is no licence to
exhaust the machine: one request for 3,000 partitions, or a thousand
namespaces, would take every file descriptor and hundreds of megabytes. These
caps hold in every mode and are checked at the namespace's door before
anything is made. The defaults are the largest Event Hubs tier's figures
(Dedicated) where one exists; each is a key of the config file's ``[limits]``
table (docs/eventhubs.md).

Beside them, the rules of every mode that more than one front end applies to
what it is given (the management API to a request's body, the config loader to
a file): each front end asks here and words the answer in its own terms (ARM's
JSON 400, one start-up line naming the file and the entry).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

# Capture's name format rule is Capture's own (capture.naming), asked here by the management
# API and the config loader; Capture's command line and Spark sink ask it there.
from kafka_wire.capture.naming import NAME_FORMAT_MAX, name_format_error
from kafka_wire.capture.naming import TOKENS as NAME_FORMAT_TOKENS

__all__ = ["Bounds", "MAX_RETENTION_HOURS", "NAME_FORMAT_TOKENS", "retention_hours_error",
           "name_format_error", "NAME_FORMAT_MAX"]

# The longest retention a hub may be given, in any mode (a tier's own limit, lower, is a tier
# rule in strict mode: tier_rules.topic_config); -1 is unlimited (compacted hubs).
MAX_RETENTION_HOURS = 1_000_000


def retention_hours_error(hours: object) -> str | None:
    """Why a hub may not keep its events ``hours`` hours, in any mode, else None."""
    if isinstance(hours, int) and not isinstance(hours, bool) and (
            hours == -1 or 1 <= hours <= MAX_RETENTION_HOURS):
        return None
    return f"use a whole number of hours from 1 to {MAX_RETENTION_HOURS:,}, or -1 for unlimited"


@dataclass(frozen=True, slots=True)
class Bounds:
    namespaces: int = 64                     # per broker (each has its own log and coordinators)
    hubs_per_namespace: int = 1000           # Dedicated's quota
    partitions_per_hub: int = 1024           # Dedicated's quota
    partitions_per_namespace: int = 10_240   # e.g. 10 hubs of 1,024
    consumer_groups_per_hub: int = 1000      # Dedicated's quota
    kafka_groups_per_namespace: int = 10_000
    # Members of one Kafka group, classic (pending KIP-394 members included) or KIP-848
    # (Kafka's group.max.size and group.consumer.max.size); past it GROUP_MAX_SIZE_REACHED.
    # Event Hubs documents no figure; members beyond a group's partitions sit idle, and the
    # largest hub has 1,024, so a real application stays well below; the bound keeps one
    # client's join storm from holding ~1 KB per member until the session timeouts.
    members_per_group: int = 1000
    schema_groups_per_namespace: int = 1000
    schema_versions_per_namespace: int = 10_000  # Dedicated's quota: versions across all groups
    # Dedicated allows 1,024 MB; the registry is held in memory and read at start, so the
    # default is Premium's 100 MB (a hundred 1 MB schemas)
    schema_registry_megabytes: int = 100
    application_groups_per_namespace: int = 100
    ip_rules_per_namespace: int = 128        # Event Hubs' IP filter rule quota
    http_connections: int = 512              # open HTTP(S) connections to the broker
    amqp_connections: int = 5000             # open AMQP connections (Standard's brokered connections)
    amqp_sessions_per_connection: int = 2048
    amqp_links_per_connection: int = 2048    # a processor owning every partition of a Dedicated hub
    amqp_unauthenticated_s: int = 60         # until a connection must have put a token on $cbs

    def namespaces_error(self, count: int) -> str | None:
        """Why this broker may not serve ``count`` namespaces, else None."""
        if count <= self.namespaces:
            return None
        return (f"{count} namespaces are more than this broker serves ({self.namespaces}; "
                "[limits] namespaces)")

    @classmethod
    def from_table(cls, table: dict, where: str = "[limits]") -> "Bounds":
        """The ``[limits]`` table of a config file: whole numbers of at least 1."""
        known = {f.name for f in fields(cls)}
        for key, value in table.items():
            if key not in known:
                raise ValueError(f"{where}: unknown key {key!r}: use {', '.join(sorted(known))}")
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{where} {key} = {value!r}: must be a whole number of at least 1")
        return cls(**table)
