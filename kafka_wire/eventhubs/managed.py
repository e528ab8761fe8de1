"""What the management API changed, kept under the data directory.

The user's config file is never rewritten: each namespace's changes live in
``DATA_DIR/_management/{namespace}.json`` as entity overrides — a hub or a SAS
policy by name, with its whole settings, or ``null`` where it was deleted. At
start :func:`apply` lays them over the model read from the config, so a hub or
key created at runtime comes back after a restart, a deleted one stays
deleted, and what the config file adds later still appears. :func:`differences`
says where the running namespace differs from the file (``kafka-wire report``).
"""
from __future__ import annotations

import dataclasses
import json
import logging
import re
from pathlib import Path

from kafka_wire.eventhubs.app_groups import ApplicationGroup
from kafka_wire.eventhubs.model import CaptureSettings, EventHub, EventHubsModel, Namespace, SasPolicy, Tier
from kafka_wire.eventhubs.names import namespace_name_error
from kafka_wire.eventhubs.network import NetworkRuleSet
from kafka_wire.log.recovery import write_atomic

log = logging.getLogger(__name__)

STATE_DIR = "_management"


def _policy_json(p: SasPolicy) -> dict:
    return {"primary_key": p.primary_key, "secondary_key": p.secondary_key,
            "rights": sorted(p.rights)}


def _policy(name: str, d: dict, hub: str | None = None) -> SasPolicy:
    return SasPolicy(name, d["primary_key"], d.get("secondary_key"), frozenset(d["rights"]), hub=hub)


def hub_json(h: EventHub) -> dict:
    return {"partitions": h.partitions, "retention_hours": h.retention_hours,
            "cleanup_policy": h.cleanup_policy, "status": h.status,
            "consumer_groups": list(h.consumer_groups),
            "policies": {n: _policy_json(p) for n, p in h.policies.items()},
            "capture": dataclasses.asdict(h.capture)}


def _hub(name: str, d: dict) -> EventHub:
    return EventHub(name, partitions=d["partitions"], retention_hours=d.get("retention_hours"),
                    cleanup_policy=d.get("cleanup_policy", "Delete"), status=d.get("status", "Active"),
                    consumer_groups=list(d.get("consumer_groups", [])),
                    policies={n: _policy(n, p, name) for n, p in d.get("policies", {}).items()},
                    capture=CaptureSettings(**d.get("capture", {})))


# The broker's own files at the top of the data directory that a namespace name can spell
# (names.DATA_DIR_ENTRIES): a namespace's directory there stops the broker.
BROKER_FILES = {"producer-ids": "Kafka producer-id block"}
_NAMESPACE_LOG_ENTRY = re.compile(r"(.+)-(\d+)(\.deleted)?")  # log.manager: {topic}-{partition}


def repair(data_dir: Path, name: str) -> str:
    """How the operator serves again, under another name, namespace ``name`` that the
    management API made before its name was refused (a name the broker now keeps for
    itself in the data directory, or one no longer valid): every place it has under
    ``data_dir``, and what to rename each to. Nothing is renamed here: the operator picks
    the new name, and the broker may be running on this directory."""
    from kafka_wire.coordinator.checkpoints.embedded import CHECKPOINTS_DIR
    from kafka_wire.eventhubs.schema_registry import STATE_DIR as SCHEMAS_DIR

    new = "NEWNAME"
    moves = [(data_dir / STATE_DIR / f"{name}.json", data_dir / STATE_DIR / f"{new}.json")]
    plain = name not in ("", ".", "..") and "/" not in name and "\\" not in name and "\0" not in name
    if plain:
        for parent in (CHECKPOINTS_DIR, "_transactions", "_geo"):
            moves.append((data_dir / parent / name, data_dir / parent / new))
        moves.append((data_dir / SCHEMAS_DIR / f"{name}.json", data_dir / SCHEMAS_DIR / f"{new}.json"))
    steps = [f"rename {old} to {to}" for old, to in moves if old.exists() or old == moves[0][0]]
    log_dir = data_dir / name
    if plain and log_dir.is_dir():
        topics = {t.stem for t in (log_dir / "__topics").glob("*.json")}
        own = sorted(e.name for e in log_dir.iterdir() if e.name == "__topics" or (
            (m := _NAMESPACE_LOG_ENTRY.fullmatch(e.name)) is not None and m.group(1) in topics))
        others = [e.name for e in log_dir.iterdir() if e.name not in own]
        if others:  # shared with the broker's own entry (the default Capture root): move its part only
            steps.append(f"make the directory {data_dir / new} and move into it, from {log_dir}, "
                         f"the namespace's log: {', '.join(own) or '(nothing)'} (leave "
                         f"{', '.join(sorted(others)[:5])}{', ...' if len(others) > 5 else ''}: "
                         "they are the broker's)")
        else:
            steps.append(f"rename {log_dir} to {data_dir / new}")
    return (f"Namespace {name!r} was made through the management API before its name was refused, "
            f"and is not served. To serve it again under another name, stop kafka-wire and, with "
            f"{new} a name of 6-50 letters, digits and hyphens that is not taken: "
            + "; ".join(steps) + ". Then start kafka-wire again (nothing has been renamed)")


class ManagedState:
    """The overrides of every namespace, and where they are written."""

    def __init__(self, data_dir: Path) -> None:
        self.directory = Path(data_dir) / STATE_DIR
        self.overrides: dict[str, dict] = {}
        if self.directory.is_dir():
            for path in sorted(self.directory.glob("*.json")):
                try:
                    self.overrides[path.stem] = json.loads(path.read_text())
                except (OSError, ValueError) as exc:
                    log.error("management state %s cannot be read (%s): its changes are not applied",
                              path, exc)

    def add_namespaces(self, model: EventHubsModel) -> None:
        """Namespaces made through the management API, into the model before the
        broker opens one runtime per namespace."""
        for name, state in self.overrides.items():
            if "namespace" not in state:
                continue
            made = state["namespace"]
            problem = namespace_name_error(name)
            if problem is not None and name not in model.namespaces:
                data_dir = self.directory.parent
                how = (repair(data_dir, name) if made is not None
                       else "It records the namespace's deletion: remove the file")
                if (data_dir / name).is_dir() and name in BROKER_FILES:
                    from kafka_wire.broker import StartupError  # the broker imports this module

                    # the broker cannot keep its own file there: it may not start until it is moved
                    raise StartupError(f"{data_dir / name} is namespace {name!r}'s directory, where the "
                                       f"broker keeps its {BROKER_FILES[name]}: {problem}. {how}")
                log.error("management state %s ignored: %s. %s", self.directory / f"{name}.json", problem, how)
                continue
            if made is None:  # deleted (its data went with it)
                if name != model.default_namespace:
                    model.namespaces.pop(name, None)
            elif name not in model.namespaces:
                model.namespaces[name] = Namespace(name, Tier.parse(made["tier"]), units=made.get("units"),
                                                   created_at_runtime=True)

    def namespace_created(self, ns: Namespace) -> None:
        state = self.overrides.setdefault(ns.name, {})
        state["namespace"] = {"tier": ns.tier.value, "units": ns.units}
        self._write(ns.name)

    def namespace_deleted(self, name: str) -> None:
        """Forget its changes; remember that it is gone (from the config file too)."""
        self.overrides[name] = {"namespace": None}
        self._write(name)

    def apply(self, model: EventHubsModel) -> None:
        """Lay the saved changes over the model from the config file."""
        for name, state in self.overrides.items():
            ns = model.namespaces.get(name)
            if ns is None and state.get("namespace", ...) is None:
                continue  # deleted through the management API
            if ns is None:
                log.warning("management state for namespace %s, which the config no longer has: "
                            "ignored", name)
                continue
            if "scale" in state:
                scale = state["scale"]
                ns.tier, ns.units = Tier.parse(scale["tier"]), scale.get("units")
                ns.auto_inflate_max = scale.get("auto_inflate_max")
            for pname, p in state.get("policies", {}).items():
                if p is None:
                    ns.policies.pop(pname, None)
                else:
                    ns.policies[pname] = _policy(pname, p)
            if "network_rules" in state:
                rules = state["network_rules"]
                ns.network_rules = NetworkRuleSet.from_json(rules) if rules is not None else None
            for gname, g in state.get("application_groups", {}).items():
                if g is None:
                    ns.application_groups.pop(gname, None)
                else:
                    ns.application_groups[gname] = ApplicationGroup.from_json(gname, g)
            for hname, h in state.get("hubs", {}).items():
                existing = ns.hub(hname)
                if existing is not None:
                    del ns.hubs[existing.name]
                if h is not None:
                    ns.hubs[hname] = _hub(hname, h)
            log.info("namespace %s: changes made through the management API applied (%s)", name,
                     self.directory / f"{name}.json")

    def hub_changed(self, ns: Namespace, name: str) -> None:
        hub = ns.hub(name)
        self._set(ns.name, "hubs", name, hub_json(hub) if hub is not None else None)

    def policy_changed(self, ns: Namespace, name: str) -> None:
        policy = ns.policies.get(name)
        self._set(ns.name, "policies", name, _policy_json(policy) if policy is not None else None)

    def application_group_changed(self, ns: Namespace, name: str) -> None:
        group = ns.application_groups.get(name)
        self._set(ns.name, "application_groups", name, group.to_json() if group is not None else None)

    def scale_changed(self, ns: Namespace) -> None:
        """Its tier, throughput units or auto-inflate."""
        state = self.overrides.setdefault(ns.name, {})
        state["scale"] = {"tier": ns.tier.value, "units": ns.units, "auto_inflate_max": ns.auto_inflate_max}
        if state.get("namespace"):  # made at runtime: it is made again with its new scale
            state["namespace"] = {"tier": ns.tier.value, "units": ns.units}
        self._write(ns.name)

    def network_rules_changed(self, ns: Namespace) -> None:
        state = self.overrides.setdefault(ns.name, {})
        state["network_rules"] = ns.network_rules.to_json() if ns.network_rules is not None else None
        self._write(ns.name)

    def _set(self, namespace: str, kind: str, name: str, value) -> None:
        state = self.overrides.setdefault(namespace, {})
        entries = state.setdefault(kind, {})
        for existing in [k for k in entries if k.lower() == name.lower()]:
            del entries[existing]
        entries[name] = value
        self._write(namespace)

    def _write(self, namespace: str) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        write_atomic(self.directory / f"{namespace}.json",
                     json.dumps(self.overrides[namespace], indent=1, sort_keys=True).encode())

    def differences(self) -> list[str]:
        """One line per entity the management API changed, for the report."""
        out = []
        for ns, state in sorted(self.overrides.items()):
            for kind, what in (("hubs", "event hub"), ("policies", "SAS policy"),
                               ("application_groups", "application group")):
                for name, value in sorted(state.get(kind, {}).items()):
                    verb = "deleted" if value is None else "created or changed"
                    out.append(f"{ns}: {what} {name!r} {verb} through the management API")
            if "namespace" in state:
                verb = "deleted" if state["namespace"] is None else "created"
                out.append(f"{ns}: namespace {verb} through the management API")
            if "scale" in state:
                scale = state["scale"]
                out.append(f"{ns}: scaled through the management API to {scale['tier']}, "
                           f"{scale.get('units') or 'default'} unit(s), auto-inflate "
                           f"{scale.get('auto_inflate_max') or 'off'}")
            if "network_rules" in state:
                out.append(f"{ns}: IP filter rules set through the management API")
        return out
