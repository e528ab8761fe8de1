"""NamespacePolicy: what one namespace allows. Every front end asks it the same
way, with protocol-neutral arguments (a principal, a hub, byte and event counts,
the client's id for the compatibility report), and maps the answer to its own
errors: the Kafka API modules ask it as ``ctx.policy``.

Each decision combines the rights (``allows``, ``sees``), the tier rules
(:mod:`tier_rules`: recorded in the compatibility report, refused only in strict
namespaces) and the throughput-unit quota (:mod:`quotas`). A refusal is a
protocol-neutral :class:`~kafka_wire.eventhubs.refusals.Denial` (a reason, a
message, the rule where one decided), which each front end maps to its own
errors in one place (:mod:`kafka_wire.apis.refusals` for Kafka).

Whether a hub may be made (:func:`new_hub`) and take another consumer group
(:func:`consumer_group_refusal`) are pure functions of the namespace's model and
the hubs it holds: the live door asks them with the count its topics keep
(:class:`HubCount`), the config loader with the hubs a file configures, so that
both answer alike.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, NamedTuple, Protocol, Sequence

from kafka_wire.eventhubs import tier_rules
from kafka_wire.eventhubs.app_groups import GroupLimiter, group_for
from kafka_wire.eventhubs.bounds import Bounds
from kafka_wire.eventhubs.events import Incoming, with_publisher
from kafka_wire.eventhubs.model import HOUR_MS, MANAGE, SEND, TIER_LIMITS, Namespace, Tier
from kafka_wire.eventhubs.refusals import Denial, Refusal

if TYPE_CHECKING:
    from kafka_wire.context import NamespaceRuntime
    from kafka_wire.coordinator.clock import Clock
    from kafka_wire.eventhubs.report import CompatibilityReport
    from kafka_wire.log.batch import BatchSummary
    from kafka_wire.log.config import LogConfig

log = logging.getLogger(__name__)

DEFAULT_LIMITS = TIER_LIMITS[Tier.STANDARD]  # a runtime without an Event Hubs model
THROUGHPUT_UNITS = "throughput-units"  # the rule a publication over the units is refused by


class Admission(NamedTuple):
    """A publication's answer: refused (``denial``; its reason BUSY when refused for
    the throughput units, not for what was sent), or accepted after ``throttle_ms``
    (the throughput units' debt the client should wait out)."""
    denial: Denial | None
    throttle_ms: int = 0


_ADMITTED = Admission(None)


def _same(a: str, b: str) -> bool:
    return a == b or a.lower() == b.lower()


# -- making hubs: one check for a live namespace and a config file ------------------------
class SizedHub(Protocol):
    """A hub that exists, as the door counts it when another is made or grown: a live
    topic (:class:`kafka_wire.topics.TopicView`) or a configured hub (:class:`EventHub`)."""

    @property
    def name(self) -> str: ...

    @property
    def partitions(self) -> int: ...

    @property
    def internal(self) -> bool: ...  # Kafka's own ``__`` topics: named, but counted in no quota


class HubCount(NamedTuple):
    """The hubs a namespace holds as the door counts them when one is made or grown:
    ``hubs`` by name (Kafka's internal topics left out) and their ``partitions``' total.
    The live door's comes from its TopicManager, which keeps both as hubs come and go
    (no walk of the namespace); :meth:`among` counts a list (the config loader's)."""
    hubs: Mapping[str, SizedHub]
    partitions: int

    @classmethod
    def among(cls, existing: Iterable[SizedHub]) -> HubCount:
        hubs = {h.name: h for h in existing if not h.internal}
        return cls(hubs, sum(h.partitions for h in hubs.values()))

    def partitions_but(self, name: str) -> int:
        """The partitions of every hub but ``name`` (the one made or grown)."""
        own = self.hubs.get(name)
        return self.partitions - (own.partitions if own is not None else 0)


class HubVerdict(NamedTuple):
    """The door's answer to a new hub: ``refusal`` whatever the mode (a case twin, the
    broker's [limits]); else ``violation``, a tier rule's, refused in strict namespaces and
    only recorded in relaxed ones."""
    refusal: Denial | None = None
    violation: Denial | None = None


def new_hub(namespace: str, ns: Namespace | None, existing: Sequence[SizedHub] | HubCount, name: str,
            partitions: int, config: LogConfig, bounds: Bounds,
            twin_of: Callable[[str], str | None] | None = None) -> HubVerdict:
    """What the door answers to hub ``name`` of ``partitions`` partitions and effective log
    ``config`` made in namespace ``namespace`` (its model ``ns``; None: no Event Hubs model)
    that holds the hubs ``existing``. A pure function of the model: the live door asks it
    with the count its topics keep (:meth:`NamespacePolicy.create_topic`), the config loader
    with the hubs its file configured before this one, so a file makes nothing the
    management API would refuse. ``twin_of(name)``: the existing hub named ``name`` in
    another case, if any (default: a search of ``existing``; the door looks it up in its
    topics' case-folded index)."""
    counted = existing if isinstance(existing, HubCount) else HubCount.among(existing)
    twin = twin_of(name) if twin_of is not None else _twin_among(counted.hubs.values(), name)
    refusal = _twin_denial(twin, name) or beyond_bounds(bounds, namespace, counted, name, partitions,
                                                        new_hub=True)
    if refusal is not None or ns is None:
        return HubVerdict(refusal)
    return HubVerdict(None, tier_rules.hub_creation(ns, counted, name, partitions)
                      or tier_rules.topic_config(ns, name, config))


def _twin_among(existing: Iterable[SizedHub], name: str) -> str | None:
    low = name.lower()
    return next((h.name for h in existing if h.name != name and h.name.lower() == low), None)


def _twin_denial(twin: str | None, name: str) -> Denial | None:
    """A new hub ``name`` whose name an existing hub (``twin``) has in another case: Event
    Hubs' names are case-insensitive, so it would be that hub's twin (and a token scoped
    to the one would reach the other). Whatever the mode: it is not a tier rule."""
    if twin is None:
        return None
    return Denial(Refusal.INVALID, f"event hub {twin!r} exists: event hub names are "
                                   f"case-insensitive, so {name!r} is its name too; use {twin!r}",
                  "hub-name")


def beyond_bounds(bounds: Bounds, namespace: str, counted: HubCount, name: str,
                  partitions: int, new_hub: bool) -> Denial | None:
    """Why hub ``name`` may not have ``partitions`` partitions (or, ``new_hub``, exist at
    all) in namespace ``namespace`` holding the hubs ``counted``, whatever the mode: the
    broker's [limits]."""
    b = bounds
    if partitions > b.partitions_per_hub:
        return Denial(Refusal.LIMIT, f"event hub {name!r}: {partitions} partitions are more than "
                                     f"this broker allows per event hub ({b.partitions_per_hub}; "
                                     "[limits] partitions_per_hub)", "partitions-per-hub")
    hubs = len(counted.hubs)
    if new_hub and hubs >= b.hubs_per_namespace:
        return Denial(Refusal.LIMIT, f"namespace {namespace!r} already has {hubs} event "
                                     f"hubs, as many as this broker allows ([limits] hubs_per_namespace)",
                      "hubs-per-namespace")
    total = counted.partitions_but(name) + partitions
    if total > b.partitions_per_namespace:
        return Denial(Refusal.LIMIT, f"namespace {namespace!r} would have {total} partitions, "
                                     f"more than this broker allows ({b.partitions_per_namespace}; "
                                     "[limits] partitions_per_namespace)", "namespace-partitions")
    return None


def consumer_group_refusal(ns: Namespace | None, bounds: Bounds, hub: str, existing: int) -> str | None:
    """Why ``hub``, holding ``existing`` consumer groups, may take no other: the broker's
    [limits], and the tier's limit in a strict namespace (model ``ns``). Pure, like
    :func:`new_hub`, for the live door and the config loader alike."""
    if existing >= bounds.consumer_groups_per_hub:
        return (f"event hub {hub!r} has {existing} consumer groups, as many as this broker allows "
                "([limits] consumer_groups_per_hub)")
    if ns is None or not ns.strict or existing < ns.limits.consumer_groups_per_hub:
        return None
    return f"event hub {hub!r} has {existing} consumer groups, the {ns.tier.value} tier's limit"


class NamespacePolicy:
    """The Event Hubs rules of one namespace (see the module docstring).
    ``bind`` attaches it to its namespace's runtime, report and clock."""

    def __init__(self) -> None:
        self.runtime: NamespaceRuntime | None = None
        self.report: CompatibilityReport | None = None
        self.clock: Clock | None = None
        self.groups = GroupLimiter()  # application groups' throttling buckets
        self.bounds = Bounds()  # what may be created in any mode (the broker's [limits])

    def bind(self, runtime: NamespaceRuntime, report: CompatibilityReport, clock: Clock) -> None:
        self.runtime, self.report, self.clock = runtime, report, clock

    # -- rights ------------------------------------------------------------------------
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

    def _need(self, principal, right: str, hub: str | None, what: str) -> Denial | None:
        if self.allows(principal, right, hub):
            return None
        scope = f"event hub {hub!r}" if hub else f"namespace {self.runtime.name!r}"
        return Denial(Refusal.DENIED, f"{what} on {scope} needs the {right} right; {principal} lacks it")

    # -- tier rules ----------------------------------------------------------------------
    def _enforce(self, violation: Denial | None, hub: str | None,
                 client_id: str | None) -> Denial | None:
        """Record ``violation`` (if any); the refusal in a strict namespace, else None."""
        if violation is None:
            return None
        ns = self.runtime.model
        enforced = ns is not None and ns.strict
        self.report.record(self.runtime.name, violation.rule, hub, violation.message,
                           enforced=enforced, reason=violation.reason, client_id=client_id)
        return violation if enforced else None

    def _managed(self, principal, scope: str | None, hub: str, what: str,
                 rule: Callable, client_id: str | None) -> Denial | None:
        """Manage on ``scope`` (None: the namespace), then the tier ``rule(ns)``."""
        denied = self._need(principal, MANAGE, scope, what)
        if denied:
            return denied
        ns = self.runtime.model
        return None if ns is None else self._enforce(rule(ns), hub, client_id)

    def transactions(self, timeout_ms: int | None, client_id: str | None) -> Denial | None:
        """A transactional producer: the tier must have transactions and, in strict
        mode, the transaction timeout must be within Event Hubs' 15 minutes."""
        ns = self.runtime.model
        if ns is None:
            return None
        refusal = self._enforce(tier_rules.transactions(ns), None, client_id)
        if not refusal and timeout_ms is not None:
            refusal = self._enforce(tier_rules.transaction_timeout(ns, timeout_ms), None, client_id)
        return refusal

    def session_timeout(self, timeout_ms: int, client_id: str | None) -> Denial | None:
        ns = self.runtime.model
        return None if ns is None else self._enforce(tier_rules.session_timeout(ns, timeout_ms),
                                                     None, client_id)

    def kafka_group(self, group_id: str, joining: bool, client_id: str | None) -> Denial | None:
        """group.id length and, when ``joining`` creates a group, the namespace's count."""
        bound = tier_rules.KAFKA_GROUP_ID_MAX_ANY_MODE
        if group_id is not None and len(group_id) > bound // 4 and len(group_id.encode("utf-8")) > bound:
            # Whatever the mode: every checkpoint and transaction record names the group.
            return Denial(Refusal.INVALID, f"group.id is {len(group_id.encode('utf-8'))} bytes long "
                          f"(UTF-8): this broker allows {bound}, Event Hubs "
                          f"{tier_rules.KAFKA_GROUP_ID_MAX} characters", "group-id-length")
        ns = self.runtime.model
        if ns is None:
            return None
        known, is_new = 0, False
        if joining:
            ids = self.runtime.groups.group_ids()
            known, is_new = len(ids), group_id not in ids
            if is_new and known >= self.bounds.kafka_groups_per_namespace:
                return Denial(Refusal.LIMIT, f"namespace {self.runtime.name!r} has {known} Kafka "
                              "consumer groups, as many as this broker allows ([limits] "
                              "kafka_groups_per_namespace)", "kafka-groups-per-namespace")
        return self._enforce(tier_rules.kafka_group(ns, group_id, known, is_new), None, client_id)

    def commit_metadata(self, metadata: str, client_id: str | None) -> Denial | None:
        ns = self.runtime.model
        return None if ns is None else self._enforce(tier_rules.commit_metadata(ns, metadata),
                                                     None, client_id)

    # -- hubs ----------------------------------------------------------------------------
    def auto_create(self, principal, name: str, client_id: str | None) -> Denial | None:
        """May a client's request create hub ``name`` as a side effect (Manage right,
        the tier's hub and partition quotas)?"""
        if not self.allows(principal, MANAGE, name):
            return Denial(Refusal.NOT_FOUND, f"event hub {name!r} does not exist and {principal} "
                          "may not create it (Manage right needed)")
        topics = self.runtime.topics
        return self._new_hub(name, topics.num_partitions, topics.validate_configs({}), client_id)

    def create_topic(self, principal, name: str, partitions: int, configs: dict,
                     client_id: str | None) -> Denial | None:
        denied = self._need(principal, MANAGE, None, "creating event hubs")
        if denied:
            return denied
        return self._new_hub(name, partitions, self.runtime.topics.validate_configs(configs), client_id)

    def _new_hub(self, name: str, partitions: int, config: LogConfig, client_id: str | None) -> Denial | None:
        """:func:`new_hub` over the namespace's topics: its refusal, or its tier rule's
        violation recorded (and refused in strict mode)."""
        verdict = new_hub(self.runtime.name, self.runtime.model, self._counted(),
                          name, partitions, config, self.bounds, twin_of=self._twin_of)
        return verdict.refusal or self._enforce(verdict.violation, name, client_id)

    def _counted(self) -> HubCount:
        topics = self.runtime.topics  # (kept as hubs come and go: no walk)
        return HubCount(topics.hub_sizes(), topics.hub_partitions())

    def create_partitions(self, principal, name: str, count: int,
                          client_id: str | None) -> Denial | None:
        counted = self._counted()
        beyond = self._need(principal, MANAGE, name, "adding partitions") or \
            beyond_bounds(self.bounds, self.runtime.name, counted, name, count, new_hub=False)
        if beyond:
            return beyond
        return self._managed(principal, name, name, "adding partitions",
                             lambda ns: tier_rules.partition_growth(ns, counted, name, count),
                             client_id)

    def hub_name_taken(self, name: str) -> Denial | None:
        """Whether a hub of the namespace has ``name`` in another case (see :func:`new_hub`)."""
        return _twin_denial(self._twin_of(name), name)

    def _twin_of(self, name: str) -> str | None:
        # One look-up in the topics' case-folded index, not a walk of every hub.
        return self.runtime.topics.case_twin(name)

    def delete_topic(self, principal, name: str) -> Denial | None:
        return self._need(principal, MANAGE, None, "deleting event hubs")

    def alter_topic_config(self, principal, name: str, overrides: dict,
                           client_id: str | None) -> Denial | None:
        return self._managed(principal, name, name, "changing configs",
                             lambda ns: tier_rules.topic_config(
                                 ns, name, self.runtime.topics.validate_configs(overrides)),
                             client_id)

    def delete_records(self, principal, hub: str, client_id: str | None) -> Denial | None:
        return self._managed(principal, hub, hub, "deleting records",
                             lambda ns: tier_rules.delete_records(ns, hub), client_id)

    # -- the data path ---------------------------------------------------------------------
    def produce(self, principal, hub: str, summary: BatchSummary | None, timeout_ms: int,
                client_id: str | None, keys: Callable[[], Iterable[bytes | None]],
                kafka: bool = True) -> Admission:
        """A publication to ``hub``: the Send right, the tier's rules for its size and
        codecs, a publisher's key, and the throughput units. ``summary`` is None when
        the events are invalid (then only the rights and the endpoint are checked, and
        the caller refuses the events after). ``keys()`` yields the events' keys (or
        partition keys), asked only for a publisher principal. ``kafka``: the publication
        came over the Kafka endpoint, which the Basic tier lacks (AMQP has no such rule)."""
        denied = self._need(principal, SEND, hub, "producing")
        if denied:
            return Admission(denied)
        geo = self.runtime.geo
        if geo is not None:  # past the replication lag limit, or failing over
            denied = geo.admission()
            if denied:
                return Admission(denied)
        ns = self.runtime.model
        if ns is None:
            return Admission(None)
        configured = ns.hubs.get(hub)  # exact: the hot path (topics carry the hub's own name)
        if configured is not None and configured.status != "Active":
            return Admission(Denial(Refusal.DISABLED, f"event hub {hub!r} is {configured.status}: it "
                                                      "takes no events until its status is Active"))
        refusal = self._enforce(tier_rules.kafka_endpoint(ns), hub, client_id) if kafka else None
        if refusal or summary is None:
            return Admission(refusal)
        refusal = self._enforce(tier_rules.publication(ns, summary), hub, client_id)
        if refusal:
            return Admission(refusal)
        if principal is not None and principal.publisher is not None:
            problem = _publisher_key_error(keys(), principal.publisher)
            if problem:
                return Admission(Denial(Refusal.DENIED, problem))
        now_ms = self.clock.now_ms()
        group = group_for(ns.application_groups, principal)
        group_wait = 0
        if group is not None:
            if not group.enabled:
                return Admission(Denial(Refusal.DENIED, f"application group {group.name!r} of "
                                                        f"{principal.policy!r} is disabled"))
            group_wait = self.groups.charge(group, True, summary.size, summary.events, now_ms)
        quota = self.runtime.quota
        if quota is None:
            return Admission(None, group_wait)
        # A negative timeout is 0, as Kafka's broker takes it (its delayed produce expires
        # at once): a publication that need not wait is admitted, one that must is refused.
        timeout_ms = max(timeout_ms, 0)
        if quota.ingress_wait(summary.size, summary.events, now_ms) > timeout_ms:
            # Event Hubs holds a throttled ack; past the request timeout it refuses.
            throttle = quota.refuse_ingress(now_ms)
            message = (f"namespace {self.runtime.name!r} is over its {quota.units} throughput "
                       f"unit(s) for longer than the request timeout ({timeout_ms} ms): "
                       "add units, enable auto-inflate, or send more slowly")
            self.report.record(self.runtime.name, THROUGHPUT_UNITS, hub, message, enforced=True,
                               reason=Refusal.BUSY, client_id=client_id)
            return Admission(Denial(Refusal.BUSY, message, THROUGHPUT_UNITS), throttle)
        return Admission(None, max(group_wait, quota.ingress(summary.size, summary.events, now_ms)))

    def publisher_events(self, publisher: str, events: list[Incoming]) -> list[Incoming] | Denial:
        """``events`` sent through ``publisher`` (the name the token was issued for),
        as the service takes them: an event keyed other than the publisher fails the
        whole send (not re-keyed); the others are keyed with its name and stamped
        ``x-opt-publisher`` beside what else they keep (:func:`with_publisher`)."""
        problem = _publisher_key_error(
            (e.partition_key.encode("utf-8") for e in events if e.partition_key is not None), publisher)
        if problem is not None:
            return Denial(Refusal.DENIED, problem)
        return [e._replace(partition_key=publisher, amqp_only=with_publisher(e.amqp_only, publisher))
                for e in events]

    def produce_quietly(self, principal, hubs, largest: BatchSummary | None, total: BatchSummary | None,
                        timeout_ms: int, kafka: bool = True) -> Admission | None:
        """Every publication of one request at once, when :meth:`produce` would admit each
        of them with nothing to record, refuse or throttle: the rights, endpoint and hub
        checks once per hub in ``hubs``, the tier's rules once for ``largest`` (the largest
        publication's size, with every publication's codecs and flags), the quota charged
        once for ``total``; both None when every publication was invalid. None (nothing
        charged) when anything is not that plain: the caller then asks :meth:`produce` for
        each publication, which refuses, records and throttles them one by one. ``kafka``:
        as for :meth:`produce`."""
        for hub in hubs:
            if not self.allows(principal, SEND, hub):
                return None
        geo = self.runtime.geo
        if geo is not None and geo.admission() is not None:
            return None
        ns = self.runtime.model
        if ns is None:
            return _ADMITTED
        configured = ns.hubs
        for hub in hubs:
            hub_model = configured.get(hub)
            if hub_model is not None and hub_model.status != "Active":
                return None
        if kafka and tier_rules.kafka_endpoint(ns) is not None:
            return None
        if total is None:
            return _ADMITTED
        if tier_rules.publication(ns, largest) is not None:
            return None
        if principal is not None and (principal.publisher is not None
                                      or group_for(ns.application_groups, principal) is not None):
            return None
        quota = self.runtime.quota
        if quota is not None and not quota.ingress_if_free(total.size, total.events, self.clock.now_ms()):
            return None  # a throttle or a refusal: per publication, as produce() decides them
        return _ADMITTED

    def address_refused(self, address: str) -> str | None:
        """Why the namespace's IP filter rules refuse a client at ``address``, else None."""
        ns = self.runtime.model
        rules = ns.network_rules if ns is not None else None
        return None if rules is None else rules.refusal(address)

    def disabled(self, hub: str, principal=None) -> str | None:
        """Why ``hub`` serves no reads to ``principal`` (the hub's status is Disabled,
        or the principal's application group is), else None."""
        ns = self.runtime.model
        configured = ns.hubs.get(hub) if ns is not None else None
        if configured is not None and configured.status == "Disabled":
            return f"event hub {hub!r} is Disabled: it serves no events until its status is Active"
        group = group_for(ns.application_groups, principal) if ns is not None else None
        if group is not None and not group.enabled:
            return f"application group {group.name!r} of {principal.policy!r} is disabled"
        return None

    def consumer_group_limit(self, hub: str, existing: int) -> str | None:
        """:func:`consumer_group_refusal` in this namespace."""
        return consumer_group_refusal(self.runtime.model, self.bounds, hub, existing)

    def tier_change_refusal(self, tier: Tier) -> str | None:
        """Why the namespace may not move to ``tier`` in place: only Basic and
        Standard change into each other, as on Azure."""
        ns = self.runtime.model
        if tier is ns.tier or {tier, ns.tier} <= {Tier.BASIC, Tier.STANDARD}:
            return None
        return (f"namespace {ns.name!r} cannot change from {ns.tier.value} to {tier.value} in place: only "
                "Basic and Standard change into each other (Azure migrates to Premium into a new namespace)")

    def rescale_refusal(self, changed) -> str | None:
        """Why the namespace may not become ``changed`` (another tier or scale, its
        model already validated), in strict mode: what its log holds that the new
        tier does not allow beyond the model — hubs made over Kafka, retention set
        with AlterConfigs. None when it may (and always in relaxed mode)."""
        if not changed.strict:
            return None
        topics = self.runtime.topics
        lim = changed.limits
        problem = None
        hubs = [v for v in topics.all() if not v.internal]
        if len(hubs) > changed.hub_limit():
            problem = f"it has {len(hubs)} event hubs; {changed.tier.value} allows {changed.hub_limit()}"
        for view in hubs:
            if problem:
                break
            retention = topics.effective_config(view.name).retention_ms
            if view.partitions > lim.partitions_per_hub:
                problem = (f"event hub {view.name!r} has {view.partitions} partitions; the tier allows "
                           f"{lim.partitions_per_hub}")
            elif retention is not None and (retention < 0 or retention > lim.max_retention_hours * HOUR_MS):
                problem = (f"event hub {view.name!r} keeps events longer than the tier's "
                           f"{lim.max_retention_hours} hours")
        return f"namespace {changed.name!r} cannot become {changed.tier.value}: {problem}" if problem else None

    def max_publication_bytes(self) -> int:
        """The largest publication (one event or one batch) the namespace takes."""
        ns = self.runtime.model
        return ns.max_publication_bytes() if ns is not None else DEFAULT_LIMITS.max_publication_bytes

    def readers_per_partition(self) -> int:
        """Receivers (AMQP) one partition and consumer group may have at once."""
        ns = self.runtime.model
        return (ns.limits if ns is not None else DEFAULT_LIMITS).readers_per_partition

    def egress_delay(self) -> int:
        """ms the namespace's egress is in debt: a read now gets no events."""
        quota = self.runtime.quota
        return 0 if quota is None else quota.egress_delay(self.clock.now_ms())

    def egress(self, nbytes: int, events: int, principal=None) -> int:
        """Charge ``events`` events of ``nbytes`` bytes read (by ``principal``); the
        throttle time (ms)."""
        if not nbytes:
            return 0
        now_ms = self.clock.now_ms()
        ns = self.runtime.model
        group = group_for(ns.application_groups, principal) if ns is not None else None
        wait = self.groups.charge(group, False, nbytes, events, now_ms) if group is not None else 0
        quota = self.runtime.quota
        return wait if quota is None else max(wait, quota.egress(nbytes, events, now_ms))


def _publisher_key_error(keys: Iterable[bytes | None], publisher: str) -> str | None:
    """Why events break the publisher policy (every key must be the publisher's name)."""
    wanted = publisher.encode("utf-8")
    for key in keys:
        if key != wanted:
            shown = key.decode("utf-8", "replace") if key is not None else None
            return (f"publisher {publisher!r} may only send events whose key is "
                    f"{publisher!r}, not {shown!r}")
    return None
