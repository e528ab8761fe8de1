"""Appending events sent over an Event Hubs endpoint other than Kafka (AMQP,
HTTPS): one RecordBatch per partition, after the namespace's policy admits it.

The front ends differ only in how they carry the events and how they say no:
each builds :class:`~kafka_wire.eventhubs.events.Incoming` events and turns a
:class:`Published` refusal (a Kafka error code, as the policy and the log give
them, or ``busy`` for the throughput units) into its own answer.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, NamedTuple

import kafka.errors as Errors

from kafka_wire.eventhubs.events import Incoming, records_batch
from kafka_wire.errors import for_log_error
from kafka_wire.eventhubs.partition_key import partition_for_key
from kafka_wire.log import errors as log_errors
from kafka_wire.log.batch import BatchSummary, summarize, validate_records

if TYPE_CHECKING:
    from kafka_wire.context import NamespaceRuntime, Services

log = logging.getLogger(__name__)

NOT_FOUND = Errors.UnknownTopicOrPartitionError.errno
DENIED = frozenset({Errors.TopicAuthorizationFailedError.errno, Errors.ClusterAuthorizationFailedError.errno})
TOO_LARGE = frozenset({Errors.MessageSizeTooLargeError.errno, Errors.RecordListTooLargeError.errno})
STORAGE = Errors.KafkaStorageError.errno


class Published(NamedTuple):
    """A publication's end: ``error`` None when appended (answer after
    ``throttle_ms``), else a Kafka error code and why; ``busy``: refused for the
    throughput units."""
    error: int | None
    message: str = ""
    throttle_ms: int = 0
    busy: bool = False
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
            events: list[Incoming], nbytes: int, timeout_ms: int, client_id: str | None,
            protocol: str) -> Published:
    """Admit and append ``events`` (``nbytes`` as sent) to ``hub``'s ``partition``."""
    return publish_batch(services, runtime, principal, hub, {partition: events}, nbytes, timeout_ms,
                         client_id, protocol)


def publish_batch(services: Services, runtime: NamespaceRuntime, principal, hub: str,
                  groups: dict[int, list[Incoming]], nbytes: int, timeout_ms: int,
                  client_id: str | None, protocol: str) -> Published:
    """Admit one publication (``nbytes`` as sent) whose events go to several partitions
    (``groups``: partition -> events) as a whole, then append each partition's batch:
    a refusal leaves every partition as it was. The answer names the first partition."""
    if runtime.topics.get(hub) is None:
        return Published(NOT_FOUND, f"event hub {hub!r} was deleted")
    limit = runtime.policy.max_publication_bytes()  # the service's limit, strict mode or not
    if nbytes > limit:
        return Published(Errors.MessageSizeTooLargeError.errno,
                         f"the publication is {nbytes} bytes; event hub {hub!r} accepts at most "
                         f"{limit} bytes per send")
    now_ms = services.clock.now_ms()
    batches = []
    for partition, events in groups.items():
        records = records_batch(events, now_ms)
        batches.append((partition, events, records, validate_records(records)))
    summary = _combined([summarize(headers, len(records)) for _p, _e, records, headers in batches])
    admission = runtime.policy.produce(
        principal, hub, summary, timeout_ms, client_id,
        lambda: [e.partition_key.encode() if e.partition_key is not None else None
                 for _p, events, _r, _h in batches for e in events],
        kafka=False)
    if admission.refusal:
        return Published(*admission.refusal, busy=admission.busy)
    first = None
    for partition, events, records, headers in batches:
        try:
            info = runtime.topics.append(hub, partition, records, now_ms, headers)
        except log_errors.LogError as exc:
            code = for_log_error(exc)
            if code == STORAGE:
                log.error("%s append to %s-%d failed: %s", protocol.upper(), hub, partition, exc)
            return Published(code, str(exc))
        first = first or (partition, info.base_offset)
        observer = services.observer
        if observer is not None:
            observer.on_events(protocol, runtime.name, hub, partition, True, len(events), len(records))
    return Published(None, throttle_ms=admission.throttle_ms, partition=first[0], sequence_number=first[1])


def _combined(summaries: list[BatchSummary]) -> BatchSummary:
    if len(summaries) == 1:
        return summaries[0]
    return BatchSummary(sum(s.size for s in summaries), sum(s.events for s in summaries),
                        frozenset().union(*(s.codecs for s in summaries)),
                        any(s.transactional for s in summaries), any(s.idempotent for s in summaries))
