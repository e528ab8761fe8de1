"""DescribeConfigs (key 32), v1–v4.

TOPIC resources list every topic config the log knows (log.config's table),
with the effective value, read-only flag and source: DYNAMIC_TOPIC_CONFIG
for a topic's overrides, STATIC_BROKER_CONFIG for broker-wide defaults set
at start-up, DEFAULT_CONFIG otherwise. BROKER resources (name = this node's
id) list the broker's settings under Kafka's names, all read-only.
BROKER_LOGGER gets an empty list. Synonyms when asked, config type and
documentation (v3+) when asked. Nothing is sensitive. Not emulated: GROUP and
CLIENT_METRICS resources (INVALID_REQUEST), the cluster-default broker
resource (empty name: INVALID_REQUEST, as Kafka answers). Event Hubs: a hub
outside a hub-scoped connection's scope is TOPIC_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.config_entries import ConfigEntry, ResourceType, broker_entries, topic_entries
from kafka_wire.apis.authorization import visible

_Response = codec.response_class(codec.ApiKey.DescribeConfigs)
_Result = _Response.DescribeConfigsResult
_Entry = _Result.DescribeConfigsResourceResult
_Synonym = _Entry.DescribeConfigsSynonym


def _encode(entry: ConfigEntry, synonyms: bool, documentation: bool):
    return _Entry(
        name=entry.name, value=entry.value, read_only=entry.read_only,
        config_source=int(entry.source), is_default=False, is_sensitive=False,
        synonyms=[_Synonym(name=n, value=v, source=int(s)) for n, v, s in entry.synonyms]
        if synonyms else [],
        config_type=int(entry.config_type),
        documentation=entry.documentation if documentation else None)


def _result(resource, errno: int = 0, message: str | None = None, configs=None):
    return _Result(error_code=errno, error_message=message, resource_type=resource.resource_type,
                   resource_name=resource.resource_name, configs=configs or [])


def _entries(resource, ctx) -> tuple[int, str | None, list[ConfigEntry]]:
    kind = resource.resource_type
    name = resource.resource_name
    if kind == ResourceType.TOPIC:
        if not visible(ctx, name):
            return (Errors.TopicAuthorizationFailedError.errno,
                    f"this connection is limited to another event hub than {name!r}", [])
        view = ctx.topics.get(name)
        if view is None:
            return Errors.UnknownTopicOrPartitionError.errno, f"topic {name!r} does not exist", []
        return 0, None, topic_entries(ctx.topics, view.configs)
    if kind in (ResourceType.BROKER, ResourceType.BROKER_LOGGER):
        node = str(ctx.cluster.node_id)
        if not name:
            return Errors.InvalidRequestError.errno, f"give the broker id ({node})", []
        if name != node:
            return (Errors.InvalidRequestError.errno,
                    f"unexpected broker id {name!r}: this cluster's only broker is {node}", [])
        if kind == ResourceType.BROKER_LOGGER:
            return 0, None, []
        return 0, None, broker_entries(ctx.services)
    return Errors.InvalidRequestError.errno, f"unsupported resource type {kind}", []


@handles(codec.ApiKey.DescribeConfigs, 1, 4)
def describe_configs(request, ctx):
    synonyms = bool(request.include_synonyms)
    documentation = ctx.version >= 3 and bool(request.include_documentation)
    results = []
    for resource in request.resources:
        errno, message, entries = _entries(resource, ctx)
        if errno:
            results.append(_result(resource, errno, message))
            continue
        keys = resource.configuration_keys
        if keys:  # null and empty both mean every key, as in Kafka's ConfigHelper
            wanted = set(keys)
            entries = [e for e in entries if e.name in wanted]
        results.append(_result(resource, configs=[_encode(e, synonyms, documentation)
                                                  for e in entries]))
    return _Response(version=ctx.version, throttle_time_ms=0, results=results)
