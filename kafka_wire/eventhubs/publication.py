"""Appending events sent over an Event Hubs endpoint other than Kafka (AMQP,
HTTPS): one RecordBatch per partition, after the namespace's policy admits it.

The front ends differ only in how they carry the events and how they say no:
each builds :class:`~kafka_wire.eventhubs.events.Incoming` events and turns a
:class:`Published` refusal (a protocol-neutral
:class:`~kafka_wire.eventhubs.refusals.Denial`, from the policy or the log) into
its own answer.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, NamedTuple

from kafka_wire.eventhubs.events import Incoming, PlainEvents, records_batch
from kafka_wire.eventhubs.partition_key import partition_for_key
from kafka_wire.eventhubs.refusals import Denial, Refusal, Refused
from kafka_wire.fault_plan import storage_fault
from kafka_wire.log import errors as log_errors
from kafka_wire.log.batch import BatchSummary, parse_header, summarize, validate_records

if TYPE_CHECKING:
    from kafka_wire.context import NamespaceRuntime, Services

log = logging.getLogger(__name__)

class Published(NamedTuple):
    """A publication's end: ``denial`` None when appended (answer after
    ``throttle_ms``), else why not (its reason BUSY: refused for the throughput
    units)."""
    denial: Denial | None
    throttle_ms: int = 0
    partition: int = -1
    sequence_number: int = -1  # the first appended event's


def choose_partition(explicit: int | None, key: str | None, partitions: int,
                     round_robin: Callable[[], int]) -> int:
    """Where an event goes: the partition asked for, else its partition key's
    (Event Hubs' own hash), else the next in round robin."""
    if explicit is not None:
        return explicit
    if key is not None:
        return partition_for_key(key, partitions)
    return round_robin()


def publish(services: Services, runtime: NamespaceRuntime, principal, hub: str, partition: int,
            events: list[Incoming] | PlainEvents, nbytes: int, timeout_ms: int, client_id: str | None,
            protocol: str) -> Published:
    """Admit and append ``events`` (``nbytes`` as sent) to ``hub``'s ``partition``."""
    return publish_batch(services, runtime, principal, hub, {partition: events}, nbytes, timeout_ms,
                         client_id, protocol)


def publish_batch(services: Services, runtime: NamespaceRuntime, principal, hub: str,
                  groups: dict[int, list[Incoming] | PlainEvents], nbytes: int, timeout_ms: int,
                  client_id: str | None, protocol: str) -> Published:
    """Admit one publication (``nbytes`` as sent) whose events go to several partitions
    (``groups``: partition -> events) as a whole, then append each partition's batch:
    a refusal leaves every partition as it was. The answer names the first partition."""
    if runtime.topics.get(hub) is None:
        return Published(Denial(Refusal.NOT_FOUND, f"event hub {hub!r} was deleted"))
    limit = runtime.policy.max_publication_bytes()  # the service's limit, strict mode or not
    if nbytes > limit:
        return Published(Denial(Refusal.TOO_LARGE,
                                f"the publication is {nbytes} bytes; event hub {hub!r} accepts "
                                f"at most {limit} bytes per send"))
    now_ms = services.clock.now_ms()
    batches = []
    for partition, events in groups.items():
        plog = runtime.topics.log(hub, partition)
        # Stamped here where the log would stamp it (a LogAppendTime hub): one CRC pass, not two.
        stamped = plog is not None and plog.config.log_append_time
        records = records_batch(events, now_ms, log_append_time=stamped)
        if plog is not None and len(records) > plog.config.max_message_bytes and len(events) > 1:
            # The limit is the publication's, checked above: stored, small events take more
            # room than sent (a record's varints past 8,191 of them), so a full batch can pass
            # the partition's max.message.bytes. Stored as several record batches, appended at
            # once (one outcome for the sender), each one a Kafka consumer can fetch.
            records, headers = _split_batches(events, now_ms, stamped, plog.config.max_message_bytes, over=True)
        else:
            # (the batch is ours: its header read back without a second CRC pass over it)
            headers = [parse_header(records)] if len(events) else validate_records(records)
        batches.append((partition, events, records, headers))
    summary = _combined([summarize(headers, len(records)) for _p, _e, records, headers in batches])
    admission = runtime.policy.produce(
        principal, hub, summary, timeout_ms, client_id,
        lambda: [k.encode() if k is not None else None
                 for _p, events, _r, _h in batches for k in _keys(events)],
        kafka=False)
    if admission.denial:
        return Published(admission.denial)
    held_ms = 0
    plan = services.faults.plan if services.faults is not None else None
    if plan is not None and plan.active:
        for partition, _e, _r, _h in batches:
            failed, held = injected_storage_fault(plan, runtime.name, hub, partition, client_id, protocol)
            if failed is not None:
                return Published(Denial(Refusal.FAILED, failed))
            held_ms = max(held_ms, held)
    first = None
    for partition, events, records, headers in batches:
        try:
            info = runtime.topics.append(hub, partition, records, now_ms, headers)
        except log_errors.LogError as exc:
            reason = _log_refusal(exc)
            if reason is Refusal.FAILED:
                log.error("%s append to %s-%d failed: %s", protocol.upper(), hub, partition, exc)
            return Published(Denial(reason, str(exc)))
        except Refused as exc:  # stored, but a synchronous secondary could not take it (geo)
            return Published(Denial(exc.reason, exc.message))
        first = first or (partition, info.base_offset)
        observer = services.observer
        if observer is not None:
            observer.on_events(protocol, runtime.name, hub, partition, True, len(events), len(records))
    return Published(None, throttle_ms=admission.throttle_ms + held_ms, partition=first[0], sequence_number=first[1])


def _split_batches(events: list[Incoming] | PlainEvents, now_ms: int, stamped: bool,
                   limit: int, over: bool = False) -> tuple[bytearray, list]:
    """``events`` as consecutive record batches of at most ``limit`` bytes each where
    one event allows it (halved until they fit; a lone event over it is left for the
    log to refuse), joined into one blob, with their headers. ``over``: ``events`` are
    known not to fit in one (halved at once, not built again: a third of the time)."""
    parts: list[bytearray] = []
    half = len(events) // 2
    pending = [_slice(events, half, len(events)), _slice(events, 0, half)] if over else [events]
    while pending:
        some = pending.pop()
        records = records_batch(some, now_ms, log_append_time=stamped)
        if len(records) > limit and len(some) > 1:
            half = len(some) // 2
            pending += (_slice(some, half, len(some)), _slice(some, 0, half))  # (the first half next)
        else:
            parts.append(records)
    blob = bytearray().join(parts)
    headers, pos = [], 0
    for records in parts:
        headers.append(parse_header(blob, pos))
        pos += len(records)
    return blob, headers


def _slice(events: list[Incoming] | PlainEvents, start: int, stop: int) -> list[Incoming] | PlainEvents:
    if isinstance(events, PlainEvents):
        return PlainEvents(events.key, events.bodies[start:stop], events.size)
    return events[start:stop]


def _keys(events: list[Incoming] | PlainEvents) -> list[str | None]:
    if isinstance(events, PlainEvents):
        return events.keys()
    return [e.partition_key for e in events]


def injected_storage_fault(plan, namespace: str, hub: str, partition: int, client_id: str | None,
                           protocol: str) -> tuple[str | None, int]:
    """The injected storage fault (docs/faults.md) an append to ``hub``'s ``partition`` meets
    while ``plan`` is active, for every front end (Kafka's Produce, AMQP and HTTPS sends):
    (why the append fails, logged here, or None; how long its answer is held, ms)."""
    failed, held = storage_fault(plan, {"namespace": namespace, "hub": hub, "partition": partition,
                                        "client": client_id, "protocol": protocol})
    if failed is not None:
        log.error("%s append to %s-%d failed: %s", protocol.upper(), hub, partition, failed)
    return failed, held


def _log_refusal(exc: log_errors.LogError) -> Refusal:
    """What a failed append means, in no protocol's words."""
    if isinstance(exc, log_errors.RecordTooLarge):
        return Refusal.TOO_LARGE
    if isinstance(exc, (log_errors.StorageError, log_errors.LogClosed)):
        return Refusal.FAILED
    if isinstance(exc, log_errors.UnknownTopic):
        return Refusal.NOT_FOUND
    return Refusal.INVALID  # a record the log does not take (corrupt, bad magic, sequence)


def _combined(summaries: list[BatchSummary]) -> BatchSummary:
    if len(summaries) == 1:
        return summaries[0]
    return BatchSummary(sum(s.size for s in summaries), sum(s.events for s in summaries),
                        frozenset().union(*(s.codecs for s in summaries)),
                        any(s.transactional for s in summaries), any(s.idempotent for s in summaries))
