"""The management API (Azure Resource Manager shape) that ``azure-mgmt-eventhub``
drives: event hubs, consumer groups and SAS authorization rules (namespace and
hub level, with ``listKeys`` and ``regenerateKeys``), changed live.

Routes are under ``/subscriptions/{id}/resourceGroups/{group}/providers/
Microsoft.EventHub/namespaces/{namespace}``; any subscription and resource
group name is taken (kafka-wire has neither). Every request needs
``api-version`` and a bearer token with the Manage right on what it changes:
a SAS token of a Manage policy, or a JWT where the namespace has OAuth; a
namespace without SAS policies takes any token. A change takes effect at once
for Kafka, AMQP and HTTPS clients and is kept under the data directory
(:mod:`kafka_wire.eventhubs.managed`), never in the config file.
"""
from __future__ import annotations

import base64
import dataclasses
import json
import logging
import secrets
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_wire.eventhubs import connection_string
from kafka_wire.eventhubs.model import (DEFAULT_CONSUMER_GROUP, HOUR_MS, MANAGE, CaptureSettings, EventHub,
                                        Namespace, SasPolicy, Tier, normalize_rights)
from kafka_wire.eventhubs.app_groups import ApplicationGroup, ThrottlingPolicy
from kafka_wire.eventhubs.network import NetworkRuleSet
from kafka_wire.eventhubs.schema_registry import RegistryError
from kafka_wire.rest import arm
from kafka_wire.rest.http import Request, Response

if TYPE_CHECKING:
    from kafka_wire.rest.api import RestApi

log = logging.getLogger(__name__)

_STATUSES = {"active": "Active", "disabled": "Disabled", "senddisabled": "SendDisabled"}


class BadRequest(ValueError):
    """A body or parameter the service answers 400 for."""


def handle(api: RestApi, request: Request) -> Response:
    segs = request.segments
    version = request.query.get("api-version")
    if version is None:
        return arm.fail(400, "MissingApiVersionParameter",
                        "The api-version query parameter (?api-version=) is required for all requests.")
    if version not in arm.API_VERSIONS:
        return arm.fail(400, "InvalidApiVersionParameter",
                        f"The api-version '{version}' is invalid. The supported versions are "
                        f"'{', '.join(sorted(arm.API_VERSIONS))}'.")
    low = [s.lower() for s in segs]
    # /subscriptions/{id}[/resourceGroups/{group}]/providers/Microsoft.EventHub/namespaces[/...]
    if len(segs) < 2:
        return _no_route(request)
    sub, group, at = segs[1], "default", 2
    if len(low) > 3 and low[2] == "resourcegroups":
        group, at = segs[3], 4
    if low[at:at + 3] != ["providers", "microsoft.eventhub", "namespaces"]:
        return _no_route(request)
    tail = segs[at + 3:]
    try:
        if not tail:
            if request.method != "GET":
                return _not_allowed(request)
            return arm.listing([arm.namespace(arm.namespace_id(sub, group, rt.name), rt.model,
                                              api.services.eventhubs.endpoint_host(rt.name))
                                for rt in api.services.namespaces.values()
                                if rt.model is not None and _authorized(api, request, rt, None)[1] is None])
        return Namespaced(api, request, sub, group, tail[0]).route(tail[1:])
    except BadRequest as exc:
        return arm.fail(400, "BadRequest", str(exc))


def _no_route(request: Request) -> Response:
    return arm.fail(404, "NoRegisteredProviderFound" if "providers" not in request.path.lower()
                    else "NotFound", f"no management API at {request.path}")


def _not_allowed(request: Request) -> Response:
    return arm.fail(405, "MethodNotAllowed", f"{request.method} is not allowed on {request.path}")


def _authorized(api: RestApi, request: Request, runtime, hub: str | None):
    """(principal, None) when the bearer token may manage ``hub`` (None: the namespace)."""
    from kafka_wire.eventhubs.auth import AuthError, authenticate_header

    if runtime.model is None or runtime.model.open:
        return None, None
    try:
        principal = authenticate_header(api.services.eventhubs, runtime.name,
                                        request.headers.get("authorization", ""),
                                        api.services.clock.now_ms() / 1000)
        if principal is None:
            raise AuthError("no bearer token: the credential must give a SAS token of a Manage "
                            "policy (or a JWT where the namespace has OAuth)")
    except AuthError as exc:
        return None, arm.fail(401, "AuthenticationFailed", str(exc))
    if not runtime.policy.allows(principal, MANAGE, hub):
        what = f"event hub {hub!r}" if hub else f"namespace {runtime.name!r}"
        return None, arm.fail(403, "AuthorizationFailed",
                              f"the token ({principal}) does not grant Manage on {what}")
    return principal, None


def _body(request: Request) -> dict:
    if not request.body:
        return {}
    try:
        value = json.loads(request.body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest(f"the request body is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadRequest("the request body must be a JSON object")
    props = value.get("properties", {})
    if props is not None and not isinstance(props, dict):
        raise BadRequest("properties must be a JSON object")
    return value


def _new_key() -> str:
    return base64.b64encode(secrets.token_bytes(32)).decode()


class Namespaced:
    """One request under a namespace."""

    def __init__(self, api: RestApi, request: Request, sub: str, group: str, ns_name: str) -> None:
        self.api, self.request = api, request
        self.services = api.services
        self.runtime = next((rt for name, rt in self.services.namespaces.items()
                             if name.lower() == ns_name.lower()), None)
        self.base = arm.namespace_id(sub, group, self.runtime.name if self.runtime else ns_name)
        self.ns_name = ns_name

    def route(self, tail: list[str]) -> Response:
        method = self.request.method
        if self.runtime is None or self.runtime.model is None:
            if not tail and method == "PUT":
                return self._create_namespace()
            return arm.fail(404, "ResourceNotFound", f"namespace {self.ns_name!r} is not served here")
        low = [t.lower() for t in tail]
        hub = tail[1] if len(tail) >= 2 and low[0] == "eventhubs" else None
        self.principal, refused = _authorized(self.api, self.request, self.runtime, hub)
        if refused is not None:
            return refused
        if not tail:
            return self._namespace()
        if low[0] == "authorizationrules":
            return self._rules(tail[1:], None)
        if low[0] == "eventhubs":
            if len(tail) == 1:
                return self._hubs() if method == "GET" else _not_allowed(self.request)
            if len(tail) == 2:
                return self._hub(tail[1])
            if low[2] == "consumergroups":
                return self._groups(tail[1], tail[3:])
            if low[2] == "authorizationrules":
                return self._rules(tail[3:], tail[1])
        if low[0] == "networkrulesets":
            return self._network_rules(tail[1:])
        if low[0] == "schemagroups":
            return self._schema_groups(tail[1:])
        if low[0] == "applicationgroups":
            return self._application_groups(tail[1:])
        if low[0] == "disasterrecoveryconfigs":
            return arm.fail(400, "NotSupported", f"{tail[0]} are not emulated by kafka-wire yet")
        return _no_route(self.request)

    def _create_namespace(self) -> Response:
        """A new namespace, open (no SAS policies until rules are made in it)."""
        if self.api.add_namespace is None:
            return arm.fail(400, "NotSupported", "this server cannot add namespaces at runtime")
        body = _body(self.request)
        sku = body.get("sku") or {}
        try:
            tier = Tier.parse(str(sku.get("tier") or sku.get("name") or "Standard"))
            capacity = sku.get("capacity")
            ns = Namespace(self.ns_name, tier, units=int(capacity) if capacity else None)
            ns.validate()
        except (ValueError, TypeError) as exc:
            raise BadRequest(str(exc)) from None
        self.runtime = self.api.add_namespace(ns)
        if self.api.state is not None:
            self.api.state.namespace_created(ns)
        self.base = self.base.rsplit("/", 1)[0] + "/" + ns.name
        return arm.ok(arm.namespace(self.base, ns, self.services.eventhubs.endpoint_host(ns.name)), 201)

    # -- the namespace ----------------------------------------------------------------
    def _namespace(self) -> Response:
        ns = self.runtime.model
        method = self.request.method
        if method in ("PUT", "PATCH"):
            refused = self._rescale(_body(self.request))
            if refused is not None:
                return refused
        elif method == "DELETE":
            if self.api.remove_namespace is None:
                return arm.fail(400, "NotSupported", "this server cannot delete namespaces at runtime")
            try:
                self.api.remove_namespace(ns.name)
            except ValueError as exc:
                return arm.fail(400, "BadRequest", str(exc))
            if self.api.state is not None:
                self.api.state.namespace_deleted(ns.name)
            if self.api.hubs_changed is not None:
                self.api.hubs_changed()
            return Response(200, b"", arm.JSON)
        elif method != "GET":
            return _not_allowed(self.request)
        return arm.ok(arm.namespace(self.base, ns, self.services.eventhubs.endpoint_host(ns.name)))

    def _rescale(self, body: dict) -> Response | None:
        """A new tier (Basic and Standard only, into each other, as on Azure),
        throughput units (``sku.capacity``) or auto-inflate, in force at once."""
        ns = self.runtime.model
        sku = body.get("sku") or {}
        props = body.get("properties") or {}
        if not isinstance(sku, dict):
            raise BadRequest("sku must be a JSON object")
        try:
            tier = Tier.parse(str(sku.get("tier") or sku.get("name") or ns.tier.value))
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        units, auto_max = ns.units, ns.auto_inflate_max
        if sku.get("capacity") is not None:
            units = sku["capacity"]
            if not isinstance(units, int) or isinstance(units, bool):
                raise BadRequest(f"sku.capacity must be a whole number, not {units!r}")
        if "isAutoInflateEnabled" in props:
            auto_max = props.get("maximumThroughputUnits") or (units or 1) if props["isAutoInflateEnabled"] else None
        elif props.get("maximumThroughputUnits") and auto_max is not None:
            auto_max = props["maximumThroughputUnits"]
        if (tier, units, auto_max) == (ns.tier, ns.units, ns.auto_inflate_max):
            return None
        policy = self.runtime.policy
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

        rescale(self.runtime, self.services)
        if self.api.state is not None:
            self.api.state.scale_changed(ns)
        log.info("management API: namespace %s is now %s with %s unit(s), auto-inflate %s", ns.name,
                 tier.value, units or "default", auto_max or "off")
        return None

    # -- application groups -------------------------------------------------------------------
    def _application_groups(self, tail: list[str]) -> Response:
        ns = self.runtime.model
        groups = ns.application_groups
        method = self.request.method
        if not tail:
            if method != "GET":
                return _not_allowed(self.request)
            return arm.listing([arm.application_group(self.base, g) for g in groups.values()])
        if len(tail) != 1:
            return _no_route(self.request)
        name = tail[0]
        found = next((g for n, g in groups.items() if n.lower() == name.lower()), None)
        if method == "GET":
            return arm.ok(arm.application_group(self.base, found)) if found else \
                self._missing("application group", name)
        if method == "DELETE":
            if found is None:
                return Response(204, b"", arm.JSON)
            del groups[found.name]
        elif method == "PUT":
            props = _body(self.request).get("properties") or {}
            policies = props.get("policies") or []
            if not isinstance(policies, list) or any(not isinstance(p, dict) for p in policies):
                raise BadRequest("policies must be a list of throttling policies")
            try:
                group = ApplicationGroup(
                    found.name if found else name, str(props.get("clientAppGroupIdentifier", "")),
                    bool(props.get("isEnabled", True)),
                    [ThrottlingPolicy(str(p.get("name", "")), p.get("metricId", ""),
                                      p.get("rateLimitThreshold")) for p in policies])
            except ValueError as exc:
                raise BadRequest(str(exc)) from None
            groups[group.name] = group
            found = group
        else:
            return _not_allowed(self.request)
        self.runtime.policy.groups.forget(found.name)
        if self.api.state is not None:
            self.api.state.application_group_changed(ns, found.name)
        log.info("management API: application group %s of %s %s", found.name, ns.name,
                 "deleted" if method == "DELETE" else "set")
        if method == "DELETE":
            return Response(200, b"", arm.JSON)
        return arm.ok(arm.application_group(self.base, found))

    # -- schema groups ------------------------------------------------------------------------
    def _schema_groups(self, tail: list[str]) -> Response:
        registry = self.api.registry(self.runtime.name)
        method = self.request.method
        if not tail:
            if method != "GET":
                return _not_allowed(self.request)
            return arm.listing([arm.schema_group(self.base, g) for g in registry.groups.values()])
        if len(tail) != 1:
            return _no_route(self.request)
        name = tail[0]
        if method == "GET":
            group = registry.group(name)
            return arm.ok(arm.schema_group(self.base, group)) if group else self._missing("schema group", name)
        if method == "DELETE":
            return Response(200 if registry.delete_group(name) else 204, b"", arm.JSON)
        if method != "PUT":
            return _not_allowed(self.request)
        props = _body(self.request).get("properties") or {}
        try:
            group = registry.put_group(name, props.get("schemaType", "Avro"),
                                       props.get("schemaCompatibility", "None"),
                                       props.get("groupProperties") or {})
        except RegistryError as exc:
            return arm.fail(exc.status, exc.code, str(exc))
        return arm.ok(arm.schema_group(self.base, group))

    # -- IP filter rules ------------------------------------------------------------------
    def _network_rules(self, tail: list[str]) -> Response:
        ns = self.runtime.model
        method = self.request.method
        if not tail:
            if method != "GET":
                return _not_allowed(self.request)
            return arm.listing([arm.network_rule_set(self.base, ns.network_rules)])
        if len(tail) != 1 or tail[0].lower() != "default":
            return _no_route(self.request)
        if method == "PUT":
            props = _body(self.request).get("properties") or {}
            rules = props.get("ipRules") or []
            if not isinstance(rules, list) or any(not isinstance(r, dict) for r in rules):
                raise BadRequest("ipRules must be a list of {ipMask, action}")
            if any(str(r.get("action", "Allow")).lower() != "allow" for r in rules):
                raise BadRequest("an IP rule's action can only be Allow")
            if props.get("virtualNetworkRules"):
                return arm.fail(400, "NotSupported", "virtual network rules are not emulated")
            try:
                ns.network_rules = NetworkRuleSet(str(props.get("defaultAction", "Allow")),
                                                  [str(r.get("ipMask", "")) for r in rules],
                                                  str(props.get("publicNetworkAccess") or "Enabled"))
            except ValueError as exc:
                raise BadRequest(str(exc)) from None
            if self.api.state is not None:
                self.api.state.network_rules_changed(ns)
            log.info("management API: IP filter rules of %s set: %s", ns.name, ns.network_rules)
        elif method != "GET":
            return _not_allowed(self.request)
        return arm.ok(arm.network_rule_set(self.base, ns.network_rules))

    # -- event hubs -----------------------------------------------------------------------
    def _hub_json(self, name: str) -> dict:
        view = self.runtime.topics.get(name)
        retention = self.runtime.topics.effective_config(name).retention_ms
        return arm.event_hub(self.base, view.name, view.partitions, retention,
                             self.runtime.model.hub(view.name))

    def _hubs(self) -> Response:
        return arm.listing([self._hub_json(v.name) for v in self.runtime.topics.all() if not v.internal])

    def _hub(self, name: str) -> Response:
        topics, policy = self.runtime.topics, self.runtime.policy
        view = topics.get(name)
        method = self.request.method
        client = self.request.headers.get("user-agent")
        if method == "GET":
            if view is None:
                return self._missing("event hub", name)
            return arm.ok(self._hub_json(name))
        if method == "DELETE":
            if view is None:
                return Response(204, b"", arm.JSON)
            refusal = policy.delete_topic(self.principal, view.name)
            if refusal:
                return arm.fail(403, "AuthorizationFailed", refusal[1])
            topics.delete(view.name)
            ns = self.runtime.model
            hub = ns.hub(view.name)
            if hub is not None:
                del ns.hubs[hub.name]
            self._saved_hub(view.name)
            log.info("management API: event hub %s/%s deleted", ns.name, view.name)
            return Response(200, b"", arm.JSON)
        if method != "PUT":
            return _not_allowed(self.request)
        props = _body(self.request).get("properties") or {}
        partitions = props.get("partitionCount")
        if partitions is not None and (not isinstance(partitions, int) or partitions < 1):
            raise BadRequest(f"partitionCount must be a whole number of at least 1, not {partitions!r}")
        hours = _retention_hours(props)
        status = props.get("status")
        if status is not None:
            if str(status).lower() not in _STATUSES:
                raise BadRequest(f"status {status!r} is not Active, Disabled or SendDisabled")
            status = _STATUSES[str(status).lower()]
        ns = self.runtime.model
        capture = None
        if props.get("captureDescription") is not None:
            existing = ns.hub(view.name) if view is not None else None
            try:
                capture = arm.capture_settings(
                    props["captureDescription"], existing.capture if existing else CaptureSettings(),
                    self._capture_root(), self.services.clock.now_ms(), f"event hub {name!r}",
                    self.services.eventhubs.storage_accounts)
            except ValueError as exc:
                raise BadRequest(str(exc)) from None
        configs = {} if hours is None else {"retention.ms": str(-1 if hours < 0 else hours * HOUR_MS)}
        if view is None:
            count = partitions or topics.num_partitions
            refusal = policy.create_topic(self.principal, name, count, configs, client)
            if refusal:
                return arm.fail(400, "BadRequest", refusal[1])
            topics.create(name, count, configs)
            ns.hubs[name] = EventHub(name, partitions=count, retention_hours=hours,
                                     status=status or "Active")
            log.info("management API: event hub %s/%s created with %d partitions", ns.name, name, count)
        else:
            name = view.name
            hub = self._configured(name)
            if partitions is not None and partitions != view.partitions:
                if partitions < view.partitions:
                    raise BadRequest(f"event hub {name!r} has {view.partitions} partitions: "
                                     "partitions cannot be removed")
                refusal = policy.create_partitions(self.principal, name, partitions, client)
                if refusal:
                    return arm.fail(400, "BadRequest", refusal[1])
                topics.create_partitions(name, partitions)
                hub.partitions = partitions
            if configs:
                refusal = policy.alter_topic_config(self.principal, name, configs, client)
                if refusal:
                    return arm.fail(400, "BadRequest", refusal[1])
                topics.alter_config(name, configs)
                hub.retention_hours = hours
            if status is not None:
                hub.status = status
        if capture is not None:
            self._configured(name).capture = capture
            log.info("management API: Capture of %s/%s %s", ns.name, name,
                     f"enabled into {capture.destination}" if capture.enabled else "disabled")
        self._saved_hub(name)
        return arm.ok(self._hub_json(name))

    def _capture_root(self) -> Path:
        """Where storage accounts' containers stand as local directories."""
        config = self.services.config
        return Path(config.capture_dir) if config.capture_dir else Path(config.data_dir) / "capture"

    def _configured(self, name: str) -> EventHub:
        """The hub's model entry, made for a hub created over Kafka (it had none)."""
        ns = self.runtime.model
        hub = ns.hub(name)
        if hub is None:
            hub = ns.hubs[name] = EventHub(name, partitions=self.runtime.topics.get(name).partitions)
        return hub

    def _saved_hub(self, name: str) -> None:
        if self.api.state is not None:
            self.api.state.hub_changed(self.runtime.model, name)
        if self.api.hubs_changed is not None:
            self.api.hubs_changed()

    def _missing(self, what: str, name: str) -> Response:
        return arm.fail(404, "NotFound", f"{what} {name!r} does not exist in namespace "
                                         f"{self.runtime.name!r}")

    # -- consumer groups --------------------------------------------------------------------
    def _groups(self, hub_name: str, tail: list[str]) -> Response:
        view = self.runtime.topics.get(hub_name)
        if view is None:
            return self._missing("event hub", hub_name)
        hub_id = f"{self.base}/eventhubs/{view.name}"
        configured = self.runtime.model.hub(view.name)
        groups = configured.all_consumer_groups() if configured else [DEFAULT_CONSUMER_GROUP]
        method = self.request.method
        if not tail:
            if method != "GET":
                return _not_allowed(self.request)
            return arm.listing([arm.consumer_group(hub_id, g) for g in groups])
        if len(tail) != 1:
            return _no_route(self.request)
        name = tail[0]
        found = next((g for g in groups if g.lower() == name.lower()), None)
        if method == "GET":
            return arm.ok(arm.consumer_group(hub_id, found)) if found else self._missing("consumer group", name)
        if name.lower() == DEFAULT_CONSUMER_GROUP.lower() and method == "DELETE":
            raise BadRequest("the $Default consumer group cannot be deleted")
        hub = self._configured(view.name)
        if method == "PUT":
            if found is None:
                refusal = self.runtime.policy.consumer_group_limit(view.name, len(groups))
                if refusal is not None:
                    return arm.fail(400, "QuotaExceeded", refusal)
                hub.consumer_groups.append(name)
                found = name
            self._saved_hub(view.name)
            return arm.ok(arm.consumer_group(hub_id, found))
        if method == "DELETE":
            if found is None:
                return Response(204, b"", arm.JSON)
            hub.consumer_groups = [g for g in hub.consumer_groups if g.lower() != name.lower()]
            self._saved_hub(view.name)
            return Response(200, b"", arm.JSON)
        return _not_allowed(self.request)

    # -- authorization rules ------------------------------------------------------------------
    def _rules(self, tail: list[str], hub_name: str | None) -> Response:
        ns = self.runtime.model
        method = self.request.method
        owner_id = self.base
        if hub_name is not None:
            view = self.runtime.topics.get(hub_name)
            if view is None:
                return self._missing("event hub", hub_name)
            hub_name = view.name
            owner_id = f"{self.base}/eventhubs/{hub_name}"
            existing_hub = ns.hub(hub_name)
            rules = existing_hub.policies if existing_hub is not None else {}
        else:
            rules = ns.policies
        if not tail:
            if method != "GET":
                return _not_allowed(self.request)
            return arm.listing([arm.authorization_rule(owner_id, p, hub_name is not None)
                                for p in rules.values()])
        name = tail[0]
        policy = rules.get(name)
        action = tail[1].lower() if len(tail) == 2 else None
        if len(tail) > 2 or (action is not None and action not in ("listkeys", "regeneratekeys")):
            return _no_route(self.request)
        if action is not None:
            if method != "POST":
                return _not_allowed(self.request)
            if policy is None:
                return self._missing("authorization rule", name)
            if action == "regeneratekeys":
                body = _body(self.request)
                kind = str(body.get("keyType", "")).lower()
                if kind not in ("primarykey", "secondarykey"):
                    raise BadRequest("keyType must be PrimaryKey or SecondaryKey")
                key = body.get("key") or _new_key()
                if kind == "primarykey":
                    policy.primary_key = key
                else:
                    policy.secondary_key = key
                self._saved_rule(name, hub_name)
                log.info("management API: %s key of SAS policy %s regenerated in %s", body["keyType"],
                         name, ns.name)
            return arm.ok(self._keys(policy, hub_name))
        if method == "GET":
            if policy is None:
                return self._missing("authorization rule", name)
            return arm.ok(arm.authorization_rule(owner_id, policy, hub_name is not None))
        if method == "DELETE":
            if policy is None:
                return Response(204, b"", arm.JSON)
            del rules[name]
            self._saved_rule(name, hub_name)
            return Response(200, b"", arm.JSON)
        if method != "PUT":
            return _not_allowed(self.request)
        rights = (_body(self.request).get("properties") or {}).get("rights")
        if not isinstance(rights, list) or not rights:
            raise BadRequest("properties.rights must list Listen, Send and/or Manage")
        try:
            wanted = normalize_rights(rights)
            if policy is None:
                policy = SasPolicy(name, _new_key(), _new_key(), wanted, hub=hub_name)
            else:
                policy.rights = wanted
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        if hub_name is not None:
            self._configured(hub_name).policies[name] = policy
        else:
            ns.policies[name] = policy
        self._saved_rule(name, hub_name)
        return arm.ok(arm.authorization_rule(owner_id, policy, hub_name is not None))

    def _saved_rule(self, name: str, hub_name: str | None) -> None:
        if self.api.state is None:
            return
        if hub_name is not None:
            self.api.state.hub_changed(self.runtime.model, hub_name)
        else:
            self.api.state.policy_changed(self.runtime.model, name)

    def _keys(self, policy: SasPolicy, hub_name: str | None) -> dict:
        host = self.services.eventhubs.endpoint_host(self.runtime.name)

        def cs(key: str | None) -> str | None:
            return None if key is None else connection_string.build(
                host, key_name=policy.name, key=key, entity_path=hub_name)

        return arm.access_keys(policy, cs(policy.primary_key), cs(policy.secondary_key))


def _retention_hours(props: dict) -> int | None:
    desc = props.get("retentionDescription") or {}
    hours = desc.get("retentionTimeInHours")
    if hours is None and props.get("messageRetentionInDays") is not None:
        hours = props["messageRetentionInDays"] * 24
    if hours is not None and (not isinstance(hours, int) or hours == 0 or hours < -1):
        raise BadRequest(f"the retention must be a whole number of hours (or -1), not {hours!r}")
    return hours
