"""DeleteRecords (key 21), v0–v2.

Moves a partition's log start offset up to the requested offset (-1: the
high watermark) and deletes the segments wholly below it; the answer's
low_watermark is the new log start offset. An offset below the current log
start changes nothing; above the high watermark (or negative other than -1)
is OFFSET_OUT_OF_RANGE; a topic whose cleanup.policy lacks "delete" is
POLICY_VIOLATION, as in Kafka. Event Hubs itself has no DeleteRecords: its
layer may refuse (``ctx.policy.delete_records(principal, hub, client_id)``; the error
is reported per partition, the response has no message field). Not
emulated: timeout_ms (deletion is immediate).
"""
from __future__ import annotations

import logging

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.refusals import error_code
from kafka_wire.apis.registry import handles
from kafka_wire.errors import for_log_error
from kafka_wire.log import errors as log_errors

log = logging.getLogger(__name__)

_Response = codec.response_class(codec.ApiKey.DeleteRecords)
_TopicResult = _Response.DeleteRecordsTopicResult
_PartResult = _TopicResult.DeleteRecordsPartitionResult

HIGH_WATERMARK = -1


def _delete(ctx, view, index: int, offset: int, policy) -> tuple[int, int]:
    """(error code, low watermark) for one partition."""
    plog = ctx.topics.log(view.name, index) if 0 <= index < view.partitions else None
    if plog is None:
        return Errors.UnknownTopicOrPartitionError.errno, -1
    if not ctx.topics.effective_config(view.name).delete_enabled:
        log.info("refused DeleteRecords on %s-%d: cleanup.policy is compact", view.name, index)
        return Errors.PolicyViolationError.errno, -1
    target = plog.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0 or target > plog.high_watermark:
        return Errors.OffsetOutOfRangeError.errno, -1
    refusal = policy.delete_records(ctx.connection.principal, view.name, ctx.client_id)
    if refusal:
        log.info("refused DeleteRecords on %s-%d: %s", view.name, index, refusal.message)
        return error_code(refusal), -1
    try:
        low = plog.delete_records_before(target)
    except log_errors.OffsetOutOfRange:
        return Errors.OffsetOutOfRangeError.errno, -1
    except (log_errors.LogError, OSError) as exc:
        log.error("DeleteRecords on %s-%d failed: %s", view.name, index, exc)
        return for_log_error(exc), -1
    return 0, low


@handles(codec.ApiKey.DeleteRecords, 0, 2)
def delete_records(request, ctx):
    # One answer a partition, its offset the last named, as Kafka (a map by partition):
    # 20,000 entries of one partition were 20,000 deletions, 0.87 s for everyone.
    wanted: dict[str, dict[int, int]] = {}
    for t in request.topics:
        offsets = wanted.setdefault(t.name, {})
        for p in t.partitions:
            offsets[p.partition_index] = p.offset
    policy = ctx.policy
    topics_out = []
    for name, offsets in wanted.items():
        view = ctx.topics.get(name)
        parts = []
        for index, offset in offsets.items():
            if view is None:
                errno, low = Errors.UnknownTopicOrPartitionError.errno, -1
            else:
                errno, low = _delete(ctx, view, index, offset, policy)
            parts.append(_PartResult(partition_index=index, low_watermark=low, error_code=errno))
        topics_out.append(_TopicResult(name=name, partitions=parts))
    return _Response(version=ctx.version, throttle_time_ms=0, topics=topics_out)
