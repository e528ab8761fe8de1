"""Wire the Event Hubs model into a running broker.

:func:`configure` gives every ``NamespaceRuntime`` its :class:`Namespace` model
(``runtime.model``), its throughput quota (``runtime.quota``) and frame limit,
creates or updates the configured event hubs, and sets the namespace's
defaults for new hubs. Authentication is :class:`~kafka_wire.eventhubs.auth.
Authenticator` (``services.auth``); what a namespace allows is its
:class:`~kafka_wire.eventhubs.policy.NamespacePolicy` (``runtime.policy``).
"""
from __future__ import annotations

import logging

from kafka_wire.eventhubs.model import KAFKA_FRAME_LIMIT, Namespace
from kafka_wire.eventhubs.quotas import ThroughputQuota
from kafka_wire.eventhubs.report import CompatibilityReport

log = logging.getLogger(__name__)

__all__ = ["configure"]


def _ensure_hubs(runtime, ns: Namespace) -> None:
    topics = runtime.topics
    for hub in ns.hubs.values():
        configs = hub.topic_configs()
        view = topics.get(hub.name)
        if view is None:
            topics.create(hub.name, hub.partitions, configs)
            continue
        if view.partitions < hub.partitions:
            topics.create_partitions(hub.name, hub.partitions)
            log.info("event hub %s/%s grown to %d partitions", ns.name, hub.name, hub.partitions)
        elif view.partitions > hub.partitions:
            log.warning("event hub %s/%s has %d partitions, more than the %d configured: "
                        "partitions cannot be removed", ns.name, hub.name, view.partitions,
                        hub.partitions)
        if any(view.configs.get(k) != v for k, v in configs.items()):
            topics.alter_config(hub.name, configs)


def _configure(runtime, ns: Namespace, services, report: CompatibilityReport) -> None:
    runtime.model = ns
    topics = runtime.topics
    if ns.default_partitions is not None:
        topics.num_partitions = ns.default_partitions
    for key, value in ns.topic_defaults().items():  # what the config loader checked hubs with
        topics.topic_defaults.setdefault(key, value)
    _ensure_hubs(runtime, ns)
    if ns.close_large_frames:
        runtime.frame_limit = KAFKA_FRAME_LIMIT - 1
    rescale(runtime, services)
    log.info("namespace %s: %s tier, %s mode, authentication %s%s", ns.name, ns.tier.value,
             ns.mode, "required" if ns.requires_auth else "optional",
             f", SAS policies {', '.join(sorted(ns.policies))}" if ns.policies else "")


def rescale(runtime, services) -> None:
    """The namespace's throughput quota after its tier, units or auto-inflate
    were set (at start, or changed through the management API): tokens already
    spent stay spent."""
    ns, report = runtime.model, services.report
    units = ns.effective_units()
    if not units or ns.limits.ingress_bytes_per_unit is None:
        runtime.quota = None
        return
    now = services.clock.now_ms()
    if runtime.quota is not None:
        runtime.quota.rescale(units, ns.limits, ns.auto_inflate_max, now)
    else:
        def inflated(n: int, name=ns.name) -> None:
            report.record(name, "auto-inflate", None, f"auto-inflated to {n} throughput units",
                          enforced=False, kind="note")

        runtime.quota = ThroughputQuota(ns.name, units, ns.limits, now,
                                        auto_inflate_max=ns.auto_inflate_max, on_inflate=inflated)
    log.info("namespace %s: %d throughput unit(s)%s", ns.name, units,
             f", auto-inflate to {ns.auto_inflate_max}" if ns.auto_inflate_max else "")


def configure_namespace(services, runtime, ns: Namespace) -> None:
    """Apply one namespace's model to its runtime (a namespace made at runtime)."""
    _configure(runtime, ns, services, services.report)


def _refuse_twins(services) -> None:
    """A configured hub named like a hub the data directory already holds, in another
    case (made over Kafka, so the config's load could not see it), is refused as the
    door refuses it, before any namespace's hubs are made."""
    model = services.eventhubs
    for name, runtime in services.namespaces.items():
        ns = model.namespaces.get(name)
        if ns is None or runtime.policy is None:
            continue
        for hub in ns.hubs.values():
            if runtime.topics.get(hub.name) is not None:
                continue
            denial = runtime.policy.hub_name_taken(hub.name)
            if denial is not None:
                from kafka_wire.broker import StartupError  # the broker imports this module

                raise StartupError(f"namespace {name!r}, event hub {hub.name!r} (config file): "
                                   f"{denial.message} (rule {denial.rule}): the data directory "
                                   f"{runtime.topics.logs_dir()} holds it; rename the config's hub")


def configure(services) -> None:
    """Apply ``services.eventhubs`` to every namespace the broker runs."""
    _refuse_twins(services)
    model = services.eventhubs
    for name, runtime in services.namespaces.items():
        ns = model.namespaces.get(name)
        if ns is None:  # served without a model entry: an open relaxed namespace
            ns = model.namespaces[name] = Namespace(name=name)
        _configure(runtime, ns, services, services.report)
