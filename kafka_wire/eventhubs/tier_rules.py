"""Tier rules: what Event Hubs would refuse (its quotas per tier, and the Kafka features its endpoint lacks).

Each rule is a pure function of the namespace model and the request's facts,
returning a :class:`~kafka_wire.eventhubs.refusals.Denial` (a protocol-neutral
reason, a message saying what to do, and the rule's id, one of :data:`RULES`)
or None. The namespace policy records every violation in the compatibility
report and refuses the request only in a ``strict`` namespace; a ``relaxed``
one keeps full Kafka semantics and the report says what would break on Event
Hubs.

Which Kafka error each rule answers (what Event Hubs' Kafka endpoint answers,
and our choice where Microsoft documents none) is the Kafka front end's table,
:data:`kafka_wire.apis.refusals.RULE_ERRORS`, listed in docs/eventhubs.md.
"""
from __future__ import annotations

import logging

from kafka_wire.eventhubs.refusals import Denial, Refusal
from kafka_wire.eventhubs.model import HOUR_MS, MIN_RETENTION_HOURS, Namespace, hub_name_error
from kafka_wire.log.batch import BatchSummary

log = logging.getLogger(__name__)

__all__ = ["RULES", "kafka_endpoint",
           "publication", "hub_creation", "partition_growth", "topic_config", "delete_records",
           "transactions", "kafka_group", "commit_metadata", "session_timeout",
           "transaction_timeout"]

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
KAFKA_GROUP_ID_MAX = 256
# Not a tier rule: the bound of every mode (NamespacePolicy.kafka_group), the longest string
# the protocol's non-flexible versions carry (an int16 length), far below what a checkpoint
# record may hold (coordinator.record_log.MAX_RECORD, 1 MiB).
KAFKA_GROUP_ID_MAX_ANY_MODE = 32_767
COMMIT_METADATA_MAX = 1024
SESSION_TIMEOUT_MS = (6_000, 300_000)     # the Kafka endpoint's session.timeout.ms range
TRANSACTION_TIMEOUT_MAX_MS = 15 * 60_000


# Every rule's id: what the compatibility report records, and what each front end maps.
RULES = frozenset({
    "kafka-endpoint", "publication-size", "compression", "idempotence", "transactions",
    "transaction-timeout", "hub-name", "hubs-per-namespace", "partitions-per-hub",
    "namespace-partitions", "partition-growth", "compaction", "retention", "delete-records",
    "group-id-length", "kafka-groups-per-namespace", "session-timeout", "commit-metadata",
})


def _violation(rule: str, reason: Refusal, message: str) -> Denial:
    return Denial(reason, message, rule)


# -- data path ---------------------------------------------------------------
def kafka_endpoint(ns: Namespace) -> Denial | None:
    if not ns.limits.kafka:
        return _violation("kafka-endpoint", Refusal.UNSUPPORTED,
                          f"namespace {ns.name!r} is on the {ns.tier.value} tier, which has no "
                          "Kafka endpoint: use Standard or above")
    return None


def publication(ns: Namespace, info: BatchSummary) -> Denial | None:
    # Every publication passes here: the common answer (None) builds no message.
    limit = ns.max_publication_bytes()
    lim = ns.limits
    if info.size > limit:
        return _violation("publication-size", Refusal.TOO_LARGE,
                          f"a publication of {info.size} bytes exceeds the {ns.tier.value} limit of "
                          f"{limit} bytes per event or batch: send smaller batches "
                          "(batch.size / linger) or smaller events")
    refused = [c for c in info.codecs if c and c not in lim.compression]
    if refused:
        names = ", ".join(CODECS.get(c, str(c)) for c in sorted(refused))
        allowed = "gzip only" if lim.compression else "none"
        return _violation("compression", Refusal.UNSUPPORTED,
                          f"{names} compression is not supported on the {ns.tier.value} tier "
                          f"(allowed: {allowed}): set compression.type accordingly")
    if info.transactional and not lim.transactions:
        return transactions(ns)
    if info.idempotent and not lim.idempotence:
        return _violation("idempotence", Refusal.UNSUPPORTED,
                          f"idempotent producers are not supported on the {ns.tier.value} tier")
    return None


def transaction_timeout(ns: Namespace, timeout_ms: int) -> Denial | None:
    if timeout_ms <= TRANSACTION_TIMEOUT_MAX_MS:
        return None
    return _violation("transaction-timeout", Refusal.INVALID,
                      f"transaction.timeout.ms={timeout_ms} exceeds Event Hubs' maximum of "
                      f"{TRANSACTION_TIMEOUT_MAX_MS} (15 minutes)")


def transactions(ns: Namespace) -> Denial | None:
    if ns.limits.transactions:
        return None
    return _violation("transactions", Refusal.UNSUPPORTED,
                      f"Kafka transactions are not supported on the {ns.tier.value} tier "
                      "(Premium and Dedicated have them in preview): drop transactional.id")


# -- management ------------------------------------------------------------------
# ``hubs``: the namespace's hubs (Kafka's internal topics left out), each with a name and
# a partition count: live topics, or the hubs a config file configured before (policy.new_hub).
def hub_creation(ns: Namespace, counted, name: str, partitions: int) -> Denial | None:
    """``counted``: the namespace's hubs as policy.HubCount counts them (kept as hubs come
    and go: nothing here walks the namespace)."""
    tier = ns.tier.value
    problem = hub_name_error(name)
    if problem:
        return _violation("hub-name", Refusal.INVALID, problem)
    count = len(counted.hubs)
    if count >= ns.hub_limit():
        return _violation("hubs-per-namespace", Refusal.LIMIT,
                          f"namespace {ns.name!r} already has {count} event hubs, the {tier} limit "
                          f"is {ns.hub_limit()}: delete one or use another namespace")
    return _partitions_quota(ns, counted, name, partitions)


def _partitions_quota(ns: Namespace, counted, name: str, partitions: int) -> Denial | None:
    lim = ns.limits
    tier = ns.tier.value
    if partitions > lim.partitions_per_hub:
        return _violation("partitions-per-hub", Refusal.LIMIT,
                          f"event hub {name!r}: {partitions} partitions exceed the {tier} limit "
                          f"of {lim.partitions_per_hub} per event hub")
    total_limit = ns.namespace_partition_limit()
    if total_limit is not None:
        total = counted.partitions_but(name) + partitions
        if total > total_limit:
            return _violation("namespace-partitions", Refusal.LIMIT,
                              f"namespace {ns.name!r} would have {total} partitions, the {tier} "
                              f"limit is {total_limit} for {ns.units or 1} {lim.unit_name}(s)")
    return None


def partition_growth(ns: Namespace, counted, name: str, count: int) -> Denial | None:
    if not ns.limits.partitions_can_grow:
        return _violation("partition-growth", Refusal.UNSUPPORTED,
                          f"event hub {name!r}: the partition count is fixed at creation on the "
                          f"{ns.tier.value} tier (Premium and Dedicated may add partitions): "
                          "create a new event hub instead")
    return _partitions_quota(ns, counted, name, count)


def topic_config(ns: Namespace, name: str, config) -> Denial | None:
    """``config``: the hub's effective log.config.LogConfig after the change."""
    lim = ns.limits
    tier = ns.tier.value
    compact = config.compact_enabled
    if compact and not lim.compaction:
        return _violation("compaction", Refusal.UNSUPPORTED,
                          f"event hub {name!r}: log compaction is not available on the {tier} tier")
    retention = config.retention_ms
    max_ms = lim.max_retention_hours * HOUR_MS
    if retention == -1:
        if not compact:
            return _violation("retention", Refusal.INVALID,
                              f"event hub {name!r}: unlimited retention (retention.ms=-1) is only "
                              f"for compacted hubs; the {tier} limit is "
                              f"{lim.max_retention_hours} hours")
    elif retention < MIN_RETENTION_HOURS * HOUR_MS or retention > max_ms:
        return _violation("retention", Refusal.INVALID,
                          f"event hub {name!r}: retention.ms={retention} is outside the {tier} "
                          f"range of {MIN_RETENTION_HOURS}-{lim.max_retention_hours} hours "
                          f"({MIN_RETENTION_HOURS * HOUR_MS}-{max_ms} ms)")
    return None


def delete_records(ns: Namespace, name: str) -> Denial:
    return _violation("delete-records", Refusal.UNSUPPORTED,
                      f"event hub {name!r}: Event Hubs has no explicit deletion (DeleteRecords); "
                      "events leave by retention only")


# -- consumer groups ---------------------------------------------------------------
def kafka_group(ns: Namespace, group_id: str, known_groups: int, is_new: bool) -> Denial | None:
    if group_id is not None and len(group_id) > KAFKA_GROUP_ID_MAX:
        return _violation("group-id-length", Refusal.INVALID,
                          f"group.id is {len(group_id)} characters long: Event Hubs allows "
                          f"{KAFKA_GROUP_ID_MAX}")
    limit = ns.limits.kafka_groups_per_namespace
    if is_new and known_groups >= limit:
        return _violation("kafka-groups-per-namespace", Refusal.LIMIT,
                          f"namespace {ns.name!r} already has {known_groups} Kafka consumer "
                          f"groups, the {ns.tier.value} limit is {limit}")
    return None


def session_timeout(ns: Namespace, timeout_ms: int) -> Denial | None:
    lo, hi = SESSION_TIMEOUT_MS
    if lo <= timeout_ms <= hi:
        return None
    return _violation("session-timeout", Refusal.INVALID,
                      f"session.timeout.ms={timeout_ms} is outside Event Hubs' range {lo}-{hi}")


def commit_metadata(ns: Namespace, metadata: str | None) -> Denial | None:
    size = len(metadata.encode("utf-8")) if metadata else 0
    if size > COMMIT_METADATA_MAX:
        return _violation("commit-metadata", Refusal.TOO_LARGE,
                          f"offset commit metadata of {size} bytes exceeds Event Hubs' "
                          f"{COMMIT_METADATA_MAX}")
    return None
