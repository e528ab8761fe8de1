"""SAS authorization rules, namespace- and hub-level, with ``listKeys`` and
``regenerateKeys``; at most 12 on each, as on Azure."""
from __future__ import annotations

import logging

from kafka_wire.eventhubs import connection_string
from kafka_wire.eventhubs.model import SasPolicy, normalize_rights
from kafka_wire.eventhubs.names import policy_name_error
from kafka_wire.rest import arm
from kafka_wire.rest.http import Response
from kafka_wire.rest.management import common
from kafka_wire.rest.management.common import (BadRequest, Scope, absent, deleted, named, no_route,
                                               not_allowed, props, text)
from kafka_wire.rest.management.event_hubs import configured
from kafka_wire.rest.management.namespaces import new_key

log = logging.getLogger(__name__)

MOST = 12  # SAS rules per namespace or hub (Event Hubs' quota)


def rules(scope: Scope, tail: list[str], hub_name: str | None) -> Response:
    ns = scope.runtime.model
    method = scope.method
    owner_id = scope.base
    if hub_name is not None:
        view = scope.runtime.topics.hub(hub_name)
        if view is None:
            return scope.missing("event hub", hub_name)
        hub_name = view.name
        owner_id = f"{scope.base}/eventhubs/{hub_name}"
        existing_hub = ns.hub(hub_name)
        found_rules = existing_hub.policies if existing_hub is not None else {}
    else:
        found_rules = ns.policies
    if not tail:
        if method != "GET":
            return not_allowed(scope.request)
        return arm.listing([arm.authorization_rule(owner_id, p, hub_name is not None)
                            for p in found_rules.values()])
    name = tail[0]
    policy = found_rules.get(name)
    action = tail[1].lower() if len(tail) == 2 else None
    if len(tail) > 2 or (action is not None and action not in ("listkeys", "regeneratekeys")):
        return no_route(scope.request)
    if action is not None:
        if method != "POST":
            return not_allowed(scope.request)
        if policy is None:
            return scope.missing("authorization rule", name)
        if action == "regeneratekeys":
            _regenerate(scope, policy, hub_name)
        return arm.ok(_keys(scope, policy, hub_name))
    if method == "GET":
        if policy is None:
            return scope.missing("authorization rule", name)
        return arm.ok(arm.authorization_rule(owner_id, policy, hub_name is not None))
    if method == "DELETE":
        if policy is None:
            return absent()
        del found_rules[name]
        _saved(scope, name, hub_name)
        return deleted()
    if method != "PUT":
        return not_allowed(scope.request)
    rights = props(common.body(scope.request)).get("rights")
    if not isinstance(rights, list) or not rights or len(rights) > 3:
        raise BadRequest("properties.rights must list Listen, Send and/or Manage")
    try:
        wanted = normalize_rights(rights)
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    if policy is None:
        named(policy_name_error(name))
        if len(found_rules) >= MOST:
            return arm.fail(400, "QuotaExceeded", f"{MOST} SAS rules exist already: Event Hubs allows "
                                                  f"{MOST} per namespace or event hub")
        policy = SasPolicy(name, new_key(), new_key(), wanted, hub=hub_name)
    else:
        policy.rights = wanted
    if hub_name is not None:
        configured(scope, hub_name).policies[name] = policy
    else:
        ns.policies[name] = policy
    _saved(scope, name, hub_name)
    return arm.ok(arm.authorization_rule(owner_id, policy, hub_name is not None))


def _regenerate(scope: Scope, policy: SasPolicy, hub_name: str | None) -> None:
    doc = common.body(scope.request)
    kind = (text(doc, "keyType", "keyType", 32) or "").lower()
    if kind not in ("primarykey", "secondarykey"):
        raise BadRequest("keyType must be PrimaryKey or SecondaryKey")
    key = text(doc, "key", "key", 256) or new_key()
    if kind == "primarykey":
        policy.primary_key = key
    else:
        policy.secondary_key = key
    _saved(scope, policy.name, hub_name)
    log.info("management API: %s of SAS policy %s regenerated in %s", doc["keyType"], policy.name,
             scope.runtime.name)


def _saved(scope: Scope, name: str, hub_name: str | None) -> None:
    if hub_name is not None:
        scope.saved("hub_changed", scope.runtime.model, hub_name)
    else:
        scope.saved("policy_changed", scope.runtime.model, name)


def _keys(scope: Scope, policy: SasPolicy, hub_name: str | None) -> dict:
    host = scope.services.eventhubs.endpoint_host(scope.runtime.name)

    def cs(key: str | None) -> str | None:
        return None if key is None else connection_string.build(
            host, key_name=policy.name, key=key, entity_path=hub_name)

    return arm.access_keys(policy, cs(policy.primary_key), cs(policy.secondary_key))
