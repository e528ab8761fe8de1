"""DescribeProducers (key 61), v0: the idempotent/transactional producers a
partition's log knows (their epoch, last sequence and open transaction)."""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import LISTEN, topic_error

_Response = codec.response_class(codec.ApiKey.DescribeProducers)
_Topic = _Response.TopicResponse
_Part = _Topic.PartitionResponse
_Producer = _Part.ProducerState


@handles(codec.ApiKey.DescribeProducers, 0, 0)
def describe_producers(request, ctx):
    topics = []
    for t in request.topics:
        parts = []
        for idx in t.partition_indexes:
            plog = ctx.topics.log(t.name, idx)
            error = topic_error(ctx, LISTEN, t.name)
            if not error and plog is None:
                error = Errors.UnknownTopicOrPartitionError.errno
            producers = [] if error else [
                _Producer(producer_id=p.producer_id, producer_epoch=p.producer_epoch,
                          last_sequence=p.last_sequence, last_timestamp=p.last_timestamp,
                          coordinator_epoch=p.coordinator_epoch,
                          current_txn_start_offset=p.current_txn_start_offset)
                for p in plog.describe_producers()]
            parts.append(_Part(partition_index=idx, error_code=error, error_message=None,
                               active_producers=producers))
        topics.append(_Topic(name=t.name, partitions=parts))
    return _Response(version=ctx.version, throttle_time_ms=0, topics=topics)
