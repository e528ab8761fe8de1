"""Configs as the Kafka admin APIs present them: resource types, sources,
types, broker synonyms, the rows DescribeConfigs and CreateTopics (v5+)
return, and the checks the two AlterConfigs APIs share.

Topic configs come from ``log.config.TOPIC_CONFIGS`` (the storage layer's
table); this module adds the Kafka vocabulary around them. Broker configs are
the settings this broker was started with, shown read-only under Kafka's
names: kafka-wire has no dynamic broker configs.
"""
from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from dataclasses import dataclass, field
from enum import IntEnum

import kafka.errors as Errors

from kafka_wire.apis.refusals import kafka_error
from kafka_wire.errors import for_log_error
from kafka_wire.log import errors as log_errors
from kafka_wire.log.config import TOPIC_CONFIGS, LogConfig

log = logging.getLogger(__name__)


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16


class ConfigSource(IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


class ConfigType(IntEnum):
    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


_T = ConfigType
# Kafka's type of each topic config (org.apache.kafka.common.config.TopicConfig).
TOPIC_CONFIG_TYPES: dict[str, ConfigType] = {
    "segment.bytes": _T.INT, "segment.ms": _T.LONG, "retention.ms": _T.LONG,
    "retention.bytes": _T.LONG, "index.interval.bytes": _T.INT, "segment.index.bytes": _T.INT,
    "max.message.bytes": _T.INT, "message.timestamp.type": _T.STRING, "cleanup.policy": _T.LIST,
    "delete.retention.ms": _T.LONG, "min.compaction.lag.ms": _T.LONG,
    "max.compaction.lag.ms": _T.LONG, "min.cleanable.dirty.ratio": _T.DOUBLE,
    "flush.messages": _T.LONG, "flush.ms": _T.LONG, "preallocate": _T.BOOLEAN,
    "min.insync.replicas": _T.INT, "compression.type": _T.STRING,
    "unclean.leader.election.enable": _T.BOOLEAN, "message.downconversion.enable": _T.BOOLEAN,
    "leader.replication.throttled.replicas": _T.LIST,
    "follower.replication.throttled.replicas": _T.LIST, "segment.jitter.ms": _T.LONG,
    "file.delete.delay.ms": _T.LONG, "message.timestamp.difference.max.ms": _T.LONG,
    "message.timestamp.before.max.ms": _T.LONG, "message.timestamp.after.max.ms": _T.LONG,
    "remote.storage.enable": _T.BOOLEAN, "local.retention.ms": _T.LONG,
    "local.retention.bytes": _T.LONG,
}

# The broker config that supplies each topic config's default (Kafka's
# LogConfig synonyms); topic-only configs have none.
BROKER_SYNONYMS: dict[str, str] = {
    "segment.bytes": "log.segment.bytes", "segment.ms": "log.roll.ms",
    "segment.jitter.ms": "log.roll.jitter.ms", "segment.index.bytes": "log.index.size.max.bytes",
    "flush.messages": "log.flush.interval.messages", "flush.ms": "log.flush.interval.ms",
    "retention.bytes": "log.retention.bytes", "retention.ms": "log.retention.ms",
    "max.message.bytes": "message.max.bytes", "index.interval.bytes": "log.index.interval.bytes",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
    "file.delete.delay.ms": "log.segment.delete.delay.ms",
    "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
    "cleanup.policy": "log.cleanup.policy",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "min.insync.replicas": "min.insync.replicas", "compression.type": "compression.type",
    "preallocate": "log.preallocate", "message.timestamp.type": "log.message.timestamp.type",
    "message.timestamp.difference.max.ms": "log.message.timestamp.difference.max.ms",
    "message.timestamp.before.max.ms": "log.message.timestamp.before.max.ms",
    "message.timestamp.after.max.ms": "log.message.timestamp.after.max.ms",
    "message.downconversion.enable": "log.message.downconversion.enable",
    "local.retention.ms": "log.local.retention.ms", "local.retention.bytes": "log.local.retention.bytes",
}

LIST_CONFIGS = frozenset(k for k, t in TOPIC_CONFIG_TYPES.items() if t is ConfigType.LIST)


@dataclass(slots=True)
class ConfigEntry:
    """One config as DescribeConfigs reports it."""
    name: str
    value: str | None
    read_only: bool
    source: ConfigSource
    config_type: ConfigType
    documentation: str
    # (name, value, source), most specific first, as Kafka lists synonyms.
    synonyms: list[tuple[str, str | None, ConfigSource]] = field(default_factory=list)


def unknown_topic_config(key: str) -> str | None:
    """Why ``key`` is not a topic config, or None when it is one."""
    if key in TOPIC_CONFIGS:
        return None
    return f"unknown topic config {key!r}: known configs are {', '.join(sorted(TOPIC_CONFIGS))}"


def normalized_overrides(topics, overrides: dict[str, str]) -> dict[str, str]:
    """Check a topic's override set and return it in canonical spelling.

    Raises ValueError (the message says what is wrong and what is valid) when
    LogConfig refuses a key or value. ``topics`` is the TopicManager.
    """
    config = topics.validate_configs(overrides)
    canonical = config.to_kafka()
    return {key: canonical[key] for key in overrides}


def topic_entries(topics, overrides: dict[str, str]) -> list[ConfigEntry]:
    """Every known topic config of a topic with ``overrides``, effective values."""
    config: LogConfig = topics.validate_configs(overrides)
    values = config.to_kafka()
    broker_defaults = topics.logs.default_config.to_kafka()  # set at start-up
    entries = []
    for key, spec in TOPIC_CONFIGS.items():
        synonyms: list[tuple[str, str | None, ConfigSource]] = []
        if key in overrides:
            synonyms.append((key, values[key], ConfigSource.DYNAMIC_TOPIC_CONFIG))
        broker_key = BROKER_SYNONYMS.get(key)
        if broker_defaults[key] != spec.default:
            synonyms.append((broker_key or key, broker_defaults[key], ConfigSource.STATIC_BROKER_CONFIG))
        synonyms.append((broker_key or key, spec.default, ConfigSource.DEFAULT_CONFIG))
        entries.append(ConfigEntry(
            name=key, value=values[key], read_only=spec.read_only, source=synonyms[0][2],
            config_type=TOPIC_CONFIG_TYPES.get(key, ConfigType.UNKNOWN),
            documentation=spec.doc, synonyms=synonyms))
    return entries


def _bool(value: bool) -> str:
    return "true" if value else "false"


def broker_entries(services) -> list[ConfigEntry]:
    """The broker's settings under Kafka's names, all read-only.

    Source is STATIC_BROKER_CONFIG where the broker was started with a value
    other than kafka-wire's default, DEFAULT_CONFIG otherwise.
    """
    cfg = services.config
    topics = services.default.topics
    defaults = {f.name: f.default for f in dataclasses.fields(type(cfg))
                if f.default is not dataclasses.MISSING}
    log_defaults = topics.logs.default_config.to_kafka()
    static_log = set(getattr(cfg, "topic_defaults", {}) or {})
    rows: list[tuple[str, str, bool, ConfigType, str]] = []

    def setting(name, value, attr, ctype, doc):
        is_static = attr is not None and getattr(cfg, attr, None) != defaults.get(attr)
        rows.append((name, value, is_static, ctype, doc))

    node = str(services.cluster.node_id)
    setting("broker.id", node, "node_id", _T.INT, "The id of this broker.")
    setting("node.id", node, "node_id", _T.INT, "The id of this broker.")
    setting("num.partitions", str(topics.num_partitions), "num_partitions", _T.INT,
            "Partitions of auto-created topics and of CreateTopics with num_partitions -1.")
    setting("default.replication.factor", str(cfg.default_replication_factor),
            "default_replication_factor", _T.INT, "One broker: always 1.")
    setting("auto.create.topics.enable", _bool(topics.auto_create), "auto_create_topics",
            _T.BOOLEAN, "Metadata requests that allow it create missing topics.")
    setting("delete.topic.enable", "true", None, _T.BOOLEAN, "DeleteTopics is served.")
    setting("offsets.retention.minutes", str(cfg.offsets_retention_ms // 60_000),
            "offsets_retention_ms", _T.INT, "How long committed offsets of an empty group are kept.")
    setting("offsets.topic.replication.factor", "1", None, _T.SHORT, "One broker: always 1.")
    setting("transaction.state.log.replication.factor", "1", None, _T.SHORT, "One broker: always 1.")
    setting("transaction.state.log.min.isr", "1", None, _T.INT, "One broker: always 1.")
    setting("group.initial.rebalance.delay.ms", str(cfg.group_initial_rebalance_delay_ms),
            "group_initial_rebalance_delay_ms", _T.INT,
            "How long a new classic group waits for more members before its first rebalance.")
    setting("group.min.session.timeout.ms", str(cfg.group_min_session_timeout_ms),
            "group_min_session_timeout_ms", _T.INT, "Smallest session timeout a member may ask for.")
    setting("group.max.session.timeout.ms", str(cfg.group_max_session_timeout_ms),
            "group_max_session_timeout_ms", _T.INT, "Largest session timeout a member may ask for.")
    setting("socket.request.max.bytes", str(cfg.max_request_bytes), "max_request_bytes", _T.INT,
            "Largest request frame accepted; larger ones close the connection.")
    setting("log.dirs", str(topics.logs_dir()), "data_dir", _T.STRING,
            "Where partitions are kept (the namespace's directory under the data dir).")
    for topic_key, broker_key in BROKER_SYNONYMS.items():
        spec = TOPIC_CONFIGS.get(topic_key)
        if spec is None or any(r[0] == broker_key for r in rows):
            continue
        rows.append((broker_key, log_defaults[topic_key],
                     topic_key in static_log or log_defaults[topic_key] != spec.default,
                     TOPIC_CONFIG_TYPES.get(topic_key, _T.UNKNOWN),
                     f"Default of the topic config {topic_key}: {spec.doc}"))
    entries = []
    for name, value, is_static, ctype, doc in rows:
        source = ConfigSource.STATIC_BROKER_CONFIG if is_static else ConfigSource.DEFAULT_CONFIG
        entries.append(ConfigEntry(name, value, True, source, ctype, doc, [(name, value, source)]))
    return entries


def broker_name_error(services, name: str | None, *, allow_default: bool) -> str | None:
    """Why a BROKER resource name does not name this broker, or None.

    An empty name is the cluster-wide default resource, which alters accept.
    """
    node = str(services.cluster.node_id)
    if not name:
        return None if allow_default else f"give the broker id ({node})"
    if name != node:
        return f"unexpected broker id {name!r}: this cluster's only broker is {node}"
    return None


def broker_change_refusal(services, changes: dict[str, str | None]) -> str | None:
    """Why broker config ``changes`` cannot be made, or None when none changes anything.

    kafka-wire has no dynamic broker configs. Tools (Kafka Connect,
    MirrorMaker 2, Terraform providers) sometimes send empty alters, deletes
    of dynamic overrides that were never set, or a value the broker already
    has: those are accepted as no-ops. ``None`` values are deletions.
    """
    current = {e.name: e.value for e in broker_entries(services)}
    for key, value in changes.items():
        if value is None or current.get(key) == value:
            continue
        return (f"broker config {key!r} cannot be changed at run time: kafka-wire sets broker "
                "configs at start-up (see `kafka-wire serve --help`); alter topic configs instead")
    return None


def apply_topic_overrides(ctx, name: str, overrides: dict[str, str],
                          validate_only: bool) -> tuple[int, str | None]:
    """Check ``overrides`` as the whole new override set of topic ``name`` and,
    unless ``validate_only``, store it. (errno, message); 0 on success.

    AlterConfigs passes the request's set; IncrementalAlterConfigs computes it.
    """
    topics = ctx.topics
    if topics.get(name) is None:
        return Errors.UnknownTopicOrPartitionError.errno, f"topic {name!r} does not exist"
    for key in overrides:
        problem = unknown_topic_config(key)
        if problem:
            return Errors.InvalidConfigurationError.errno, problem
    try:
        canonical = normalized_overrides(topics, overrides)
    except ValueError as exc:
        return Errors.InvalidConfigurationError.errno, str(exc)
    refusal = ctx.policy.alter_topic_config(ctx.connection.principal, name, dict(canonical),
                                            ctx.client_id)
    if refusal:
        return kafka_error(refusal)
    if validate_only:
        return 0, None
    try:
        topics.replace_configs(name, canonical)
    except (log_errors.LogError, OSError) as exc:
        log.error("altering configs of topic %s failed: %s", name, exc)
        return for_log_error(exc), str(exc)
    log.info("topic %s configs now %s", name, canonical)
    return 0, None


def alter_each_resource(request, result_cls, alter_one) -> list:
    """The resource loop of AlterConfigs and IncrementalAlterConfigs: a resource
    named twice gets one INVALID_REQUEST and is not altered (as in Kafka); every
    other one gets ``alter_one(resource) -> (errno, message)``."""
    counts = Counter((r.resource_type, r.resource_name) for r in request.resources)
    answered: set[tuple[int, str]] = set()
    results = []
    for resource in request.resources:
        key = (resource.resource_type, resource.resource_name)
        if counts[key] > 1:
            if key not in answered:
                answered.add(key)
                results.append(result_cls(error_code=Errors.InvalidRequestError.errno,
                                          error_message="resource appears more than once in the request",
                                          resource_type=key[0], resource_name=key[1]))
            continue
        errno, message = alter_one(resource)
        results.append(result_cls(error_code=errno, error_message=message,
                                  resource_type=resource.resource_type, resource_name=resource.resource_name))
    return results
