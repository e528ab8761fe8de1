"""Produce (key 0), v3–v13.

Batches stay opaque: the log validates length, magic and CRC-32C, assigns
offsets and (for LogAppendTime topics) stamps the append time. acks=0 gets
no response at all; acks=1 and acks=all are the same thing on one broker.
v13 names topics by id. Not emulated: replication (min.insync.replicas is
always met by the single replica).
"""
from __future__ import annotations

import asyncio
import logging

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis import produce_decoding  # noqa: F401  (registers the fast decoder)
from kafka_wire.apis.produce_encoding import encode_produce
from kafka_wire.apis.refusals import kafka_error
from kafka_wire.apis.registry import handles
from kafka_wire.errors import for_log_error
from kafka_wire.fault_plan import storage_fault
from kafka_wire.log import errors as log_errors
from kafka_wire.log.batch import summarize, validate_records
from kafka_wire.log.records import record_keys

log = logging.getLogger(__name__)



def _part(index: int, error: int, base_offset: int = -1, append_time: int = -1,
          log_start: int = -1, message: str | None = None) -> tuple:
    """A partition's answer, as apis/produce_encoding.py encodes it."""
    return index, error, base_offset, append_time, log_start, message


@handles(codec.ApiKey.Produce, 3, 13)
def produce(request, ctx):
    version = ctx.version
    topics = ctx.topics
    acks = request.acks
    policy = ctx.policy  # Event Hubs rights, tier rules, quota
    faults = ctx.services.faults and ctx.services.faults.partition_hook()
    now_ms = ctx.clock.now_ms()
    bad_acks = acks not in (0, 1, -1)
    held_ms = 0  # an injected slow append holds the answer (not the loop)
    responses = []
    for tdata in request.topic_data:
        name = tdata.name
        if version >= 13:
            name = topics.name_for_id(tdata.topic_id)
        view = topics.get(name) if name is not None else None
        parts = []
        for pdata in tdata.partition_data:
            idx = pdata.index
            if bad_acks:
                parts.append(_part(idx, Errors.InvalidRequiredAcksError.errno))
                continue
            if view is None:
                code = (Errors.UnknownTopicIdError.errno if version >= 13 and name is None
                        else Errors.UnknownTopicOrPartitionError.errno)
                parts.append(_part(idx, code))
                continue
            if not 0 <= idx < view.partitions or pdata.records is None:
                parts.append(_part(idx, Errors.UnknownTopicOrPartitionError.errno))
                continue
            if faults is not None:
                injected = faults.partition_error(ctx, codec.ApiKey.Produce, view.name, idx)
                if injected:
                    parts.append(_part(idx, injected))
                    continue
            records = pdata.records
            try:  # the one walk of the batch headers: policy, quota and append share it
                headers, invalid = validate_records(records), None
            except log_errors.LogError as exc:
                headers, invalid = None, exc
            admission = policy.produce(
                ctx.connection.principal, view.name,
                None if invalid else summarize(headers, len(records)), request.timeout_ms,
                ctx.client_id, lambda: record_keys(records))
            ctx.throttled_by(view.name, admission.throttle_ms)
            if admission.denial:
                code, message = kafka_error(admission.denial)
                parts.append(_part(idx, code, message=message))
                continue
            if faults is not None and faults.plan.active:  # injected storage faults
                failed, held = storage_fault(faults.plan, {
                    "namespace": ctx.namespace.name, "hub": view.name, "partition": idx,
                    "client": ctx.client_id, "protocol": "kafka"})
                if failed is not None:
                    log.error("append to %s-%d failed: %s", view.name, idx, failed)
                    parts.append(_part(idx, Errors.KafkaStorageError.errno, message=failed))
                    continue
                held_ms = max(held_ms, held)
            try:
                if invalid is not None:
                    raise invalid
                info = topics.append(view.name, idx, records, now_ms, headers)
            except log_errors.LogError as exc:
                code = for_log_error(exc)
                if code == Errors.KafkaStorageError.errno:
                    log.error("append to %s-%d failed: %s", view.name, idx, exc)
                parts.append(_part(idx, code, message=str(exc) or None))
                continue
            except Exception as exc:  # raised by the idempotence layer with an errno
                code = getattr(exc, "errno", None)
                if code is None:
                    raise
                plog = topics.log(view.name, idx)
                parts.append(_part(idx, code, log_start=plog.log_start_offset if plog else -1,
                                   message=str(exc) or None))
                continue
            parts.append((idx, 0, info.base_offset,
                          info.append_time_ms if info.log_append_time else -1,
                          info.log_start_offset, None))
        responses.append((name, tdata.topic_id, parts))
    if acks == 0:
        return None
    response = encode_produce(version, responses, ctx.throttle_ms)
    return _held(response, held_ms, ctx.clock) if held_ms else response


async def _held(response, ms: int, clock):
    """``response`` after ``ms`` on the broker's clock; the connection's other requests
    wait behind it (Kafka answers in order), other connections do not."""
    done = asyncio.get_running_loop().create_future()
    clock.call_later(ms, lambda: done.done() or done.set_result(None))
    await done
    return response
