"""Metadata (key 3), v0–v13.

One broker leads every partition with a stable leader epoch. Topics are
auto-created when the request allows it (v4+ flag; always for v0–v3) and the
broker is configured to, as Event Hubs does for Java clients. Topic ids
(v10+) can be looked up. Authorized operations are reported as "not
requested" (INT32_MIN) unless asked, then as all operations.
"""
from __future__ import annotations

import logging

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.refusals import error_code
from kafka_wire.apis.registry import handles
from kafka_wire.errors import for_log_error
from kafka_wire.log import errors as log_errors
from kafka_wire.topics import LEADER_EPOCH, topic_name_error

log = logging.getLogger(__name__)

_Response = codec.response_class(codec.ApiKey.Metadata)
_Topic = _Response.MetadataResponseTopic
_Partition = _Topic.MetadataResponsePartition
_Broker = _Response.MetadataResponseBroker
_NOT_REQUESTED = None  # encoded as INT32_MIN
# READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS (Kafka AclOperation codes)
_ALL_TOPIC_OPS = frozenset({3, 4, 5, 6, 7, 8, 10, 11})


def partition_entries(view, node_id: int, topics=None, unavailable=None) -> list:
    out = []
    for p in range(view.partitions):
        epoch = topics.leader_epoch(view.name, p) if topics is not None else LEADER_EPOCH
        if unavailable is not None and unavailable(view.name, p):
            # Mid "election" (a test fault): no leader, as Kafka reports it.
            out.append(_Partition(error_code=Errors.LeaderNotAvailableError.errno, partition_index=p,
                                  leader_id=-1, leader_epoch=epoch, replica_nodes=[node_id],
                                  isr_nodes=[], offline_replicas=[]))
            continue
        out.append(_Partition(error_code=0, partition_index=p, leader_id=node_id, leader_epoch=epoch,
                              replica_nodes=[node_id], isr_nodes=[node_id], offline_replicas=[]))
    return out


def _topic_entry(ctx, view, node_id: int, ops):
    faults = ctx.services.faults
    unavailable = (lambda t, p: faults.leader_unavailable(ctx, t, p)) if faults is not None else None
    return _Topic(error_code=0, name=view.name, topic_id=view.topic_id, is_internal=view.internal,
                  partitions=partition_entries(view, node_id, ctx.topics, unavailable),
                  authorized_operations=ops)


def _error_entry(name, error: int, topic_id=None):
    return _Topic(error_code=error, name=name, topic_id=topic_id, is_internal=False, partitions=[],
                  authorized_operations=_NOT_REQUESTED)


@handles(codec.ApiKey.Metadata, 0, 13)
def metadata(request, ctx):
    version = ctx.version
    topics = ctx.topics
    node = ctx.cluster.node_id
    policy = ctx.policy  # Event Hubs: which hubs the principal may see, auto-creation
    principal = ctx.connection.principal
    ops = set(_ALL_TOPIC_OPS) if request.include_topic_authorized_operations else _NOT_REQUESTED
    allow_auto = topics.auto_create and (version < 4 or request.allow_auto_topic_creation)

    entries = []
    if request.topics is None or (version == 0 and not request.topics):
        for view in topics.all():
            if policy.sees(principal, view.name):
                entries.append(_topic_entry(ctx, view, node, ops))
    else:
        seen = set()  # one entry a topic, as Kafka (a set of the names and ids asked for)
        for wanted in request.topics:
            name = wanted.name
            if not name and version >= 10 and wanted.topic_id is not None \
                    and wanted.topic_id.int != 0:
                if wanted.topic_id in seen:
                    continue
                seen.add(wanted.topic_id)
                # Looked up by id (Java's KIP-848 consumer sends an empty name with it).
                name = topics.name_for_id(wanted.topic_id)
                if name is None:
                    entries.append(_error_entry(None, Errors.UnknownTopicIdError.errno, wanted.topic_id))
                    continue
            if name in seen:
                continue
            seen.add(name)
            if not policy.sees(principal, name):
                entries.append(_error_entry(name, Errors.TopicAuthorizationFailedError.errno))
                continue
            view = topics.get(name)
            if view is None:
                if topic_name_error(name):
                    entries.append(_error_entry(name, Errors.InvalidTopicError.errno))
                    continue
                if not allow_auto:
                    entries.append(_error_entry(name, Errors.UnknownTopicOrPartitionError.errno))
                    continue
                refused = policy.auto_create(principal, name, ctx.client_id)
                if refused:  # report it, don't fail the request
                    log.info("auto-creation of %s refused: %s", name, refused.message)
                    entries.append(_error_entry(name, error_code(refused)))
                    continue
                try:
                    view = topics.create(name)
                except (log_errors.LogError, OSError, ValueError) as exc:
                    # An OS errno (ENOSPC is 28) is not a Kafka error code: map it by kind.
                    log.warning("auto-creation of %s failed: %s", name, exc)
                    code = (Errors.InvalidTopicError.errno if isinstance(exc, ValueError)
                            else for_log_error(exc))
                    entries.append(_error_entry(name, code))
                    continue
            entries.append(_topic_entry(ctx, view, node, ops))

    cluster = ctx.cluster
    return _Response(
        version=version,
        throttle_time_ms=0,
        brokers=[_Broker(node_id=node, host=cluster.host, port=cluster.port, rack=cluster.rack)],
        cluster_id=cluster.cluster_id,
        controller_id=node,
        topics=entries,
        authorized_operations=_NOT_REQUESTED,
        error_code=0,
    )
