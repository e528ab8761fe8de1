"""ListOffsets (key 2), v1–v11.

Special timestamps, each from the version Kafka takes it (ReplicaManager's
timestampMinSupportedVersion; any other negative one, or one asked in an older
version, is UNSUPPORTED_VERSION): -1 latest and -2 earliest (v1), -3 max
timestamp (v7), -4 earliest local (v8; = earliest, there is no tiered
storage), -5 latest tiered (v9) and -6 earliest pending upload (v11, KIP-1023):
nothing is tiered, so both are offset -1, timestamp -1, no error, as Kafka's
UnifiedLog answers a log without remote storage. Positive timestamps go
through the time index. v0 is not served.

The leader epoch answered is Kafka's (UnifiedLog.fetchOffsetByTimestamp,
Partition.fetchOffsetForTimestamp): for a timestamp or max timestamp (-3) the
epoch of the batch holding the offset found, for earliest (-2, -4) the epoch of
the log start offset, for latest (-1) the leader's current epoch; -1 where no
offset is found. Every appended batch is stamped with the epoch it was appended
in (TopicManager.append), so the epochs' history (Kafka's leader-epoch cache)
answers without reading the batch.

Latest is the last fetchable offset: the high watermark, or the last stable
offset under read_committed. Every other lookup but earliest (-2, -4) that
finds an offset at or past it is answered offset -1, timestamp -1, no error, as
Kafka's ReplicaManager.fetchOffset: a read_committed client is never pointed
into an open transaction. Event Hubs: a hub the connection may not Listen on is
TOPIC_AUTHORIZATION_FAILED. A partition named twice in one request (under one
topic entry or two) is INVALID_REQUEST each time, as Kafka's ReplicaManager
answers ``duplicatePartitions``: which of its answers a client would take is
otherwise a guess.

A request naming more than MAX_ENTRIES topics and partitions is refused before it
is decoded, the connection closed as for any request Kafka cannot parse
(INVALID_REQUEST): 2 million entries (23 MiB) held the event loop for 10 s
(apis/request_bounds.py counts them, as for every request with a list).
"""
from __future__ import annotations

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.request_bounds import MAX_ENTRIES  # noqa: F401  (named in the docstring)
from kafka_wire.apis.authorization import LISTEN, topic_error

_Response = codec.response_class(codec.ApiKey.ListOffsets)
_TopicResp = _Response.ListOffsetsTopicResponse
_PartResp = _TopicResp.ListOffsetsPartitionResponse

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -1, -2, -3, -4
LATEST_TIERED, EARLIEST_PENDING_UPLOAD = -5, -6  # KIP-1005, KIP-1023
# The first version serving each special timestamp (Kafka's ReplicaManager).
_MIN_VERSION = {LATEST: 1, EARLIEST: 1, MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8,
                LATEST_TIERED: 9, EARLIEST_PENDING_UPLOAD: 11}
_NONE = (-1, -1, -1)


def _part(index, error, timestamp=-1, offset=-1, epoch=-1):
    return _PartResp(partition_index=index, error_code=error, old_style_offsets=[],
                     timestamp=timestamp, offset=offset, leader_epoch=epoch)


def _unsupported(ts: int, version: int) -> bool:
    return ts < 0 and version < _MIN_VERSION.get(ts, 1 << 15)


def epoch_for_offset(topics, name: str, partition: int, offset: int) -> int:
    """The leader epoch ``offset`` was appended in: the last epoch begun at or before it
    (Kafka's LeaderEpochFileCache.epochForOffset). Walks the epochs' history back from the
    current one with OffsetForLeaderEpoch's look-up (an epoch's end is the next one's
    start): one step for a partition whose leader never moved."""
    epoch = topics.leader_epoch(name, partition)
    while True:
        previous, next_start = topics.end_offset_for_epoch(name, partition, epoch - 1)
        if previous < 0 or offset >= next_start:
            return epoch
        epoch = previous


def lookup(ctx, name: str, partition: int, ts: int, read_committed: bool) -> tuple[int, int, int]:
    """(timestamp, offset, leader epoch) for one partition; raises nothing, returns
    (-1, -1, -1) if none."""
    topics = ctx.topics
    plog = topics.log(name, partition)
    if ts in (EARLIEST, EARLIEST_LOCAL):
        start = plog.log_start_offset
        return -1, start, epoch_for_offset(topics, name, partition, start)
    fetchable = plog.last_stable_offset if read_committed else plog.high_watermark
    if ts == LATEST:
        return -1, fetchable, topics.leader_epoch(name, partition)
    if ts in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        return _NONE
    found = plog.max_timestamp() if ts == MAX_TIMESTAMP else plog.offset_for_timestamp(ts)
    if found is None or not 0 <= found[1] < fetchable:
        return _NONE
    return found[0], found[1], epoch_for_offset(topics, name, partition, found[1])


def _duplicates(topics) -> set:
    """The (topic, partition) pairs named more than once."""
    seen: set = set()
    twice: set = set()
    for t in topics:
        for p in t.partitions:
            key = (t.name, p.partition_index)
            (twice if key in seen else seen).add(key)
    return twice


@handles(codec.ApiKey.ListOffsets, 1, 11)
def list_offsets(request, ctx):
    version = ctx.version
    read_committed = version >= 2 and request.isolation_level == 1
    topics_out = []
    duplicates = _duplicates(request.topics)
    for t in request.topics:
        view = ctx.topics.get(t.name)
        denied = topic_error(ctx, LISTEN, t.name) if view is not None else 0
        parts = []
        for p in t.partitions:
            idx = p.partition_index
            if denied:
                parts.append(_part(idx, denied))
                continue
            if duplicates and (t.name, idx) in duplicates:
                parts.append(_part(idx, Errors.InvalidRequestError.errno))
                continue
            # Before the partition is looked up, as Kafka's ReplicaManager.
            if _unsupported(p.timestamp, version):
                parts.append(_part(idx, Errors.UnsupportedVersionError.errno))
                continue
            if view is None or not 0 <= idx < view.partitions:
                parts.append(_part(idx, Errors.UnknownTopicOrPartitionError.errno))
                continue
            epoch = p.current_leader_epoch if version >= 4 else -1
            code = ctx.topics.epoch_error(view.name, idx, epoch)
            if not code and ctx.services.faults and ctx.services.faults.partition_hook():
                code = ctx.services.faults.partition_error(ctx, codec.ApiKey.ListOffsets, view.name, idx) or 0
            if code:
                parts.append(_part(idx, code))
                continue
            parts.append(_part(idx, 0, *lookup(ctx, view.name, idx, p.timestamp, read_committed)))
        topics_out.append(_TopicResp(name=t.name, partitions=parts))
    return _Response(version=version, throttle_time_ms=0, topics=topics_out)
