"""Event hubs: listed, read, made, changed (partitions, retention, status,
Capture) and deleted, through the namespace's door (rights, tier rules and the
broker's bounds) before anything is made."""
from __future__ import annotations

import logging
from pathlib import Path

from kafka_wire.eventhubs.bounds import retention_hours_error
from kafka_wire.eventhubs.model import HOUR_MS, CaptureSettings, EventHub
from kafka_wire.eventhubs.names import hub_name_error
from kafka_wire.rest import arm
from kafka_wire.rest.http import Response
from kafka_wire.rest.management import capture, common
from kafka_wire.rest.management.common import (BadRequest, Scope, absent, deleted, named,
                                               not_allowed, obj, props, text, whole)

log = logging.getLogger(__name__)

_STATUSES = {"active": "Active", "disabled": "Disabled", "senddisabled": "SendDisabled"}


def hub_json(scope: Scope, name: str) -> dict:
    topics = scope.runtime.topics
    view = topics.get(name)
    retention = topics.effective_config(name).retention_ms
    return arm.event_hub(scope.base, view.name, view.partitions, retention,
                         scope.runtime.model.hub(view.name))


def hubs(scope: Scope) -> Response:
    if scope.method != "GET":
        return not_allowed(scope.request)
    return arm.listing([hub_json(scope, v.name) for v in scope.runtime.topics.all() if not v.internal])


def configured(scope: Scope, name: str) -> EventHub:
    """The hub's model entry, made for a hub created over Kafka (it had none)."""
    ns = scope.runtime.model
    hub = ns.hub(name)
    if hub is None:
        hub = ns.hubs[name] = EventHub(name, partitions=scope.runtime.topics.get(name).partitions)
    return hub


def saved(scope: Scope, name: str) -> None:
    scope.saved("hub_changed", scope.runtime.model, name)
    if scope.api.hubs_changed is not None:
        scope.api.hubs_changed()


def hub(scope: Scope, name: str) -> Response:
    topics, policy = scope.runtime.topics, scope.runtime.policy
    view = topics.hub(name)  # (ARM's names are case-insensitive: ORDERS is hub Orders)
    method = scope.method
    if method == "GET":
        return arm.ok(hub_json(scope, view.name)) if view is not None else scope.missing("event hub", name)
    if method == "DELETE":
        if view is None:
            return absent()
        refusal = policy.delete_topic(scope.principal, view.name)
        if refusal:
            return arm.fail(403, "AuthorizationFailed", refusal.message)
        topics.delete(view.name)
        ns = scope.runtime.model
        entry = ns.hub(view.name)
        if entry is not None:
            del ns.hubs[entry.name]
        saved(scope, view.name)
        log.info("management API: event hub %s/%s deleted", ns.name, view.name)
        return deleted()
    if method != "PUT":
        return not_allowed(scope.request)
    if view is None:
        named(hub_name_error(name))
    p = props(common.body(scope.request))
    partitions = whole(p, "partitionCount", "properties.partitionCount", least=1)
    hours = _retention_hours(p)
    status = text(p, "status", "properties.status", 32)
    if status is not None:
        if status.lower() not in _STATUSES:
            raise BadRequest(f"status {status!r} is not Active, Disabled or SendDisabled")
        status = _STATUSES[status.lower()]
    ns = scope.runtime.model
    new_capture = None
    if p.get("captureDescription") is not None:
        existing = ns.hub(view.name) if view is not None else None
        new_capture = capture.settings(
            p["captureDescription"], existing.capture if existing else CaptureSettings(),
            capture_root(scope), scope.services.clock.now_ms(), f"event hub {name!r}",
            scope.services.eventhubs.storage_accounts)
    configs = {} if hours is None else {"retention.ms": str(-1 if hours < 0 else hours * HOUR_MS)}
    client = scope.request.headers.get("user-agent")
    if view is None:
        count = partitions or topics.num_partitions
        refusal = policy.create_topic(scope.principal, name, count, configs, client)
        if refusal:
            return arm.fail(400, "BadRequest", refusal.message)
        topics.create(name, count, configs)
        ns.hubs[name] = EventHub(name, partitions=count, retention_hours=hours, status=status or "Active")
        log.info("management API: event hub %s/%s created with %d partition%s", ns.name, name, count,
                 "" if count == 1 else "s")
    else:
        name = view.name
        entry = configured(scope, name)
        if partitions is not None and partitions != view.partitions:
            if partitions < view.partitions:
                raise BadRequest(f"event hub {name!r} has {view.partitions} partitions: "
                                 "partitions cannot be removed")
            refusal = policy.create_partitions(scope.principal, name, partitions, client)
            if refusal:
                return arm.fail(400, "BadRequest", refusal.message)
            topics.create_partitions(name, partitions)
            entry.partitions = partitions
        if configs:
            refusal = policy.alter_topic_config(scope.principal, name, configs, client)
            if refusal:
                return arm.fail(400, "BadRequest", refusal.message)
            topics.alter_config(name, configs)
            entry.retention_hours = hours
        if status is not None:
            entry.status = status
    if new_capture is not None:
        configured(scope, name).capture = new_capture
        log.info("management API: Capture of %s/%s %s", ns.name, name,
                 f"enabled into {new_capture.destination}" if new_capture.enabled else "disabled")
    saved(scope, name)
    return arm.ok(hub_json(scope, name))


def capture_root(scope: Scope) -> Path:
    """Where storage accounts' containers stand as local directories."""
    config = scope.services.config
    return Path(config.capture_dir) if config.capture_dir else Path(config.data_dir) / "capture"


def _retention_hours(p: dict) -> int | None:
    desc = obj(p, "retentionDescription", "properties.retentionDescription")
    hours = whole(desc, "retentionTimeInHours", "properties.retentionDescription.retentionTimeInHours")
    days = whole(p, "messageRetentionInDays", "properties.messageRetentionInDays")
    if hours is None and days is not None:
        hours = days * 24
    problem = None if hours is None else retention_hours_error(hours)
    if problem:
        field = "retentionDescription.retentionTimeInHours" if desc.get("retentionTimeInHours") \
            is not None else "messageRetentionInDays"
        raise BadRequest(f"properties.{field}: a retention of {hours} hours is invalid: {problem}")
    return hours
