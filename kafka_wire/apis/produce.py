"""Produce (key 0), v3–v13.

Batches stay opaque: the log validates length, magic and CRC-32C, assigns
offsets and (for LogAppendTime topics) stamps the append time. Compressed
batches are also decompressed, as Kafka's LogValidator does (INVALID_RECORD if
they do not decompress, or hold more than every reader's bound: _records_checked).
acks=0 gets no response at all; acks=1 and acks=all are the same thing on one broker.
v13 names topics by id. Not emulated: replication (min.insync.replicas is
always met by the single replica).
"""
from __future__ import annotations

import asyncio
import logging
import struct

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis import produce_decoding  # noqa: F401  (registers the fast decoder)
from kafka_wire.apis.produce_encoding import encode_produce
from kafka_wire.apis.refusals import kafka_error
from kafka_wire.apis.registry import handles
from kafka_wire.errors import for_log_error
from kafka_wire.eventhubs.publication import injected_storage_fault
from kafka_wire.log import errors as log_errors
from kafka_wire.log.batch import COMPRESSION_MASK, HEADER_SIZE, LOG_OVERHEAD, MAGIC_OFFSET, summarize, validate_records
from kafka_wire.log.records import ZSTD, UnsupportedCodec, check_records, record_keys

log = logging.getLogger(__name__)

_BATCH_LENGTH = struct.Struct(">i")  # @8 in a RecordBatch


def _part(index: int, error: int, base_offset: int = -1, append_time: int = -1,
          log_start: int = -1, message: str | None = None) -> tuple:
    """A partition's answer, as apis/produce_encoding.py encodes it."""
    return index, error, base_offset, append_time, log_start, message


@handles(codec.ApiKey.Produce, 3, 13)
def produce(request, ctx):
    version = ctx.version
    topics = ctx.topics
    acks = request.acks
    faults = ctx.services.faults and ctx.services.faults.partition_hook()
    bad_acks = acks not in (0, 1, -1)
    unissued = ctx.services.producer_ids.first_unissued  # idempotent batches need an id below it
    responses = []
    unchecked = []  # publications whose compressed batch is checked in a thread
    # What passes the checks that need no policy, in request order: (view, index, records,
    # headers, invalid, the topic's answers, this partition's place in them).
    publications = []
    for tdata in request.topic_data:
        name = tdata.name
        if version >= 13:
            name = topics.name_for_id(tdata.topic_id)
        view = topics.get(name) if name is not None else None
        parts = []
        responses.append((name, tdata.topic_id, parts))
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
                _one_batch(records)
                headers, invalid = validate_records(records), None
                if version < 7 and any(h.attributes & COMPRESSION_MASK == ZSTD for h in headers):
                    # Kafka: zstd needs Produce v7+ (KIP-110), so older clients never read it either
                    raise log_errors.UnsupportedCompression(
                        f"Produce v{version} may not carry zstd batches: zstd needs Produce v7 or later")
                _verify_producer(ctx, headers, view.name, idx, unissued)
                if (headers and headers[0].attributes & COMPRESSION_MASK
                        and not _records_checked(records, headers[0])):
                    unchecked.append(len(publications))
            except log_errors.LogError as exc:
                headers, invalid = None, exc
            publications.append((view, idx, records, headers, invalid, parts, len(parts)))
            parts.append(None)  # answered below
    if unchecked:  # large compressed batches: checked in a thread, the loop serving others meanwhile
        return _checked_then_published(unchecked, publications, responses, request, ctx, faults)
    return _published(publications, responses, request, ctx, faults)


def _published(publications: list, responses: list, request, ctx, faults):
    held_ms = _publish(publications, request.timeout_ms, ctx, faults) if publications else 0
    if request.acks == 0:
        return None
    response = encode_produce(ctx.version, responses, ctx.throttle_ms)
    return _held(response, held_ms, ctx.clock) if held_ms else response


# A compressed batch of at most this many records, decompressing to at most this many KiB,
# is checked on the event loop (decompressed only: for 1 MiB, 0.1-0.5 ms with lz4, snappy
# or zstd, 0.8-4 ms with gzip); a larger one in a thread.
CHECKED_ON_LOOP = 1024


def _records_checked(records, header) -> bool:
    """As Kafka's LogValidator: a compressed batch is decompressed at produce, and refused
    with INVALID_RECORD if it does not decompress (a decompression bomb past
    log.records.decompressed_limit included), so that no reader (AMQP receivers, Capture,
    the console, the cleaner) meets a batch it cannot decompress. Its records are not
    parsed here, as Kafka does: that walk cost 1-1.5 us a record in Python, thirty times
    the decompression (a compressed produce's broker CPU x30); the readers go on past
    records that do not parse.
    (Not CORRUPT_MESSAGE: the Java producer and librdkafka retry that one until their
    delivery timeout, and this refusal is the same each time.) Uncompressed batches stay
    opaque. False when the batch is too large to check on the loop."""
    if header.is_control:
        return True  # (a producer may not write markers: validate_records refuses them)
    try:
        return check_records(records, header, CHECKED_ON_LOOP)
    except UnsupportedCodec:
        return True  # no library to check it with: stored as before, Kafka consumers read it
    except log_errors.CorruptRecord as exc:
        raise log_errors.InvalidRecord(str(exc)) from None


def _check_in_thread(records, header) -> log_errors.LogError | None:
    try:
        check_records(records, header)
    except UnsupportedCodec:
        pass
    except log_errors.CorruptRecord as exc:
        return log_errors.InvalidRecord(str(exc))
    return None


async def _checked_then_published(unchecked: list[int], publications: list, responses: list, request, ctx,
                                  faults):
    """Check the compressed batches of ``unchecked`` (indexes into ``publications``) in a
    thread (decompression releases the GIL; the walk of records shares it), then admit
    and append. The connection's next request waits (the server serves a connection's
    requests in order), so a producer's batches stay in order."""
    loop = asyncio.get_running_loop()
    for i in unchecked:
        view, idx, records, headers, invalid, parts, slot = publications[i]
        invalid = await loop.run_in_executor(None, _check_in_thread, records, headers[0])
        if invalid is not None:
            publications[i] = (view, idx, records, None, invalid, parts, slot)
    result = _published(publications, responses, request, ctx, faults)
    return await result if asyncio.iscoroutine(result) else result


def _verify_producer(ctx, headers, topic: str, partition: int, unissued: int) -> None:
    """An idempotent batch's producer id must have been issued: one written as the id
    InitProducerId hands out next made that producer's first batch (sequence 0) pass for a
    retry of it, acknowledged and never stored. UNKNOWN_PRODUCER_ID: the clients ask for a
    new id. A transactional batch needs its producer's ongoing transaction to hold the
    partition, at its epoch (Kafka 3.6+'s verification; the error it answers otherwise)."""
    txns = ctx.txns
    for h in headers:
        if txns is None or not h.is_transactional:
            # (a transactional one is checked below: an unissued id has no transaction)
            if h.producer_id >= unissued:
                raise log_errors.UnknownProducerId(
                    f"producer id {h.producer_id} was never issued by this broker: "
                    "ask InitProducerId for one")
            continue
        code = txns.verify(h.producer_id, h.producer_epoch, topic, partition)
        if code:
            error = (log_errors.InvalidProducerEpoch if code == log_errors.InvalidProducerEpoch.error_code
                     else log_errors.InvalidTxnState if code == log_errors.InvalidTxnState.error_code
                     else log_errors.ProducerStateError)(
                f"producer {h.producer_id} (epoch {h.producer_epoch}) may not write {topic}-{partition} "
                "in a transaction now: it is fenced, its transaction is ending, or the partition was "
                "not added to its ongoing transaction")
            error.error_code = code
            raise error


def _one_batch(records) -> None:
    """Kafka's ProduceRequest.validateRecords: Produce v3+ carries exactly one record batch a
    partition (INVALID_RECORD otherwise). Every client sends one; more, of 61 bytes each, made
    one 87 MiB request a 1.5 million batch walk that held the event loop for 7 s."""
    if len(records) >= HEADER_SIZE and records[MAGIC_OFFSET] == 2:  # other magics: validate_records says why
        size = _BATCH_LENGTH.unpack_from(records, 8)[0] + LOG_OVERHEAD
        if HEADER_SIZE <= size < len(records):
            raise log_errors.InvalidRecord(
                f"the records of a partition hold {len(records) - size} bytes after their first record "
                "batch: a Produce request carries exactly one record batch a partition")


def _publish(publications: list, timeout_ms: int, ctx, faults) -> int:
    """Admit and append ``publications``, filling in their answers; the ms an injected
    slow append holds the response. The namespace's policy sees the whole request at
    once (rights and hub checks once per hub, tier rules and quota once); when anything
    in it is refused, recorded or throttled, it decides each publication in turn."""
    namespace = ctx.namespace
    policy = namespace.policy  # Event Hubs rights, tier rules, quota
    principal = ctx.connection.principal
    client_id = ctx.client_id
    if len(publications) == 1:  # what librdkafka sends: one partition a request
        view, _i, records, headers, invalid, _p, _s = publications[0]
        hubs = (view.name,)
        total = largest = None if invalid is not None else summarize(headers, len(records))
    else:
        hubs = {p[0].name for p in publications}
        valid = [(headers, len(records)) for _v, _i, records, headers, invalid, _p, _s in publications
                 if invalid is None]
        total = largest = None
        if valid:
            total = summarize([h for headers, _n in valid for h in headers], sum(n for _h, n in valid))
            largest = total._replace(size=max(n for _h, n in valid))
    admitted = policy.produce_quietly(principal, hubs, largest, total, timeout_ms)
    if admitted is None:
        accepted = []
        for publication in publications:
            view, idx, records, headers, invalid, parts, slot = publication
            try:  # (a publisher's keys are read from the records: they may not parse)
                admission = policy.produce(
                    principal, view.name, None if invalid else summarize(headers, len(records)), timeout_ms,
                    client_id, lambda records=records: record_keys(records))
            except log_errors.LogError as exc:
                parts[slot] = _part(idx, for_log_error(exc), message=str(exc) or None)
                continue
            ctx.throttled_by(view.name, admission.throttle_ms)
            if admission.denial:
                code, message = kafka_error(admission.denial)
                parts[slot] = _part(idx, code, message=message)
                continue
            accepted.append(publication)
        publications = accepted
    topics = namespace.topics
    now_ms = ctx.clock.now_ms()
    plan = faults.plan if faults is not None and faults.plan.active else None
    held_ms = 0
    for view, idx, records, headers, invalid, parts, slot in publications:
        if plan is not None:
            failed, held = injected_storage_fault(plan, namespace.name, view.name, idx, client_id, "kafka")
            if failed is not None:
                parts[slot] = _part(idx, Errors.KafkaStorageError.errno, message=failed)
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
            parts[slot] = _part(idx, code, message=str(exc) or None)
            continue
        except Exception as exc:  # raised by the idempotence layer with an errno
            code = getattr(exc, "errno", None)
            if code is None:
                raise
            plog = topics.log(view.name, idx)
            parts[slot] = _part(idx, code, log_start=plog.log_start_offset if plog else -1,
                                message=str(exc) or None)
            continue
        parts[slot] = (idx, 0, info.base_offset, info.append_time_ms if info.log_append_time else -1,
                       info.log_start_offset, None)
    return held_ms


async def _held(response, ms: int, clock):
    """``response`` after ``ms`` on the broker's clock; the connection's other requests
    wait behind it (Kafka answers in order), other connections do not."""
    done = asyncio.get_running_loop().create_future()
    clock.call_later(ms, lambda: done.done() or done.set_result(None))
    await done
    return response
