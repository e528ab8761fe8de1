"""Wire the Event Hubs model into a running broker.

:func:`attach` gives every ``NamespaceRuntime`` its :class:`Namespace` model
(``runtime.model``) and throughput quota (``runtime.extra["quota"]``), creates
or updates the configured event hubs, sets the namespace's defaults for new
hubs, opens the compatibility report, and installs the hooks the API modules
and the server read from ``services.extra``:

=============================  ==================================================
``eventhubs_model``            the :class:`EventHubsModel` (SASL authentication)
``eventhubs_report``           the :class:`CompatibilityReport`
``auth_gate``                  server: may an unauthenticated connection go on?
``sasl_raw``                   server: the bare token after SaslHandshake v0
``topic_visible``              Metadata: hubs the principal may see
``auto_create``                Metadata: hub auto-creation (Manage, quotas)
``produce_check``              Produce: Send right, tier rules, publisher policy,
                               ingress quota
``egress_delay``               Fetch: empty answer while egress is in debt
``egress_account``             Fetch: charge egress, throttle time
``create_topic_policy`` …      admin: Manage right and tier rules
=============================  ==================================================
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

from kafka_wire.eventhubs import hooks
from kafka_wire.eventhubs.auth import login
from kafka_wire.eventhubs.model import HOUR_MS, KAFKA_FRAME_LIMIT, EventHubsModel, Namespace
from kafka_wire.eventhubs.quotas import ThroughputQuota
from kafka_wire.eventhubs.report import CompatibilityReport

log = logging.getLogger(__name__)

__all__ = ["attach", "raw_sasl"]


def raw_sasl(services, state, token: bytes) -> bytes | None:
    """SaslHandshake v0's bare PLAIN token: b"" (an empty challenge) or None to close."""
    return None if login(services, state, token, state.sasl_mechanism or "PLAIN") else b""


def _large_frame(report: CompatibilityReport, default: str) -> Callable:
    def on_large_frame(state, size: int) -> str:
        """Record a frame over Event Hubs' limit; the log line for closing its connection."""
        ns = state.namespace.name if state.namespace is not None else default
        message = (f"a request frame of {size} bytes: Event Hubs closes the connection on frames "
                   f"of {KAFKA_FRAME_LIMIT:,} bytes or more; lower max.request.size / "
                   "message.max.bytes below 1 MB")
        report.record(ns, "frame-size", None, message, enforced=True)
        return message

    return on_large_frame


def _gate(default: Namespace) -> Callable | None:
    """None, or ``gate(state, header)``: None where the connection may go on, else what
    the namespace requires (for the log line of the closed connection)."""
    if not (default.requires_auth or (default.strict and not default.limits.kafka)):
        return None
    required = (f"namespace {default.name} requires SASL authentication: PLAIN with username "
                "$ConnectionString and a connection string as password"
                + (", or OAUTHBEARER with a token" if default.oauth is not None else ""))

    def gate(state, header) -> str | None:
        return None if state.authenticated else required

    return gate


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
    retention = ns.default_retention()
    if retention is not None:
        topics.topic_defaults.setdefault("retention.ms",
                                         str(-1 if retention < 0 else retention * HOUR_MS))
    if ns.max_message_bytes:
        topics.topic_defaults.setdefault("max.message.bytes", str(ns.max_message_bytes))
    _ensure_hubs(runtime, ns)
    if ns.close_large_frames:
        runtime.extra["max_frame_bytes"] = KAFKA_FRAME_LIMIT - 1
    units = ns.effective_units()
    if units and ns.limits.ingress_bytes_per_unit is not None:
        def inflated(n: int, name=ns.name) -> None:
            report.record(name, "auto-inflate", None, f"auto-inflated to {n} throughput units",
                          enforced=False, kind="note")

        runtime.extra["quota"] = ThroughputQuota(
            ns.name, units, ns.limits, services.clock.now_ms(),
            auto_inflate_max=ns.auto_inflate_max, on_inflate=inflated)
        log.info("namespace %s: %d throughput unit(s)%s", ns.name, units,
                 f", auto-inflate to {ns.auto_inflate_max}" if ns.auto_inflate_max else "")
    log.info("namespace %s: %s tier, %s mode, authentication %s%s", ns.name, ns.tier.value,
             ns.mode, "required" if ns.requires_auth else "optional",
             f", SAS policies {', '.join(sorted(ns.policies))}" if ns.policies else "")


def attach(services, model: EventHubsModel, data_dir: Path) -> Callable[[], None]:
    """Install the Event Hubs layer; returns the closer to call at shutdown."""
    report = CompatibilityReport(data_dir, services.clock)
    services.extra["eventhubs_model"] = model
    services.extra["eventhubs_report"] = report
    for name, runtime in services.namespaces.items():
        ns = model.namespaces.get(name)
        if ns is None:  # served without a model entry: an open relaxed namespace
            ns = model.namespaces[name] = Namespace(name=name)
        _configure(runtime, ns, services, report)
    extra = services.extra
    gate = _gate(model.namespaces[services.default_namespace])
    if gate is not None:
        extra["auth_gate"] = gate
    extra["sasl_raw"] = raw_sasl
    extra["on_large_frame"] = _large_frame(report, services.default_namespace)
    extra["topic_visible"] = hooks.topic_visible
    extra["auto_create"] = hooks.auto_create
    extra["produce_check"] = hooks.produce_check
    extra["egress_delay"] = hooks.egress_delay
    extra["egress_account"] = hooks.egress_account
    extra["create_topic_policy"] = hooks.create_topic_policy
    extra["create_partitions_policy"] = hooks.create_partitions_policy
    extra["delete_topic_policy"] = hooks.delete_topic_policy
    extra["alter_topic_config_policy"] = hooks.alter_topic_config_policy
    extra["delete_records_policy"] = hooks.delete_records_policy
    return report.close
