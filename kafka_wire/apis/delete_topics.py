"""DeleteTopics (key 20), v1–v6.

Deletion is immediate: the topic's partitions are closed and their files
removed before the answer goes out. v6 may name a topic by id (name null).
An Event Hubs policy may refuse (``ctx.policy.delete_topic(principal, name)``). Not emulated: timeout_ms, delete.topic.enable=false.
"""
from __future__ import annotations

import logging
import uuid
from collections import Counter

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.refusals import kafka_error
from kafka_wire.apis.registry import handles
from kafka_wire.errors import for_log_error
from kafka_wire.log import errors as log_errors

log = logging.getLogger(__name__)

_Response = codec.response_class(codec.ApiKey.DeleteTopics)
_Result = _Response.DeletableTopicResult
_NO_ID = uuid.UUID(int=0)


def _result(name, topic_id, errno: int = 0, message: str | None = None):
    return _Result(name=name, topic_id=topic_id or _NO_ID, error_code=errno, error_message=message)


def _wanted(request, ctx) -> list[tuple[str | None, uuid.UUID | None, int, str | None]]:
    """(name, id, error, message) per requested topic, names resolved from ids."""
    topics = ctx.topics
    if ctx.version < 6:
        return [(name, None, 0, None) for name in request.topic_names]
    out = []
    for t in request.topics:
        has_id = t.topic_id is not None and t.topic_id != _NO_ID
        if t.name is not None and has_id:
            out.append((t.name, t.topic_id, Errors.InvalidRequestError.errno,
                        "give a topic name or a topic id, not both"))
        elif has_id:
            name = topics.name_for_id(t.topic_id)
            if name is None:
                out.append((None, t.topic_id, Errors.UnknownTopicIdError.errno,
                            f"no topic has id {t.topic_id}"))
            else:
                out.append((name, t.topic_id, 0, None))
        elif t.name is not None:
            out.append((t.name, None, 0, None))
        else:
            out.append((None, None, Errors.InvalidRequestError.errno,
                        "a topic to delete needs a name or an id"))
    return out


@handles(codec.ApiKey.DeleteTopics, 1, 6)
def delete_topics(request, ctx):
    topics = ctx.topics
    policy = ctx.policy
    wanted = _wanted(request, ctx)
    counts = Counter(name for name, _id, err, _m in wanted if not err)
    answered: set[str] = set()
    results = []
    for name, topic_id, errno, message in wanted:
        if errno:
            results.append(_result(name, topic_id, errno, message))
            continue
        if counts[name] > 1:
            if name not in answered:
                answered.add(name)
                results.append(_result(name, topic_id, Errors.InvalidRequestError.errno,
                                       f"topic {name!r} appears more than once in the request"))
            continue
        view = topics.get(name)
        if view is None:
            results.append(_result(name, topic_id, Errors.UnknownTopicOrPartitionError.errno,
                                   f"topic {name!r} does not exist"))
            continue
        refusal = policy.delete_topic(ctx.connection.principal, name)
        if refusal:
            results.append(_result(name, view.topic_id, *kafka_error(refusal)))
            continue
        try:
            topics.delete(name)
        except (log_errors.LogError, OSError) as exc:
            log.error("deleting topic %s failed: %s", name, exc)
            results.append(_result(name, view.topic_id, for_log_error(exc), str(exc)))
            continue
        ctx.services.fetch_sessions.drop_topic(name)  # sessions forget its partitions
        results.append(_result(name, view.topic_id))
    return _Response(version=ctx.version, throttle_time_ms=0, responses=results)
