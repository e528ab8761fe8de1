"""A namespace's IP filter rules (``networkRuleSets/default``)."""
from __future__ import annotations

import logging

from kafka_wire.eventhubs.network import NetworkRuleSet
from kafka_wire.rest import arm
from kafka_wire.rest.http import Response
from kafka_wire.rest.management import common
from kafka_wire.rest.management.common import BadRequest, Scope, no_route, not_allowed, objects, props, text

log = logging.getLogger(__name__)


def network_rules(scope: Scope, tail: list[str]) -> Response:
    ns = scope.runtime.model
    method = scope.method
    if not tail:
        if method != "GET":
            return not_allowed(scope.request)
        return arm.listing([arm.network_rule_set(scope.base, ns.network_rules)])
    if len(tail) != 1 or tail[0].lower() != "default":
        return no_route(scope.request)
    if method == "PUT":
        p = props(common.body(scope.request))
        most = scope.runtime.policy.bounds.ip_rules_per_namespace
        rules = objects(p, "ipRules", "properties.ipRules", most)
        masks = []
        for i, rule in enumerate(rules):
            if (text(rule, "action", f"properties.ipRules[{i}].action", 16) or "Allow").lower() != "allow":
                raise BadRequest("an IP rule's action can only be Allow")
            masks.append(text(rule, "ipMask", f"properties.ipRules[{i}].ipMask", 64) or "")
        if p.get("virtualNetworkRules"):
            return arm.fail(400, "NotSupported", "virtual network rules are not emulated")
        try:
            ns.network_rules = NetworkRuleSet(
                text(p, "defaultAction", "properties.defaultAction", 16) or "Allow", masks,
                text(p, "publicNetworkAccess", "properties.publicNetworkAccess", 32) or "Enabled")
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        scope.saved("network_rules_changed", ns)
        log.info("management API: IP filter rules of %s set: %s", ns.name, ns.network_rules)
    elif method != "GET":
        return not_allowed(scope.request)
    return arm.ok(arm.network_rule_set(scope.base, ns.network_rules))
