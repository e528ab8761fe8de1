"""OffsetForLeaderEpoch (key 23), v2–v4.

A partition has one leader epoch (LEADER_EPOCH, 0) from offset 0 until its
leader moves (a geo promotion, a test fault): each move starts the next epoch
at the log end, and every batch appended is stamped with the epoch it was
appended in (TopicManager.append). Asking for an epoch answers the largest
epoch at or below it and where the next began (the high watermark for the
current one), from that history; a geo-replicated namespace keeps it across
restarts (its state file), as Kafka's leader-epoch-checkpoint. As in Kafka,
asking for an epoch no leader has had yet (or -1) answers leader_epoch -1
and end_offset -1 without an error; a consumer then treats its position as
truncated and resets it. current_leader_epoch is checked as Fetch does:
older is FENCED_LEADER_EPOCH, newer UNKNOWN_LEADER_EPOCH. Not emulated:
follower requests (replica_id >= 0 are answered as a consumer's). Event
Hubs: a hub the connection may not Listen on is TOPIC_AUTHORIZATION_FAILED.
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import LISTEN, topic_error

_Response = codec.response_class(codec.ApiKey.OffsetForLeaderEpoch)
_TopicResult = _Response.OffsetForLeaderTopicResult
_EpochEnd = _TopicResult.EpochEndOffset

UNDEFINED = -1


def _end(index: int, errno: int, epoch: int = UNDEFINED, offset: int = UNDEFINED):
    return _EpochEnd(error_code=errno, partition=index, leader_epoch=epoch, end_offset=offset)


def _answer(ctx, view, p):
    index = p.partition
    plog = ctx.topics.log(view.name, index) if view is not None and 0 <= index < view.partitions else None
    if plog is None:
        return _end(index, Errors.UnknownTopicOrPartitionError.errno)
    denied = topic_error(ctx, LISTEN, view.name)
    if denied:
        return _end(index, denied)
    errno = ctx.topics.epoch_error(view.name, index, p.current_leader_epoch)
    if errno:
        return _end(index, errno)
    if p.leader_epoch > ctx.topics.leader_epoch(view.name, index):
        # An epoch after the current one: Kafka answers "undefined", no error.
        return _end(index, 0)
    epoch, end = ctx.topics.end_offset_for_epoch(view.name, index, p.leader_epoch)
    return _end(index, 0, epoch, end)


@handles(codec.ApiKey.OffsetForLeaderEpoch, 2, 4)
def offset_for_leader_epoch(request, ctx):
    topics_out = []
    for t in request.topics:
        view = ctx.topics.get(t.topic)
        topics_out.append(_TopicResult(topic=t.topic,
                                       partitions=[_answer(ctx, view, p) for p in t.partitions]))
    return _Response(version=ctx.version, throttle_time_ms=0, topics=topics_out)
