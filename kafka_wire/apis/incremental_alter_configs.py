"""IncrementalAlterConfigs (key 44), v0–v1.

For a TOPIC each config names an operation on the topic's current overrides:
SET (0) a value, DELETE (1) an override (back to the default), APPEND (2) /
SUBTRACT (3) items of a list config (cleanup.policy and the throttled-replica
lists; APPEND starts from the effective value when there is no override).
The resulting override set is checked by the log's LogConfig
(INVALID_CONFIG with its message) and, unless validate_only, stored; the
same Event Hubs policy as AlterConfigs applies
(``ctx.policy.alter_topic_config``). Null values for SET,
APPEND or SUBTRACT and a config named twice are INVALID_REQUEST, as in Kafka.
BROKER and BROKER_LOGGER resources: kafka-wire has no dynamic broker configs
or loggers, so only operations that change nothing succeed (empty alters,
DELETE of an override that was never set, SET to the current value); anything
else is INVALID_REQUEST. Not emulated: GROUP and CLIENT_METRICS resources.
Event Hubs: BROKER and BROKER_LOGGER resources need a namespace-level Manage
right (CLUSTER_AUTHORIZATION_FAILED).
"""
from __future__ import annotations

from collections import Counter
from enum import IntEnum

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.config_entries import (
    LIST_CONFIGS, ResourceType, alter_each_resource, apply_topic_overrides, broker_change_refusal, broker_name_error,
    unknown_topic_config,
)
from kafka_wire.apis.authorization import cluster_error

_Response = codec.response_class(codec.ApiKey.IncrementalAlterConfigs)
_Result = _Response.AlterConfigsResourceResponse


class OpType(IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class _Refused(Exception):
    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


def _items(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def _preflight(resource) -> None:
    """Checks Kafka makes before looking at the resource: ops, nulls, duplicates."""
    names = Counter(c.name for c in resource.configs)
    twice = sorted(n for n, k in names.items() if k > 1)
    if twice:
        raise _Refused(Errors.InvalidRequestError.errno,
                       f"config {', '.join(map(repr, twice))} is named more than once: "
                       "give one operation per config")
    for c in resource.configs:
        if c.config_operation not in OpType._value2member_map_:
            raise _Refused(Errors.InvalidRequestError.errno,
                           f"unknown config operation {c.config_operation} for {c.name!r}: "
                           "use SET, DELETE, APPEND or SUBTRACT")
        if c.value is None and c.config_operation != OpType.DELETE:
            raise _Refused(Errors.InvalidRequestError.errno,
                           f"config {c.name!r} has a null value: only DELETE takes no value")


def _topic_overrides(resource, ctx) -> dict[str, str]:
    """The topic's override set after the request's operations."""
    topics = ctx.topics
    view = topics.get(resource.resource_name)
    if view is None:
        raise _Refused(Errors.UnknownTopicOrPartitionError.errno,
                       f"topic {resource.resource_name!r} does not exist")
    overrides = dict(view.configs)
    effective = None
    for c in resource.configs:
        key, op = c.name, OpType(c.config_operation)
        problem = unknown_topic_config(key)
        if problem:
            raise _Refused(Errors.InvalidConfigurationError.errno, problem)
        if op is OpType.SET:
            overrides[key] = c.value
        elif op is OpType.DELETE:
            overrides.pop(key, None)
        else:
            if key not in LIST_CONFIGS:
                raise _Refused(Errors.InvalidConfigurationError.errno,
                               f"{op.name} is only for list configs "
                               f"({', '.join(sorted(LIST_CONFIGS))}): use SET for {key!r}")
            if key in overrides:
                current = _items(overrides[key])
            else:
                if effective is None:
                    effective = topics.effective_config(view.name).to_kafka()
                current = _items(effective[key])
            if op is OpType.APPEND:
                current += [v for v in _items(c.value) if v not in current]
            else:
                removed = set(_items(c.value))
                current = [v for v in current if v not in removed]
            overrides[key] = ",".join(current)
    return overrides


def _alter_one(resource, ctx, validate_only: bool) -> tuple[int, str | None]:
    kind = resource.resource_type
    try:
        _preflight(resource)
        if kind == ResourceType.TOPIC:
            overrides = _topic_overrides(resource, ctx)
            return apply_topic_overrides(ctx, resource.resource_name, overrides, validate_only)
    except _Refused as refused:
        return refused.error_code, str(refused)
    if kind in (ResourceType.BROKER, ResourceType.BROKER_LOGGER):
        if cluster_error(ctx):
            return cluster_error(ctx), "changing broker configs needs a namespace Manage policy"
        problem = broker_name_error(ctx.services, resource.resource_name,
                                    allow_default=kind == ResourceType.BROKER)
        if problem is None:
            changes = {c.name: None if c.config_operation == OpType.DELETE else c.value
                       for c in resource.configs}
            if kind == ResourceType.BROKER:
                problem = broker_change_refusal(ctx.services, changes)
            elif any(v is not None for v in changes.values()):
                problem = ("kafka-wire's log levels cannot be changed through Kafka: "
                           "use the --log-level option at start-up")
        return (Errors.InvalidRequestError.errno, problem) if problem else (0, None)
    return Errors.InvalidRequestError.errno, f"unsupported resource type {kind}"


@handles(codec.ApiKey.IncrementalAlterConfigs, 0, 1)
def incremental_alter_configs(request, ctx):
    validate_only = bool(request.validate_only)
    results = alter_each_resource(request, _Result, lambda r: _alter_one(r, ctx, validate_only))
    return _Response(version=ctx.version, throttle_time_ms=0, responses=results)
