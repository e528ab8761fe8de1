"""Namespaces: made, read, rescaled and deleted. Making and deleting one, and
listing them, are the subscription's to do (:mod:`kafka_wire.eventhubs.
subscription`); rescaling is the namespace's Manage right."""
from __future__ import annotations

import base64
import dataclasses
import logging
import secrets
from typing import TYPE_CHECKING

from kafka_wire.eventhubs.model import ROOT_POLICY, Namespace, SasPolicy, Tier
from kafka_wire.eventhubs.names import namespace_name_error
from kafka_wire.rest import arm
from kafka_wire.rest.http import Request, Response
from kafka_wire.rest.management.common import (BadRequest, Scope, deleted, flag, named, not_allowed,
                                               obj, props, text, whole)
from kafka_wire.rest.management import common

if TYPE_CHECKING:
    from kafka_wire.rest.api import RestApi

log = logging.getLogger(__name__)


def new_key() -> str:
    return base64.b64encode(secrets.token_bytes(32)).decode()


def listing(api: RestApi, sub: str, group: str, version: str | None = None) -> Response:
    from kafka_wire.rest.management.geo_replication import decorate

    model = api.services.eventhubs
    return arm.listing([decorate(arm.namespace(arm.namespace_id(sub, group, rt.name), rt.model,
                                               model.endpoint_host(rt.name)), rt, version)
                        for rt in api.services.namespaces.values() if rt.model is not None])


def _tier(sku: dict, default: Tier) -> Tier:
    name = text(sku, "tier", "sku.tier", 32) or text(sku, "name", "sku.name", 32)
    try:
        return Tier.parse(name) if name else default
    except ValueError as exc:
        raise BadRequest(str(exc)) from None


def create(api: RestApi, request: Request, base: str, name: str) -> Response:
    """A new namespace. On a broker whose management plane has an owner it gets a
    RootManageSharedAccessKey with new keys, as on Azure (listKeys gives them);
    on an open broker it is open, like the default namespace."""
    named(namespace_name_error(name))
    if api.add_namespace is None:
        return arm.fail(400, "NotSupported", "this server cannot add namespaces at runtime")
    services = api.services
    beyond = services.config.bounds.namespaces_error(len(services.namespaces) + 1)
    if beyond:
        return arm.fail(400, "QuotaExceeded", f"namespace {name!r} cannot be made: {beyond}")
    if any(n.lower() == name.lower() for n in services.eventhubs.namespaces):
        return arm.fail(409, "Conflict", f"namespace {name!r} exists in another case")
    doc = common.body(request)
    sku = obj(doc, "sku", "sku")
    tier = _tier(sku, Tier.STANDARD)
    units = whole(sku, "capacity", "sku.capacity", least=1)
    ns = Namespace(name, tier, units=units, created_at_runtime=True)
    subscription = services.subscription
    if subscription is not None and subscription.required:
        ns.policies[ROOT_POLICY] = SasPolicy(ROOT_POLICY, new_key(), new_key())
    try:
        ns.validate()
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    api.add_namespace(ns)
    if api.state is not None:
        api.state.namespace_created(ns)
        for policy in ns.policies.values():
            api.state.policy_changed(ns, policy.name)
    return arm.ok(arm.namespace(base, ns, services.eventhubs.endpoint_host(ns.name)), 201)


def delete(api: RestApi, name: str) -> Response:
    if api.remove_namespace is None:
        return arm.fail(400, "NotSupported", "this server cannot delete namespaces at runtime")
    try:
        api.remove_namespace(name)
    except ValueError as exc:
        return arm.fail(400, "BadRequest", str(exc))
    api.forget(name)
    if api.state is not None:
        api.state.namespace_deleted(name)
    if api.hubs_changed is not None:
        api.hubs_changed()
    return deleted()


def namespace(scope: Scope) -> Response:
    """GET, or PUT/PATCH: a new tier, throughput units or auto-inflate."""
    ns = scope.runtime.model
    if scope.method in ("PUT", "PATCH"):
        refused = _rescale(scope, common.body(scope.request))
        if refused is not None:
            return refused
    elif scope.method != "GET":
        return not_allowed(scope.request)
    return arm.ok(arm.namespace(scope.base, ns, scope.services.eventhubs.endpoint_host(ns.name)))


def _rescale(scope: Scope, doc: dict) -> Response | None:
    """Basic and Standard change into each other only, as on Azure; in force at once."""
    ns = scope.runtime.model
    sku = obj(doc, "sku", "sku")
    p = props(doc)
    tier = _tier(sku, ns.tier)
    units, auto_max = ns.units, ns.auto_inflate_max
    capacity = whole(sku, "capacity", "sku.capacity", least=1)
    if capacity is not None:
        units = capacity
    inflate = flag(p, "isAutoInflateEnabled", "properties.isAutoInflateEnabled")
    most = whole(p, "maximumThroughputUnits", "properties.maximumThroughputUnits", least=0)
    if inflate is not None:
        auto_max = (most or units or 1) if inflate else None
    elif most and auto_max is not None:
        auto_max = most
    if (tier, units, auto_max) == (ns.tier, ns.units, ns.auto_inflate_max):
        return None
    policy = scope.runtime.policy
    refusal = policy.tier_change_refusal(tier)
    if refusal:
        return arm.fail(400, "BadRequest", refusal)
    changed = dataclasses.replace(ns, tier=tier, units=units, auto_inflate_max=auto_max)
    try:
        changed.validate()
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    refusal = policy.rescale_refusal(changed)
    if refusal:
        return arm.fail(400, "BadRequest", refusal)
    ns.tier, ns.units, ns.auto_inflate_max = tier, units, auto_max
    from kafka_wire.eventhubs.attach import rescale

    rescale(scope.runtime, scope.services)
    scope.saved("scale_changed", ns)
    log.info("management API: namespace %s is now %s with %s unit(s), auto-inflate %s", ns.name,
             tier.value, units or "default", auto_max or "off")
    return None
