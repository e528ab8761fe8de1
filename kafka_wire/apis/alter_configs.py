"""AlterConfigs (key 33), v0–v2: the legacy, replace-everything alter.

For a TOPIC the request's configs become the topic's whole override set
(a config left out, or given a null value, goes back to its default). Values
are checked by the log's LogConfig (INVALID_CONFIG with its message);
validate_only checks and changes nothing. An Event Hubs policy may refuse
(``ctx.policy.alter_topic_config(principal, name, overrides, client_id)``). BROKER resources: kafka-wire has
no dynamic broker configs, so only alters that change nothing succeed (tools
send empty ones); anything else is INVALID_REQUEST. Not emulated:
BROKER_LOGGER (INVALID_REQUEST, as Kafka answers this API), GROUP and
CLIENT_METRICS resources. Event Hubs: BROKER resources need a namespace-level
Manage right (CLUSTER_AUTHORIZATION_FAILED), topics Manage on the hub (the
policy hook).
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.config_entries import (
    ResourceType, alter_each_resource, apply_topic_overrides, broker_change_refusal, broker_name_error,
)
from kafka_wire.apis.authorization import cluster_error

_Response = codec.response_class(codec.ApiKey.AlterConfigs)
_Result = _Response.AlterConfigsResourceResponse


def _alter_one(resource, ctx, validate_only: bool) -> tuple[int, str | None]:
    kind = resource.resource_type
    name = resource.resource_name
    if kind == ResourceType.TOPIC:
        overrides = {c.name: c.value for c in resource.configs if c.value is not None}
        return apply_topic_overrides(ctx, name, overrides, validate_only)
    if kind == ResourceType.BROKER:
        if cluster_error(ctx):
            return cluster_error(ctx), "changing broker configs needs a namespace Manage policy"
        problem = broker_name_error(ctx.services, name, allow_default=True)
        if problem is None:
            problem = broker_change_refusal(ctx.services, {c.name: c.value for c in resource.configs})
        return (Errors.InvalidRequestError.errno, problem) if problem else (0, None)
    if kind == ResourceType.BROKER_LOGGER:
        return (Errors.InvalidRequestError.errno,
                "AlterConfigs does not support BROKER_LOGGER: use IncrementalAlterConfigs")
    return Errors.InvalidRequestError.errno, f"unsupported resource type {kind}"


@handles(codec.ApiKey.AlterConfigs, 0, 2)
def alter_configs(request, ctx):
    validate_only = bool(request.validate_only)
    results = alter_each_resource(request, _Result, lambda r: _alter_one(r, ctx, validate_only))
    return _Response(version=ctx.version, throttle_time_ms=0, responses=results)
