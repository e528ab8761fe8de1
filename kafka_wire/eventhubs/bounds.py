"""How much one broker lets clients create, whatever the namespace's mode.

Event Hubs' tiers have quotas (:mod:`model`'s ``TIER_LIMITS``), which strict
namespaces enforce and relaxed ones only report. Relaxed is no licence to
exhaust the machine: one request for 3,000 partitions, or a thousand
namespaces, would take every file descriptor and hundreds of megabytes. These
caps hold in every mode and are checked at the namespace's door before
anything is made. The defaults are the largest Event Hubs tier's figures
(Dedicated) where one exists; each is a key of the config file's ``[limits]``
table (docs/eventhubs.md).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = ["Bounds"]


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
