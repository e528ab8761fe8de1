"""NamespacePolicy: what a namespace allows, asked by the API modules as
``ctx.policy`` (one instance per namespace; an open namespace allows all).

Each method combines the rights (``allows``, ``sees``), the tier rules (:mod:`strict`,
recorded in the compatibility report, refused only in strict namespaces) and
the throughput-unit quota (:mod:`quotas`) for one kind of request, and answers
None (allowed) or ``(kafka error code, message)``.
"""
from __future__ import annotations

import logging

import kafka.errors as Errors

from kafka_wire.eventhubs import strict
from kafka_wire.eventhubs.model import MANAGE, SEND
from kafka_wire.log.batch import iter_batches

log = logging.getLogger(__name__)

_DENIED = Errors.TopicAuthorizationFailedError.errno
_POLICY_VIOLATION = Errors.PolicyViolationError.errno


def _same(a: str, b: str) -> bool:
    return a == b or a.lower() == b.lower()


def _need(ctx, right: str, hub: str | None, what: str) -> tuple[int, str] | None:
    if ctx.policy.allows(ctx.connection.principal, right, hub):
        return None
    p = ctx.connection.principal
    scope = f"event hub {hub!r}" if hub else f"namespace {ctx.namespace.name!r}"
    return _DENIED, f"{what} on {scope} needs the {right} right; {p} lacks it"


def publisher_key_error(records, publisher: str) -> str | None:
    """Why ``records`` break the publisher policy (every key must be the publisher's name)."""
    from kafka.record.default_records import DefaultRecordBatch

    wanted = publisher.encode("utf-8")
    for pos, header in iter_batches(records):
        batch = DefaultRecordBatch(bytes(records[pos:pos + header.size]))
        for record in batch:
            if record.key != wanted:
                shown = record.key.decode("utf-8", "replace") if record.key is not None else None
                return (f"publisher {publisher!r} may only send events whose key is "
                        f"{publisher!r}, not {shown!r}")
    return None


def _managed(ctx, scope: str | None, hub: str, what: str, rule) -> tuple[int, str] | None:
    """Manage on ``scope`` (None: the namespace), then the tier ``rule(ns)`` (a
    Violation or None) where a model is configured; the refusal or None."""
    denied = _need(ctx, MANAGE, scope, what)
    if denied:
        return denied
    ns = ctx.namespace.model
    return None if ns is None else strict.enforce(ctx, rule(ns), hub)


class NamespacePolicy:
    """The Event Hubs rules of one namespace. ``allows`` and ``sees`` take only a
    principal, a right and a hub, so any front end can ask them; the rest take
    the Kafka request context and answer ``(kafka error code, message)``."""

    # -- rights (protocol-neutral) ---------------------------------------------------
    def allows(self, principal, right: str, hub: str | None = None) -> bool:
        """May ``principal`` exercise ``right`` on ``hub`` (None: the namespace)? A
        connection that did not authenticate (where the namespace allows that) may
        do everything; a hub-scoped principal only its hub, and never namespace-wide
        administration."""
        if principal is None:
            return True
        if right not in principal.rights:
            return False
        if principal.hub is not None:
            if hub is None:
                return right != MANAGE
            return _same(hub, principal.hub)
        return True

    def sees(self, principal, hub: str) -> bool:
        """Does ``hub`` exist for ``principal`` (listed, described)?"""
        return principal is None or principal.hub is None or _same(hub, principal.hub)

    # -- tier rules outside the data path ------------------------------------------
    def transactions(self, ctx, timeout_ms: int | None) -> tuple[int, str] | None:
        """A transactional producer: the tier must have transactions and, in strict
        mode, the transaction timeout must be within Event Hubs' 15 minutes."""
        ns = ctx.namespace.model
        if ns is None:
            return None
        refusal = strict.enforce(ctx, strict.transactions(ns))
        if not refusal and timeout_ms is not None:
            refusal = strict.enforce(ctx, strict.transaction_timeout(ns, timeout_ms))
        return refusal

    def session_timeout(self, ctx, timeout_ms: int) -> tuple[int, str] | None:
        ns = ctx.namespace.model
        return None if ns is None else strict.enforce(ctx, strict.session_timeout(ns, timeout_ms))

    def kafka_group(self, ctx, group_id: str, joining: bool) -> tuple[int, str] | None:
        """group.id length and, when ``joining`` creates a group, the namespace's count."""
        ns = ctx.namespace.model
        if ns is None:
            return None
        known, is_new = 0, False
        if joining:
            ids = ctx.groups.group_ids()
            known, is_new = len(ids), group_id not in ids
        return strict.enforce(ctx, strict.kafka_group(ns, group_id, known, is_new))

    def commit_metadata(self, ctx, metadata: str) -> tuple[int, str] | None:
        ns = ctx.namespace.model
        return None if ns is None else strict.enforce(ctx, strict.commit_metadata(ns, metadata))

    # -- Metadata -------------------------------------------------------------------
    def topic_visible(self, ctx, name: str) -> bool:
        return self.sees(ctx.connection.principal, name)

    def auto_create(self, ctx, name: str) -> tuple[int, str] | None:
        """May Metadata's allow_auto_topic_creation create hub ``name`` (Manage right,
        the tier's hub and partition quotas)? None, or the refusal."""
        if not self.allows(ctx.connection.principal, MANAGE, name):
            return (Errors.UnknownTopicOrPartitionError.errno,
                    f"event hub {name!r} does not exist and {ctx.connection.principal} may not "
                    "create it (Manage right needed)")
        topics = ctx.topics
        ns = ctx.namespace.model
        if ns is None:
            return None
        return strict.enforce(ctx, strict.hub_creation(ns, topics, name, topics.num_partitions)
                              or strict.topic_config(ns, name, topics.validate_configs({})), name)

    # -- Produce ------------------------------------------------------------------------
    def produce(self, ctx, view, partition: int, records, info, transactional_id,
                timeout_ms: int):
        """``info``: the publication's facts (from the batch headers
        validated once; a kafka_wire.log.batch.BatchSummary), or None when the records are invalid: then only the rights
        and the endpoint are checked, and the invalid records are refused after."""
        hub = view.name
        denied = _need(ctx, SEND, hub, "producing")
        if denied:
            return denied
        runtime = ctx.namespace
        ns = runtime.model
        if ns is None:
            return None
        refusal = strict.enforce(ctx, strict.kafka_endpoint(ns), hub)
        if refusal:
            return refusal
        if info is None:
            return None
        refusal = strict.enforce(ctx, strict.publication(ns, info), hub)
        if refusal:
            return refusal
        p = ctx.connection.principal
        if p is not None and p.publisher is not None:
            problem = publisher_key_error(records, p.publisher)
            if problem:
                return _DENIED, problem
        quota = runtime.quota
        if quota is not None:
            now_ms = ctx.clock.now_ms()
            if quota.ingress_wait(info.size, info.events, now_ms) > timeout_ms:
                # Event Hubs holds a throttled ack; past the request timeout it refuses.
                ctx.throttled_by(hub, quota.refuse_ingress(now_ms))
                message = (f"namespace {runtime.name!r} is over its {quota.units} throughput "
                           f"unit(s) for longer than the request timeout ({timeout_ms} ms): "
                           "add units, enable auto-inflate, or send more slowly")
                ctx.services.report.record(runtime.name, "throughput-units", hub, message,
                                           enforced=True, error_code=_POLICY_VIOLATION,
                                           client_id=ctx.client_id)
                return _POLICY_VIOLATION, message
            ctx.throttled_by(hub, quota.ingress(info.size, info.events, now_ms))
        return None

    # -- Fetch --------------------------------------------------------------------------
    def egress_delay(self, ctx, plan) -> int:
        """ms the namespace's egress is in debt: a Fetch now gets no records.
        ``plan``: the Fetch's ``((hub, partition), ...)`` entries, to name the hubs."""
        quota = ctx.namespace.quota
        if quota is None:
            return 0
        delay = quota.egress_delay(ctx.clock.now_ms())
        if delay > 0:
            for hub in {key[0] for key, *_ in plan}:
                ctx.throttled_by(hub, delay)
        return delay

    def egress_account(self, ctx, reads) -> None:
        """Charge the records a Fetch returns (``reads``: .topic, .records); sets the
        throttle time when over quota."""
        quota = ctx.namespace.quota
        if quota is None:
            return
        nbytes = events = 0
        hubs = set()
        for r in reads:
            size = len(r.records)
            if size:
                nbytes += size
                events += r.events
                hubs.add(r.topic)
        if not nbytes:
            return
        delay = quota.egress(nbytes, events, ctx.clock.now_ms())
        for hub in hubs:
            ctx.throttled_by(hub, delay)

    # -- administration ------------------------------------------------------------------
    def create_topic(self, ctx, name: str, partitions: int, configs: dict):
        topics = ctx.topics
        return _managed(ctx, None, name, "creating event hubs",
                        lambda ns: strict.hub_creation(ns, topics, name, partitions)
                        or strict.topic_config(ns, name, topics.validate_configs(configs)))

    def create_partitions(self, ctx, name: str, count: int):
        return _managed(ctx, name, name, "adding partitions",
                        lambda ns: strict.partition_growth(ns, ctx.topics, name, count))

    def delete_topic(self, ctx, name: str):
        return _need(ctx, MANAGE, None, "deleting event hubs")

    def alter_topic_config(self, ctx, name: str, overrides: dict):
        return _managed(ctx, name, name, "changing configs",
                        lambda ns: strict.topic_config(ns, name, ctx.topics.validate_configs(overrides)))

    def delete_records(self, ctx, topic: str, partition: int, offset: int):
        return _managed(ctx, topic, topic, "deleting records",
                        lambda ns: strict.delete_records(ns, topic))
