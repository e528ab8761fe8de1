"""Tier rules: what Event Hubs would refuse (its quotas per tier, and the Kafka features its endpoint lacks).

Each rule is a pure function of the namespace model and the request's facts,
returning a :class:`Violation` (rule id, the Kafka error a client would get
from Event Hubs, a message saying what to do) or None. :func:`enforce` records
every violation in the compatibility report and refuses the request only in a
``strict`` namespace; a ``relaxed`` one keeps full Kafka semantics and the
report says what would break on Event Hubs.

Error codes chosen where Microsoft documents none (all listed in README):
oversized publication MESSAGE_TOO_LARGE; codec not offered
UNSUPPORTED_FOR_MESSAGE_FORMAT; transactions where the tier has none
TRANSACTIONAL_ID_AUTHORIZATION_FAILED (what Java clients report against
Standard namespaces); partitions over quota INVALID_PARTITIONS; other
management over quota (hubs, growth, retention, compaction, DeleteRecords)
POLICY_VIOLATION; no Kafka endpoint (Basic) TOPIC_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import kafka.errors as Errors

from kafka_wire.eventhubs.model import HOUR_MS, MIN_RETENTION_HOURS, Namespace, hub_name_error
from kafka_wire.log.batch import BatchSummary

log = logging.getLogger(__name__)

__all__ = ["Violation", "kafka_endpoint",
           "publication", "hub_creation", "partition_growth", "topic_config", "delete_records",
           "transactions", "kafka_group", "commit_metadata", "session_timeout",
           "transaction_timeout"]

CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
KAFKA_GROUP_ID_MAX = 256
COMMIT_METADATA_MAX = 1024
SESSION_TIMEOUT_MS = (6_000, 300_000)     # the Kafka endpoint's session.timeout.ms range
TRANSACTION_TIMEOUT_MAX_MS = 15 * 60_000


@dataclass(frozen=True, slots=True)
class Violation:
    rule: str
    error_code: int  # the Kafka error a client would get from Event Hubs
    message: str


# -- data path ---------------------------------------------------------------
def kafka_endpoint(ns: Namespace) -> Violation | None:
    if not ns.limits.kafka:
        return Violation("kafka-endpoint", Errors.TopicAuthorizationFailedError.errno,
                         f"namespace {ns.name!r} is on the {ns.tier.value} tier, which has no "
                         "Kafka endpoint: use Standard or above")
    return None


def publication(ns: Namespace, info: BatchSummary) -> Violation | None:
    limit = ns.max_publication_bytes()
    tier = ns.tier.value
    if info.size > limit:
        return Violation("publication-size", Errors.MessageSizeTooLargeError.errno,
                         f"a publication of {info.size} bytes exceeds the {tier} limit of "
                         f"{limit} bytes per event or batch: send smaller batches "
                         "(batch.size / linger) or smaller events")
    refused = sorted(c for c in info.codecs if c and c not in ns.limits.compression)
    if refused:
        names = ", ".join(CODECS.get(c, str(c)) for c in refused)
        allowed = "gzip only" if ns.limits.compression else "none"
        return Violation("compression", Errors.UnsupportedForMessageFormatError.errno,
                         f"{names} compression is not supported on the {tier} tier "
                         f"(allowed: {allowed}): set compression.type accordingly")
    if info.transactional and not ns.limits.transactions:
        return transactions(ns)
    if info.idempotent and not ns.limits.idempotence:
        return Violation("idempotence", Errors.ClusterAuthorizationFailedError.errno,
                         f"idempotent producers are not supported on the {tier} tier")
    return None


def transaction_timeout(ns: Namespace, timeout_ms: int) -> Violation | None:
    if timeout_ms <= TRANSACTION_TIMEOUT_MAX_MS:
        return None
    return Violation("transaction-timeout", Errors.InvalidTransactionTimeoutError.errno,
                     f"transaction.timeout.ms={timeout_ms} exceeds Event Hubs' maximum of "
                     f"{TRANSACTION_TIMEOUT_MAX_MS} (15 minutes)")


def transactions(ns: Namespace) -> Violation | None:
    if ns.limits.transactions:
        return None
    return Violation("transactions", Errors.TransactionalIdAuthorizationFailedError.errno,
                     f"Kafka transactions are not supported on the {ns.tier.value} tier "
                     "(Premium and Dedicated have them in preview): drop transactional.id")


# -- management ------------------------------------------------------------------
def _partition_total(topics, skip: str | None = None) -> int:
    return sum(v.partitions for v in topics.all() if not v.internal and v.name != skip)


def hub_creation(ns: Namespace, topics, name: str, partitions: int) -> Violation | None:
    tier = ns.tier.value
    problem = hub_name_error(name)
    if problem:
        return Violation("hub-name", Errors.InvalidTopicError.errno, problem)
    hubs = sum(1 for v in topics.all() if not v.internal)
    if hubs >= ns.hub_limit():
        return Violation("hubs-per-namespace", Errors.PolicyViolationError.errno,
                         f"namespace {ns.name!r} already has {hubs} event hubs, the {tier} limit "
                         f"is {ns.hub_limit()}: delete one or use another namespace")
    return _partitions_quota(ns, topics, name, partitions)


def _partitions_quota(ns: Namespace, topics, name: str, partitions: int) -> Violation | None:
    lim = ns.limits
    tier = ns.tier.value
    if partitions > lim.partitions_per_hub:
        return Violation("partitions-per-hub", Errors.InvalidPartitionsError.errno,
                         f"event hub {name!r}: {partitions} partitions exceed the {tier} limit "
                         f"of {lim.partitions_per_hub} per event hub")
    total_limit = ns.namespace_partition_limit()
    if total_limit is not None:
        total = _partition_total(topics, skip=name) + partitions
        if total > total_limit:
            return Violation("namespace-partitions", Errors.InvalidPartitionsError.errno,
                             f"namespace {ns.name!r} would have {total} partitions, the {tier} "
                             f"limit is {total_limit} for {ns.units or 1} {lim.unit_name}(s)")
    return None


def partition_growth(ns: Namespace, topics, name: str, count: int) -> Violation | None:
    if not ns.limits.partitions_can_grow:
        return Violation("partition-growth", Errors.PolicyViolationError.errno,
                         f"event hub {name!r}: the partition count is fixed at creation on the "
                         f"{ns.tier.value} tier (Premium and Dedicated may add partitions): "
                         "create a new event hub instead")
    return _partitions_quota(ns, topics, name, count)


def topic_config(ns: Namespace, name: str, config) -> Violation | None:
    """``config``: the hub's effective log.config.LogConfig after the change."""
    lim = ns.limits
    tier = ns.tier.value
    compact = config.compact_enabled
    if compact and not lim.compaction:
        return Violation("compaction", Errors.PolicyViolationError.errno,
                         f"event hub {name!r}: log compaction is not available on the {tier} tier")
    retention = config.retention_ms
    max_ms = lim.max_retention_hours * HOUR_MS
    if retention == -1:
        if not compact:
            return Violation("retention", Errors.PolicyViolationError.errno,
                             f"event hub {name!r}: unlimited retention (retention.ms=-1) is only "
                             f"for compacted hubs; the {tier} limit is "
                             f"{lim.max_retention_hours} hours")
    elif retention < MIN_RETENTION_HOURS * HOUR_MS or retention > max_ms:
        return Violation("retention", Errors.PolicyViolationError.errno,
                         f"event hub {name!r}: retention.ms={retention} is outside the {tier} "
                         f"range of {MIN_RETENTION_HOURS}-{lim.max_retention_hours} hours "
                         f"({MIN_RETENTION_HOURS * HOUR_MS}-{max_ms} ms)")
    return None


def delete_records(ns: Namespace, name: str) -> Violation:
    return Violation("delete-records", Errors.PolicyViolationError.errno,
                     f"event hub {name!r}: Event Hubs has no explicit deletion (DeleteRecords); "
                     "events leave by retention only")


# -- consumer groups ---------------------------------------------------------------
def kafka_group(ns: Namespace, group_id: str, known_groups: int, is_new: bool) -> Violation | None:
    if group_id is not None and len(group_id) > KAFKA_GROUP_ID_MAX:
        return Violation("group-id-length", Errors.InvalidGroupIdError.errno,
                         f"group.id is {len(group_id)} characters long: Event Hubs allows "
                         f"{KAFKA_GROUP_ID_MAX}")
    limit = ns.limits.kafka_groups_per_namespace
    if is_new and known_groups >= limit:
        return Violation("kafka-groups-per-namespace", Errors.PolicyViolationError.errno,
                         f"namespace {ns.name!r} already has {known_groups} Kafka consumer "
                         f"groups, the {ns.tier.value} limit is {limit}")
    return None


def session_timeout(ns: Namespace, timeout_ms: int) -> Violation | None:
    lo, hi = SESSION_TIMEOUT_MS
    if lo <= timeout_ms <= hi:
        return None
    return Violation("session-timeout", Errors.InvalidSessionTimeoutError.errno,
                     f"session.timeout.ms={timeout_ms} is outside Event Hubs' range {lo}-{hi}")


def commit_metadata(ns: Namespace, metadata: str | None) -> Violation | None:
    size = len(metadata.encode("utf-8")) if metadata else 0
    if size > COMMIT_METADATA_MAX:
        return Violation("commit-metadata", Errors.OffsetMetadataTooLargeError.errno,
                         f"offset commit metadata of {size} bytes exceeds Event Hubs' "
                         f"{COMMIT_METADATA_MAX}")
    return None
