"""CreateTopics (key 19), v2–v7.

One broker: replication factor must be 1 (or -1, the default), and manual
assignments may only name this broker, one replica per partition, partitions
numbered 0..n-1. num_partitions -1 takes the broker default (num.partitions).
Configs are checked by the log's LogConfig; validate_only checks everything
and creates nothing. v5+ answers carry the topic's partitions, replication
factor and every config with its source; v7 the topic id. An Event Hubs
policy may refuse a creation (``ctx.policy.create_topic(principal, name, partitions,
configs, client_id) -> None | (error code, message)``).
Names that clash with an existing topic ('.' vs '_') are INVALID_TOPIC_EXCEPTION.
Not emulated: timeout_ms (creation is immediate), CreateTopicPolicy class plug-ins.
"""
from __future__ import annotations

import logging
import uuid
from collections import Counter

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.refusals import kafka_error
from kafka_wire.apis.registry import handles
from kafka_wire.config_entries import topic_entries, unknown_topic_config
from kafka_wire.errors import for_log_error
from kafka_wire.topics import topic_name_error
from kafka_wire.log import errors as log_errors

log = logging.getLogger(__name__)

_Response = codec.response_class(codec.ApiKey.CreateTopics)
_Result = _Response.CreatableTopicResult
_Config = _Result.CreatableTopicConfigs
_NO_ID = uuid.UUID(int=0)


class _Refused(Exception):
    def __init__(self, error_code: int, message: str | None) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message


def _error(name: str, errno: int, message: str | None):
    return _Result(name=name, topic_id=_NO_ID, error_code=errno, error_message=message,
                   num_partitions=-1, replication_factor=-1, configs=[])


def _partitions(topic, ctx) -> int:
    """How many partitions ``topic`` asks for; raises _Refused when that is invalid."""
    node = ctx.cluster.node_id
    if topic.assignments:
        if topic.num_partitions != -1 or topic.replication_factor != -1:
            raise _Refused(Errors.InvalidRequestError.errno,
                           "a manual partition assignment was given: set num_partitions and "
                           "replication_factor to -1")
        indexes = sorted(a.partition_index for a in topic.assignments)
        if indexes != list(range(len(indexes))):
            raise _Refused(Errors.InvalidReplicationAssignmentError.errno,
                           f"partitions of a manual assignment must be numbered 0..{len(indexes) - 1}, "
                           f"got {indexes}")
        for a in topic.assignments:
            if list(a.broker_ids) != [node]:
                raise _Refused(Errors.InvalidReplicationAssignmentError.errno,
                               f"partition {a.partition_index} is assigned to brokers "
                               f"{list(a.broker_ids)}: this cluster has one broker, use [{node}]")
        return len(indexes)
    rf = topic.replication_factor
    if rf == 0 or rf < -1:
        raise _Refused(Errors.InvalidReplicationFactorError.errno,
                       "replication factor must be larger than 0, or -1 to use the default")
    if rf > 1:
        raise _Refused(Errors.InvalidReplicationFactorError.errno,
                       f"replication factor {rf} cannot be reached: this cluster has one broker, "
                       "use 1 or -1")
    count = topic.num_partitions
    if count == -1:
        return ctx.topics.num_partitions
    if count <= 0:
        raise _Refused(Errors.InvalidPartitionsError.errno,
                       "number of partitions must be larger than 0, or -1 to use the default")
    return count


def _configs(topic, ctx) -> dict[str, str]:
    configs: dict[str, str] = {}
    for c in topic.configs or ():
        if c.value is None:
            raise _Refused(Errors.InvalidConfigurationError.errno,
                           f"topic config {c.name!r} has a null value: give a value or leave it out")
        problem = unknown_topic_config(c.name)
        if problem:
            raise _Refused(Errors.InvalidConfigurationError.errno, problem)
        configs[c.name] = c.value
    try:
        ctx.topics.validate_configs(configs)
    except ValueError as exc:
        raise _Refused(Errors.InvalidConfigurationError.errno, str(exc)) from None
    return configs


def _success(name: str, topic_id, partitions: int, configs: dict[str, str], ctx):
    entries = [_Config(name=e.name, value=e.value, read_only=e.read_only,
                       config_source=int(e.source), is_sensitive=False)
               for e in topic_entries(ctx.topics, configs)]
    return _Result(name=name, topic_id=topic_id, error_code=0, error_message=None,
                   num_partitions=partitions, replication_factor=1, configs=entries)


def _create_one(topic, ctx, validate_only: bool):
    name = topic.name
    topics = ctx.topics
    problem = topic_name_error(name)
    if problem:
        return _error(name, Errors.InvalidTopicError.errno, problem)
    if topics.get(name) is not None:
        return _error(name, Errors.TopicAlreadyExistsError.errno, f"topic {name!r} already exists")
    other = topics.collision(name)
    if other is not None:
        return _error(name, Errors.InvalidTopicError.errno,
                      f"topic {name!r} collides with existing topic {other!r}: '.' and '_' "
                      "are the same in Kafka's metric names, pick another name")
    try:
        partitions = _partitions(topic, ctx)
        configs = _configs(topic, ctx)
        refusal = ctx.policy.create_topic(ctx.connection.principal, name, partitions, dict(configs),
                                          ctx.client_id)
        if refusal:
            raise _Refused(*kafka_error(refusal))
    except _Refused as refused:
        return _error(name, refused.error_code, refused.message)
    if validate_only:
        return _success(name, _NO_ID, partitions, configs, ctx)
    try:
        view = topics.create(name, partitions, configs)
    except log_errors.TopicExists as exc:
        return _error(name, Errors.TopicAlreadyExistsError.errno, str(exc))
    except (log_errors.LogError, OSError) as exc:
        log.error("creating topic %s failed: %s", name, exc)
        return _error(name, for_log_error(exc), str(exc))
    return _success(name, view.topic_id, view.partitions, view.configs, ctx)


@handles(codec.ApiKey.CreateTopics, 2, 7)
def create_topics(request, ctx):
    duplicated = {n for n, k in Counter(t.name for t in request.topics).items() if k > 1}
    answered: set[str] = set()
    results = []
    for topic in request.topics:
        if topic.name in duplicated:
            if topic.name not in answered:  # one answer per name, as Kafka gives
                answered.add(topic.name)
                results.append(_error(topic.name, Errors.InvalidRequestError.errno,
                                      f"topic {topic.name!r} appears more than once in the request"))
            continue
        results.append(_create_one(topic, ctx, bool(request.validate_only)))
    return _Response(version=ctx.version, throttle_time_ms=0, topics=results)
