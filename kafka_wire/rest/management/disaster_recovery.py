"""Geo-DR ``disasterRecoveryConfigs``: pair a namespace with a partner, read the
pairing from either side, break it (on the primary), fail over (on the
secondary), check an alias name, and the alias's SAS rules with its own
connection strings (:mod:`kafka_wire.eventhubs.geo_dr` holds the pairings).

Pairing writes the partner's SAS rules, so the caller must manage the partner
as well as the namespace in the URL (the subscription's credential manages both).
"""
from __future__ import annotations

import logging
import re
from typing import Callable

from kafka_wire.eventhubs import connection_string, geo_dr
from kafka_wire.eventhubs.names import namespace_name_error
from kafka_wire.rest import arm
from kafka_wire.rest.http import Response
from kafka_wire.rest.management import common
from kafka_wire.rest.management.common import BadRequest, Scope, no_route, not_allowed, props, text

log = logging.getLogger(__name__)

_ARM_ID = re.compile(r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.EventHub/"
                     r"namespaces/([^/]+)/?", re.IGNORECASE)
KIND = f"{arm.PROVIDER}/Namespaces/disasterrecoveryconfigs"


def configs(scope: Scope, tail: list[str], manage_partner: Callable) -> Response:
    model = scope.services.eventhubs
    ns = scope.runtime.name
    method = scope.method
    if not tail:
        if method != "GET":
            return not_allowed(scope.request)
        return arm.listing([_json(scope, p) for p in geo_dr.of_namespace(model, ns)])
    alias = tail[0]
    if alias.lower() == "checknameavailability" and len(tail) == 1:
        if method != "POST":
            return not_allowed(scope.request)
        return _name_availability(scope)
    pairing = model.geo_dr.get(alias.lower())
    if pairing is not None and pairing.role(ns) is None:
        pairing = None  # an alias of other namespaces is not found here
    if len(tail) == 1:
        if method == "GET":
            return arm.ok(_json(scope, pairing)) if pairing else _missing(scope, alias)
        if method == "PUT":
            return _pair(scope, alias, pairing, manage_partner)
        if method == "DELETE":
            return _delete(scope, alias, pairing)
        return not_allowed(scope.request)
    action = tail[1].lower()
    if pairing is None:
        return _missing(scope, alias)
    if len(tail) == 2 and action in ("breakpairing", "failover"):
        if method != "POST":
            return not_allowed(scope.request)
        return _break(scope, pairing) if action == "breakpairing" else _fail_over(scope, pairing)
    if action == "authorizationrules":
        return _rules(scope, pairing, tail[2:])
    return no_route(scope.request)


def _missing(scope: Scope, alias: str) -> Response:
    return arm.fail(404, "NotFound", f"Geo-DR alias {alias[:64]!r} does not exist on namespace "
                                     f"{scope.runtime.name!r}")


def _partner_id(scope: Scope, name: str) -> str:
    return scope.base.rsplit("/namespaces/", 1)[0] + f"/namespaces/{name}"


def _json(scope: Scope, p: geo_dr.Pairing) -> dict:
    ns = scope.runtime.name
    role = p.role(ns)
    partner = p.secondary if role == "Primary" else (p.primary if role == "Secondary" else None)
    pending = 0
    if role in ("Primary", "Secondary"):
        runtimes = scope.services.namespaces
        primary, secondary = runtimes.get(p.primary), runtimes.get(p.secondary)
        if primary is not None and secondary is not None:
            pending = geo_dr.copy_metadata(primary, secondary, dry_run=True)
    props = {"provisioningState": "Succeeded", "partnerNamespace": _partner_id(scope, partner) if partner else "",
             "role": role, "pendingReplicationOperationsCount": pending}
    if p.alternate_name:
        props["alternateName"] = p.alternate_name
    return {"id": f"{scope.base}/disasterRecoveryConfigs/{p.alias}", "name": p.alias, "type": KIND,
            "location": arm.LOCATION, "properties": props}


def _partner_name(value: str) -> str:
    """A partner given as an ARM id (what the SDK sends) or a bare name."""
    if "/" in value:
        m = _ARM_ID.fullmatch(value)
        if m is None:
            raise BadRequest("properties.partnerNamespace must be the ARM id of a Microsoft.EventHub "
                             "namespace (/subscriptions/../resourceGroups/../providers/Microsoft.EventHub/"
                             "namespaces/NAME) or its name")
        value = m.group(1)
    problem = namespace_name_error(value)
    if problem is not None:
        raise BadRequest(f"properties.partnerNamespace: {problem}")
    return value


def _pair(scope: Scope, alias: str, existing, manage_partner: Callable) -> Response:
    p = props(common.body(scope.request))
    partner = text(p, "partnerNamespace", "properties.partnerNamespace", 1024)
    if not partner:
        raise BadRequest("properties.partnerNamespace (the secondary namespace's ARM id) is required")
    alternate = text(p, "alternateName", "properties.alternateName", 64)
    partner = _partner_name(partner)
    model = scope.services.eventhubs
    ns = scope.runtime.name
    if existing is not None:
        if existing.role(ns) == "Primary" and existing.secondary.lower() == partner.lower():
            return arm.ok(_json(scope, existing))  # the same pairing again
        return arm.fail(409, "Conflict", f"Geo-DR alias {existing.alias!r} exists on namespace {ns!r} "
                                         f"as {existing.role(ns)}: break or delete it first")
    taken = model.geo_dr.get(alias.lower())
    if taken is not None:
        return arm.fail(409, "Conflict", f"Geo-DR alias {alias[:64]!r} is taken by another namespace pair")
    refusal = geo_dr.pairing_refusal(model, alias, ns, partner)
    if refusal is not None:
        return arm.fail(400, "BadRequest", refusal)
    runtime = next(rt for n, rt in scope.services.namespaces.items() if n.lower() == partner.lower())
    manage_partner(runtime)  # writing its rules and hubs is managing it
    pairing = geo_dr.pair(model, alias, ns, runtime.name, alternate)
    geo_dr.copy_metadata(scope.runtime, runtime, scope.api.state)
    _kept(scope)
    return arm.ok(_json(scope, pairing))


def _delete(scope: Scope, alias: str, pairing) -> Response:
    if pairing is None:
        return common.absent()
    if pairing.secondary:
        return arm.fail(400, "BadRequest", f"Geo-DR alias {pairing.alias!r} is replicating from "
                                           f"{pairing.primary!r} to {pairing.secondary!r}: break the "
                                           "pairing first")
    geo_dr.remove(scope.services.eventhubs, pairing.alias)
    _kept(scope)
    return common.deleted()


def _break(scope: Scope, pairing) -> Response:
    if pairing.role(scope.runtime.name) != "Primary":
        return arm.fail(400, "BadRequest", f"breakPairing is called on the primary namespace of alias "
                                           f"{pairing.alias!r} while it replicates; namespace "
                                           f"{scope.runtime.name!r} is {pairing.role(scope.runtime.name)}")
    geo_dr.break_pairing(pairing)
    _kept(scope)
    return Response(200, b"", arm.JSON)


def _fail_over(scope: Scope, pairing) -> Response:
    if pairing.role(scope.runtime.name) != "Secondary":
        return arm.fail(400, "BadRequest", f"failover is called on the secondary namespace of alias "
                                           f"{pairing.alias!r}; namespace {scope.runtime.name!r} is "
                                           f"{pairing.role(scope.runtime.name)}")
    geo_dr.fail_over(pairing)
    _kept(scope)
    return Response(200, b"", arm.JSON)


def _name_availability(scope: Scope) -> Response:
    doc = common.body(scope.request)
    name = text(doc, "name", "name", 1024)
    if name is None:
        raise BadRequest("name (the alias to check) is required")
    model = scope.services.eventhubs
    problem = namespace_name_error(name)
    if problem is not None:
        result = {"nameAvailable": False, "reason": "InvalidName",
                  "message": problem.replace("namespace name", "alias name")}
    elif name.lower() in model.geo_dr or any(n.lower() == name.lower() for n in model.namespaces):
        result = {"nameAvailable": False, "reason": "NameInUse",
                  "message": f"the name {name!r} is in use by a namespace or a Geo-DR alias"}
    else:
        result = {"nameAvailable": True, "reason": "None", "message": ""}
    return arm.ok(result)


def _rules(scope: Scope, pairing, tail: list[str]) -> Response:
    """The alias's SAS rules: the namespace's own, with the alias's connection strings."""
    ns = scope.runtime.model
    owner_id = f"{scope.base}/disasterRecoveryConfigs/{pairing.alias}"
    method = scope.method
    if not tail:
        if method != "GET":
            return not_allowed(scope.request)
        return arm.listing([_rule(owner_id, policy) for policy in ns.policies.values()])
    policy = ns.policies.get(tail[0])
    if len(tail) > 2 or (len(tail) == 2 and tail[1].lower() != "listkeys"):
        return no_route(scope.request)
    if len(tail) == 2 and method != "POST" or len(tail) == 1 and method != "GET":
        return not_allowed(scope.request)
    if policy is None:
        return scope.missing("authorization rule", tail[0])
    if len(tail) == 1:
        return arm.ok(_rule(owner_id, policy))
    host = f"{pairing.alias.lower()}.servicebus.windows.net"
    own = scope.services.eventhubs.endpoint_host(scope.runtime.name)

    def cs(where: str, key: str | None) -> str | None:
        return None if key is None else connection_string.build(where, key_name=policy.name, key=key)

    keys = arm.access_keys(policy, cs(own, policy.primary_key), cs(own, policy.secondary_key))
    keys["aliasPrimaryConnectionString"] = cs(host, policy.primary_key)
    keys["aliasSecondaryConnectionString"] = cs(host, policy.secondary_key)
    return arm.ok(keys)


def _rule(owner_id: str, policy) -> dict:
    return {"id": f"{owner_id}/authorizationRules/{policy.name}", "name": policy.name,
            "location": arm.LOCATION, "type": f"{arm.PROVIDER}/Namespaces/disasterrecoveryconfigs/"
                                              "authorizationRules",
            "properties": {"rights": sorted(policy.rights)}}


def _kept(scope: Scope) -> None:
    geo_dr.save(scope.services.eventhubs, scope.api.data_dir)


def secondary_refusal(scope: Scope) -> Response | None:
    """A change to a replicating secondary's metadata: refused, as the service refuses it
    (the primary's copy would undo it)."""
    for p in geo_dr.of_namespace(scope.services.eventhubs, scope.runtime.name):
        if p.role(scope.runtime.name) == "Secondary":
            return arm.fail(400, "BadRequest", f"namespace {scope.runtime.name!r} is the Geo-DR secondary "
                                               f"of alias {p.alias!r}: change its primary {p.primary!r}, "
                                               "whose metadata is copied here")
    return None


def after_change(scope: Scope) -> None:
    """A primary's metadata changed through the management API: its secondary at once."""
    for p in geo_dr.of_namespace(scope.services.eventhubs, scope.runtime.name):
        if p.role(scope.runtime.name) == "Primary":
            secondary = scope.services.namespaces.get(p.secondary)
            if secondary is not None and secondary.model is not None:
                geo_dr.copy_metadata(scope.runtime, secondary, scope.api.state)


def namespace_deleted(api, name: str) -> None:
    geo_dr.forget_namespace(api.services.eventhubs, name)
    geo_dr.save(api.services.eventhubs, api.data_dir)
