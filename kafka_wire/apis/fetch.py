"""Fetch (key 1), v4–v18.

Records are slices of the mapped segments, sent as the log holds them. A fetch
that finds fewer than min_bytes waits on a future woken by the next append to
one of its partitions (or max_wait_ms), so a consumer sees new data at once.
Incremental fetch sessions (v7+) as in KIP-227; topic ids (v13+). Not
emulated: follower fetching (replica_id >= 0 is refused), preferred read
replicas (always -1), diverging epochs (there is one leader epoch).

Event Hubs: a partition of a hub the connection may not Listen on is
TOPIC_AUTHORIZATION_FAILED. Egress quotas (throughput units): while the
namespace's egress is in debt a Fetch is answered at once with no records and
the throttle time; otherwise the records returned are charged and may set it
(``ctx.policy.egress_delay`` / ``egress``). Records served are
reported to ``services.observer.on_fetch(ctx, reads)`` (metrics).
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import kafka.errors as Errors

from kafka_wire import codec
from kafka_wire.apis.registry import handles
from kafka_wire.apis.authorization import LISTEN, topic_error
from kafka_wire.apis import fetch_decoding  # noqa: F401  (registers the fast decoder)
from kafka_wire.apis.fetch_encoding import encode_fetch, encode_one
from kafka_wire.fetch_sessions import FetchSessionCache, SessionError
from kafka_wire.log import errors as log_errors
from kafka_wire.log.batch import count_records

log = logging.getLogger(__name__)

_EMPTY = b""


@dataclass(slots=True)
class _Read:
    topic: str | None
    topic_id: object
    partition: int
    error: int
    high_watermark: int = -1
    last_stable: int = -1
    log_start: int = -1
    records: object = _EMPTY
    aborted: list | None = None
    events: int = 0  # records in ``records``, counted once for the quota and the metrics


def _sessions(ctx) -> FetchSessionCache:
    return ctx.services.fetch_sessions


# The broker's fetch.max.bytes (Kafka's default): a response holds no more than this
# whatever the request's max_bytes, past one batch that alone is larger (KIP-74).
FETCH_MAX_BYTES = 57_671_680


def _requested(request, topics, version):
    """((topic, partition), offset, max_bytes, leader_epoch) per partition + unknown ids."""
    wanted, unknown, seen = [], [], set()
    for t in request.topics:
        name = t.topic
        if version >= 13:
            name = topics.name_for_id(t.topic_id)
            if name is None:
                unknown.extend((t.topic_id, p.partition) for p in t.partitions)
                continue
        for p in t.partitions:
            key = (name, p.partition)
            if key in seen:
                continue  # one answer a partition, as Kafka (a partition named 800 times was read 800 times)
            seen.add(key)
            wanted.append((key, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch))
    forgotten = []
    for f in request.forgotten_topics_data or ():
        name = f.topic if version < 13 else topics.name_for_id(f.topic_id)
        if name is not None:
            forgotten.extend((name, p) for p in f.partitions)
    return wanted, unknown, forgotten


def _read_all(ctx, ns, plan, max_bytes: int, read_committed: bool,
              no_data: bool = False) -> tuple[list[_Read], int]:
    topics = ns.topics
    faults = ctx.services.faults and ctx.services.faults.partition_hook()
    reads, total = [], 0
    verdicts: dict[str, int] = {}  # hub -> refusal code, asked once per hub of the request
    for (name, part), offset, part_max, epoch in plan:
        view = topics.get(name)
        if view is None or not 0 <= part < view.partitions:
            reads.append(_Read(name, None, part, Errors.UnknownTopicOrPartitionError.errno))
            continue
        denied = verdicts.get(name)
        if denied is None:
            denied = verdicts[name] = topic_error(ctx, LISTEN, name) or (
                Errors.TopicAuthorizationFailedError.errno
                if ns.policy.disabled(name, ctx.connection.principal) else 0)
        if denied:
            reads.append(_Read(name, view.topic_id, part, denied))
            continue
        plog = topics.log(name, part)
        code = topics.epoch_error(name, part, epoch)
        if not code and faults is not None:
            code = faults.partition_error(ctx, codec.ApiKey.Fetch, name, part) or 0
        if code:
            reads.append(_Read(name, view.topic_id, part, code))
            continue
        hw = plog.high_watermark
        lso = plog.last_stable_offset
        upper = lso if read_committed else hw
        start = plog.log_start_offset
        entry = _Read(name, view.topic_id, part, 0, hw, lso, start)
        reads.append(entry)
        if offset < start or offset > hw:
            entry.error = Errors.OffsetOutOfRangeError.errno
            continue
        budget = min(part_max, max_bytes - total)
        if no_data or offset >= upper or (budget <= 0 and total > 0):
            continue
        try:
            data = plog.read(offset, max(budget, 0), max_offset=upper, min_one_batch=total == 0)
        except log_errors.OffsetOutOfRange:
            entry.error = Errors.OffsetOutOfRangeError.errno
            continue
        except log_errors.LogError as exc:
            log.error("read of %s-%d at %d failed: %s", name, part, offset, exc)
            entry.error = Errors.KafkaStorageError.errno
            continue
        entry.records = data
        total += len(data)
        if read_committed and len(data):
            entry.aborted = plog.aborted_transactions(offset, upper)
    return reads, total


def _select(reads: list[_Read], session, incremental: bool) -> list[_Read]:
    """Which partitions a response carries; updates the session's view of them."""
    if session is None:
        return reads
    out = []
    for r in reads:
        cached = session.partitions.get((r.topic, r.partition))
        changed = (r.error != 0 or len(r.records) > 0 or cached is None
                   or cached.high_watermark != r.high_watermark
                   or cached.log_start_offset != r.log_start)
        if cached is not None:
            cached.high_watermark = r.high_watermark
            cached.log_start_offset = r.log_start
            if len(r.records):
                # Partitions that returned data go last, so the others get their turn.
                session.partitions.move_to_end((r.topic, r.partition))
        if changed or not incremental:
            out.append(r)
    return out


def _encode(ctx, version: int, reads: list[_Read], session_id: int, error: int = 0):
    if len(reads) == 1:  # one partition: nothing to group
        r = reads[0]
        if not session_id and not error:
            return encode_one(version, r.topic, r.topic_id, r, ctx.throttle_ms or 0)
        return encode_fetch(version, [(r.topic, r.topic_id, reads)], session_id, error, ctx.throttle_ms or 0)
    by_topic: dict[object, tuple] = {}
    for r in reads:
        key = r.topic if r.topic is not None else r.topic_id
        entry = by_topic.get(key)
        if entry is None:
            entry = by_topic[key] = (r.topic, r.topic_id, [])
        entry[2].append(r)
    return encode_fetch(version, list(by_topic.values()), session_id, error, ctx.throttle_ms or 0)


def _plan_one(request, version: int):
    """What a sessionless Fetch of one partition asks, in the order _one uses it; False
    for any other request. Only fields fixed for as long as the request object lives:
    a connection's kept request is handed out again with nothing but its offset changed
    (fetch_decoding.RepeatedFetch), so the plan is made once for all its repeats."""
    if not (len(request.topics) == 1 and len(request.topics[0].partitions) == 1
            and (version < 7 or request.session_id == 0 and request.session_epoch == -1)):
        return False
    t = request.topics[0]
    p = t.partitions[0]
    max_bytes = min(request.max_bytes, FETCH_MAX_BYTES) if request.max_bytes and request.max_bytes > 0 \
        else FETCH_MAX_BYTES
    return (t.topic if version < 13 else None, t.topic_id, p, p.partition, p.current_leader_epoch,
            request.isolation_level == 1, max(min(p.partition_max_bytes, max_bytes), 0),
            request.min_bytes if request.max_wait_ms > 0 else 0)


def _one(ctx, ns, plan, version: int):
    """The answer to a sessionless Fetch of one partition (``plan``: _plan_one's) that
    finds records at once (a consumer reading behind the log's end: librdkafka fetches
    each partition on its own), read and answered as the general path would, without
    its partition list, session and grouping steps; None for anything else (an unknown or refused
    partition, an error, nothing to read, fewer bytes than min_bytes: the general path
    answers or waits). Every check is asked anew: nothing but the request is kept."""
    name, topic_id, p, part, epoch, read_committed, budget, min_bytes = plan
    topics = ns.topics
    if name is None:
        name = topics.name_for_id(topic_id)
    view = topics.get(name) if name is not None else None
    quota = ns.quota
    if (view is None or not 0 <= part < view.partitions or topic_error(ctx, LISTEN, name)
            or ns.policy.disabled(name, ctx.connection.principal)
            or topics.epoch_error(name, part, epoch)
            or quota is not None and ns.policy.egress_delay() > 0):
        return None
    plog = topics.log(name, part)
    hw = plog.high_watermark
    lso = plog.last_stable_offset
    upper = lso if read_committed else hw
    start = plog.log_start_offset
    offset = p.fetch_offset
    if offset < start or offset >= upper:
        return None
    try:
        data = plog.read(offset, budget, max_offset=upper, min_one_batch=True)
    except log_errors.LogError:
        return None
    if len(data) < min_bytes:
        return None
    read = _Read(name, view.topic_id, part, 0, hw, lso, start, data)
    if read_committed and len(data):
        read.aborted = plog.aborted_transactions(offset, upper)
    if quota is None and ctx.services.observer is None:  # nothing to count or charge
        return encode_one(version, name, view.topic_id, read, ctx.throttle_ms or 0)
    return _finish(ctx, ns, version, [read], 0)


@handles(codec.ApiKey.Fetch, 4, 18)
def fetch(request, ctx):
    version = ctx.header.api_version
    if request.replica_id is not None and request.replica_id >= 0:
        return _encode(ctx, version, [], 0, Errors.NotLeaderForPartitionError.errno)
    ns = ctx.namespace
    faults = ctx.services.faults
    one = request.one
    if one is None:
        one = request.one = _plan_one(request, version)
    if one and (faults is None or faults.fetch_gate is None and faults.partition_hook() is None):
        answer = _one(ctx, ns, one, version)
        if answer is not None:
            return answer
    wanted, unknown, forgotten = _requested(request, ns.topics, version)
    session, incremental = None, False
    if version >= 7 and (request.session_id or request.session_epoch != -1):  # (0, -1): no session
        try:
            session, incremental = _sessions(ctx).resolve(
                request.session_id, request.session_epoch,
                [(k, off, mb) for k, off, mb, _e in wanted], forgotten,
                (ctx.connection.connection_id, ns.name))  # (a session is its connection's only)
        except SessionError as exc:
            return _encode(ctx, version, [], 0, exc.error_code)
    if session is not None:
        epochs = {k: e for k, _o, _m, e in wanted}
        plan = [(k, c.fetch_offset, c.max_bytes, epochs.get(k)) for k, c in session.partitions.items()]
    else:
        plan = wanted
    read_committed = version >= 4 and request.isolation_level == 1
    max_bytes = min(request.max_bytes, FETCH_MAX_BYTES) if request.max_bytes and request.max_bytes > 0 \
        else FETCH_MAX_BYTES
    unknown_reads = [_Read(None, tid, p, Errors.UnknownTopicIdError.errno) for tid, p in unknown]
    session_id = session.session_id if session is not None else 0
    gate = faults.fetch_gate if faults is not None else None  # paused fetches (fault injection)
    delay = ns.policy.egress_delay()
    if delay > 0:
        # Over the egress quota: no records now, come back after the throttle time.
        for hub in {key[0] for key, *_ in plan}:
            ctx.throttled_by(hub, delay)
        reads, _total = _read_all(ctx, ns, plan, max_bytes, read_committed, no_data=True)
        return _encode(ctx, version, _select(reads, session, incremental) + unknown_reads, session_id)

    reads, total = _read_all(ctx, ns, plan, max_bytes, read_committed)
    has_error = any(r.error for r in reads) or unknown_reads
    if (total >= request.min_bytes or request.max_wait_ms <= 0 or has_error or not plan) and gate is None:
        return _finish(ctx, ns, version, _select(reads, session, incremental) + unknown_reads, session_id)
    # Armed now, not when _wait starts a loop iteration later: an append in between
    # must wake this fetch, not leave it waiting out max_wait_ms.
    armed = ctx.topics.wait_for_data([k for k, *_ in plan])
    return _wait(ctx, ns, request, version, plan, max_bytes, read_committed, session, incremental,
                 session_id, unknown_reads, reads, total, gate, armed)


async def _wait(ctx, ns, request, version, plan, max_bytes, read_committed, session, incremental,
                session_id, unknown_reads, reads, total, gate, armed):
    keys = [k for k, *_ in plan]
    topics = ctx.topics
    if gate is not None:
        topics.forget_waiter(armed, keys)  # the gate waits first; re-read after it
        armed = None
    if gate is not None and await gate(ctx, request):
        # Still paused after max_wait: answer with positions but no records.
        for r in reads:
            r.records, r.aborted = _EMPTY, None
        return _encode(ctx, version, _select(reads, session, incremental) + unknown_reads, session_id)
    if gate is not None:
        reads, total = _read_all(ctx, ns, plan, max_bytes, read_committed)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + request.max_wait_ms / 1000.0
    while total < request.min_bytes and not any(r.error for r in reads):
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        fut, armed = armed or topics.wait_for_data(keys), None
        try:
            await asyncio.wait_for(fut, remaining)
        except asyncio.TimeoutError:
            pass
        finally:
            topics.forget_waiter(fut, keys)
        reads, total = _read_all(ctx, ns, plan, max_bytes, read_committed)
    if armed is not None:
        topics.forget_waiter(armed, keys)
    return _finish(ctx, ns, version, _select(reads, session, incremental) + unknown_reads, session_id)


def _finish(ctx, ns, version: int, reads: list[_Read], session_id: int):
    observer = ctx.services.observer
    quota = ns.quota
    if observer is not None or quota is not None:
        for r in reads:  # one walk of the batch headers serves both
            if len(r.records):
                r.events = count_records(r.records)
    if quota is not None:  # charge what is served to the throughput units
        served = [r for r in reads if len(r.records)]
        delay = ctx.policy.egress(sum(len(r.records) for r in served), sum(r.events for r in served),
                                  ctx.connection.principal)
        for hub in {r.topic for r in served}:
            ctx.throttled_by(hub, delay)
    if observer is not None:  # metrics: outgoing events and bytes
        observer.on_fetch(ctx, reads)
    return _encode(ctx, version, reads, session_id)
