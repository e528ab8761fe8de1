"""CreatePartitions (key 37), v0–v3.

Partition counts only grow (INVALID_PARTITIONS otherwise, as in Kafka and
Event Hubs Premium/Dedicated). New partitions may be given an assignment,
which must name this broker once per new partition. validate_only checks and
changes nothing. An Event Hubs policy may refuse
(``ctx.policy.create_partitions(principal, name, count, client_id)``,
count being the requested new total). Not emulated:
timeout_ms (the change is immediate).
"""
from __future__ import annotations

import logging
from collections import Counter

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.refusals import kafka_error
from kafka_wire.apis.registry import handles
from kafka_wire.errors import for_log_error
from kafka_wire.log import errors as log_errors

log = logging.getLogger(__name__)

_Response = codec.response_class(codec.ApiKey.CreatePartitions)
_Result = _Response.CreatePartitionsTopicResult


def _result(name: str, errno: int = 0, message: str | None = None):
    return _Result(name=name, error_code=errno, error_message=message)


def _check(topic, view, node: int) -> tuple[int, str] | None:
    count = topic.count
    current = view.partitions
    if count < current:
        return (Errors.InvalidPartitionsError.errno,
                f"topic {view.name!r} has {current} partitions, more than the requested {count}: "
                "partitions can only be added")
    if count == current:
        return (Errors.InvalidPartitionsError.errno,
                f"topic {view.name!r} already has {current} partitions")
    if topic.assignments is not None:
        added = count - current
        if len(topic.assignments) != added:
            return (Errors.InvalidReplicationAssignmentError.errno,
                    f"{len(topic.assignments)} assignments were given for {added} new partitions")
        for a in topic.assignments:
            if list(a.broker_ids) != [node]:
                return (Errors.InvalidReplicationAssignmentError.errno,
                        f"assignment {list(a.broker_ids)} is invalid: this cluster has one broker, "
                        f"use [{node}]")
    return None


@handles(codec.ApiKey.CreatePartitions, 0, 3)
def create_partitions(request, ctx):
    topics = ctx.topics
    node = ctx.cluster.node_id
    policy = ctx.policy
    duplicated = {n for n, k in Counter(t.name for t in request.topics).items() if k > 1}
    answered: set[str] = set()
    results = []
    for topic in request.topics:
        name = topic.name
        if name in duplicated:
            if name not in answered:
                answered.add(name)
                results.append(_result(name, Errors.InvalidRequestError.errno,
                                       f"topic {name!r} appears more than once in the request"))
            continue
        view = topics.get(name)
        if view is None:
            results.append(_result(name, Errors.UnknownTopicOrPartitionError.errno,
                                   f"topic {name!r} does not exist"))
            continue
        refusal = _check(topic, view, node)
        if refusal is None:
            denial = policy.create_partitions(ctx.connection.principal, name, topic.count,
                                              ctx.client_id)
            refusal = kafka_error(denial) if denial else None
        if refusal:
            results.append(_result(name, *refusal))
            continue
        if not request.validate_only:
            try:
                topics.create_partitions(name, topic.count)
            except (log_errors.LogError, OSError) as exc:
                log.error("adding partitions to %s failed: %s", name, exc)
                results.append(_result(name, for_log_error(exc), str(exc)))
                continue
            log.info("topic %s now has %d partitions", name, topic.count)
        results.append(_result(name))
    return _Response(version=ctx.version, throttle_time_ms=0, results=results)
