"""Geo-DR (Event Hubs' older geo-disaster recovery): an alias over a primary and
a secondary namespace that copies metadata, never events.

A :class:`Pairing` names the alias, the namespace the alias points at (its
``primary``) and, while paired, the ``secondary`` that receives copies of the
primary's event hubs (partitions, retention, status, consumer groups, hub SAS
rules) and namespace SAS rules (same keys, so the alias's connection strings
work on either side). Capture settings are not copied: a secondary would write
files of its own into the same container.

Rules, as Azure's Geo-DR page and the management API state them (the
secondary-must-be-empty rule is kafka-wire's reading of the docs, see
docs/georeplication.md "Geo-DR alias"): both namespaces Standard or above; the
secondary has no event hubs and no other pairing when paired; ``breakPairing``
is called on the primary and leaves both namespaces as they are, the alias on
the primary (``PrimaryNotReplicating``); ``failover`` is called on the
secondary: the alias then points at it, the pairing is gone, and the old
primary is left as is. The alias's host name (``<alias>.servicebus.windows.net``
and the other clouds' suffixes) selects the namespace the alias points at, for
every front end (:meth:`EventHubsModel.namespace_for_host` asks
:func:`target`).

Pairings made through the management API are kept in
``DATA_DIR/_geo_dr/pairings.json``; the TOML ``[geo_dr.<alias>]`` tables
declare them too (:func:`from_toml`).
"""
from __future__ import annotations

import dataclasses
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from kafka_wire.eventhubs.model import CaptureSettings, EventHub, EventHubsModel, Tier
from kafka_wire.eventhubs.names import namespace_name_error

if TYPE_CHECKING:
    from kafka_wire.context import NamespaceRuntime, Services

log = logging.getLogger(__name__)

STATE_DIR = "_geo_dr"
PAIRINGS_FILE = "pairings.json"
PAIRED_TIERS = (Tier.STANDARD, Tier.PREMIUM, Tier.DEDICATED)
SYNC_SECONDS = 1.0  # how often a paired primary's changes over Kafka or AMQP reach the secondary


@dataclass(slots=True)
class Pairing:
    alias: str
    primary: str                 # the namespace the alias points at
    secondary: str | None = None  # None: not replicating (broken, or failed over)
    alternate_name: str | None = None

    def role(self, namespace: str) -> str | None:
        if namespace.lower() == self.primary.lower():
            return "Primary" if self.secondary else "PrimaryNotReplicating"
        if self.secondary and namespace.lower() == self.secondary.lower():
            return "Secondary"
        return None


def pairings(model: EventHubsModel) -> dict[str, Pairing]:
    """The model's pairings, alias (lower case) -> pairing."""
    return model.geo_dr


def target(model: EventHubsModel, label: str) -> str | None:
    """The namespace alias ``label`` points at, if it is an alias of one served here."""
    pairing = model.geo_dr.get(label.lower())
    if pairing is None:
        return None
    return next((n for n in model.namespaces if n.lower() == pairing.primary.lower()), None)


def of_namespace(model: EventHubsModel, namespace: str) -> list[Pairing]:
    """The pairings ``namespace`` takes part in (as primary or secondary)."""
    return [p for p in pairings(model).values() if p.role(namespace) is not None]


def pairing_refusal(model: EventHubsModel, alias: str, primary: str, secondary: str) -> str | None:
    """Why ``alias`` may not pair ``primary`` with ``secondary`` (None: it may)."""
    problem = namespace_name_error(alias)
    if problem is not None:
        return problem.replace("namespace name", "alias name")
    names = {n.lower(): n for n in model.namespaces}
    if secondary.lower() not in names:
        return f"partner namespace {secondary[:64]!r} is not served here"
    secondary = names[secondary.lower()]
    if secondary.lower() == primary.lower():
        return "a namespace cannot be its own partner"
    if alias.lower() in names:  # Azure then renames the primary (alternateName): not emulated
        return (f"alias {alias!r} is the name of namespace {names[alias.lower()]!r}: choose an alias "
                "no namespace has (kafka-wire does not rename namespaces for alternateName)")
    for name in (primary, secondary):
        tier = model.namespaces[name].tier
        if tier not in PAIRED_TIERS:
            return (f"namespace {name!r} is {tier.value}: Geo-DR pairs Standard, Premium and "
                    "Dedicated namespaces")
    for p in pairings(model).values():
        if p.alias.lower() == alias.lower():
            continue
        for name in (primary, secondary):
            if p.role(name) is not None:
                return f"namespace {name!r} already takes part in Geo-DR alias {p.alias!r}"
    if model.namespaces[secondary].hubs:
        return (f"partner namespace {secondary!r} has event hubs: a Geo-DR secondary must be empty "
                "when it is paired")
    return None


# -- metadata copy -------------------------------------------------------------------------
def _hub_entry(source: NamespaceRuntime, name: str, partitions: int) -> EventHub:
    entry = source.model.hub(name)
    if entry is None:  # made over Kafka: only its partitions are known to the model
        return EventHub(name, partitions=partitions)
    copied = dataclasses.replace(entry, capture=CaptureSettings(),
                                 consumer_groups=list(entry.consumer_groups),
                                 policies=dict(entry.policies))
    copied.partitions = max(copied.partitions, partitions)
    return copied


def copy_metadata(primary: NamespaceRuntime, secondary: NamespaceRuntime, state=None,
                  dry_run: bool = False) -> int:
    """Make ``secondary``'s hubs, consumer groups and SAS rules those of ``primary``
    (SAS rules only it has are kept). Returns how many entities differed (with
    ``dry_run``: differ, untouched): the pendingReplicationOperationsCount."""
    pm, sm = primary.model, secondary.model
    pending = 0
    wanted = {v.name: v for v in primary.topics.all() if not v.internal}
    for view in list(secondary.topics.all()):
        if view.internal or view.name in wanted:
            continue
        pending += 1
        if not dry_run:
            secondary.topics.delete(view.name)
            entry = sm.hub(view.name)
            if entry is not None:
                del sm.hubs[entry.name]
            if state is not None:
                state.hub_changed(sm, view.name)
            log.info("Geo-DR: event hub %s/%s deleted, as on its primary %s", sm.name, view.name, pm.name)
    for name, view in wanted.items():
        entry = _hub_entry(primary, name, view.partitions)
        retention = primary.topics.effective_config(name).retention_ms
        have = secondary.topics.get(name)
        ours = sm.hub(name)
        same_topic = have is not None and have.partitions == view.partitions and \
            secondary.topics.effective_config(name).retention_ms == retention
        if same_topic and ours == entry:
            continue
        pending += 1
        if dry_run:
            continue
        configs = {**entry.topic_configs(), "retention.ms": str(retention)}
        if have is None:
            secondary.topics.create(name, view.partitions, configs)
        else:
            if have.partitions < view.partitions:
                secondary.topics.create_partitions(name, view.partitions)
            secondary.topics.alter_config(name, {"retention.ms": str(retention)})
        if ours is not None and ours.name != name:
            del sm.hubs[ours.name]
        sm.hubs[name] = entry
        if state is not None:
            state.hub_changed(sm, name)
        log.info("Geo-DR: event hub %s/%s copied from its primary %s", sm.name, name, pm.name)
    for name, policy in pm.policies.items():
        if sm.policies.get(name) == policy:
            continue
        pending += 1
        if not dry_run:
            sm.policies[name] = dataclasses.replace(policy)
            if state is not None:
                state.policy_changed(sm, name)
    return pending


def sync_all(services: Services, state=None, changed: Callable[[], None] | None = None) -> int:
    """Copy every paired primary's metadata to its secondary; returns what was copied."""
    total = 0
    for p in list(pairings(services.eventhubs).values()):
        if not p.secondary:
            continue
        primary, secondary = services.namespaces.get(p.primary), services.namespaces.get(p.secondary)
        if primary is None or secondary is None or primary.model is None or secondary.model is None:
            continue
        try:
            total += copy_metadata(primary, secondary, state)
        except (OSError, ValueError) as exc:  # a full disk, a limit: the next round tries again
            log.warning("Geo-DR alias %s: copying %s to %s failed (%s); retried in %.0f s", p.alias,
                        p.primary, p.secondary, exc, SYNC_SECONDS)
    if total and changed is not None:
        changed()
    return total


def follow(services: Services, state=None, changed: Callable[[], None] | None = None) -> Callable[[], None]:
    """Keep copying paired primaries' changes (made over any front end) every
    :data:`SYNC_SECONDS` on the running loop; returns the function that stops it."""
    import asyncio

    loop = asyncio.get_running_loop()
    stopped = False
    handle = None

    def tick() -> None:
        nonlocal handle
        if stopped:
            return
        try:
            sync_all(services, state, changed)
        except Exception:  # never let one bad round end the copying
            log.exception("Geo-DR: metadata copy failed")
        handle = loop.call_later(SYNC_SECONDS, tick)

    handle = loop.call_later(0, tick)

    def stop() -> None:
        nonlocal stopped
        stopped = True
        if handle is not None:
            loop.call_soon_threadsafe(handle.cancel)

    return stop


# -- changes ---------------------------------------------------------------------------------
def pair(model: EventHubsModel, alias: str, primary: str, secondary: str,
         alternate_name: str | None = None) -> Pairing:
    """Pair (after :func:`pairing_refusal` said yes)."""
    names = {n.lower(): n for n in model.namespaces}
    made = Pairing(alias, names[primary.lower()], names[secondary.lower()], alternate_name)
    pairings(model)[alias.lower()] = made
    log.info("Geo-DR alias %s pairs %s (primary) with %s", alias, made.primary, made.secondary)
    return made


def break_pairing(pairing: Pairing) -> None:
    log.info("Geo-DR alias %s: pairing of %s with %s broken", pairing.alias, pairing.primary,
             pairing.secondary)
    pairing.secondary = None


def fail_over(pairing: Pairing) -> None:
    """The alias points at the secondary; the pairing ends; the old primary is left as is."""
    old, pairing.primary, pairing.secondary = pairing.primary, pairing.secondary or pairing.primary, None
    log.info("Geo-DR alias %s failed over from %s to %s", pairing.alias, old, pairing.primary)


def remove(model: EventHubsModel, alias: str) -> None:
    pairings(model).pop(alias.lower(), None)


def forget_namespace(model: EventHubsModel, namespace: str) -> None:
    """A deleted namespace leaves its pairings: as secondary the pairing breaks; as the
    alias's target the alias goes."""
    for key, p in list(pairings(model).items()):
        if p.primary.lower() == namespace.lower():
            del pairings(model)[key]
        elif p.secondary and p.secondary.lower() == namespace.lower():
            p.secondary = None


# -- keeping -----------------------------------------------------------------------------------
def save(model: EventHubsModel, data_dir: Path | None) -> None:
    if data_dir is None:
        return
    from kafka_wire.log.recovery import write_atomic

    directory = Path(data_dir) / STATE_DIR
    directory.mkdir(parents=True, exist_ok=True)
    doc = {p.alias: {"primary": p.primary, "secondary": p.secondary, "alternate_name": p.alternate_name}
           for p in pairings(model).values()}
    write_atomic(directory / PAIRINGS_FILE, json.dumps(doc, indent=1).encode())


def load(model: EventHubsModel, data_dir: Path) -> None:
    """Pairings made through the management API, over the config file's."""
    path = Path(data_dir) / STATE_DIR / PAIRINGS_FILE
    if not path.is_file():
        return
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        log.error("Geo-DR pairings %s cannot be read (%s): ignored", path, exc)
        return
    found = pairings(model)
    found.clear()  # the kept state is what the API last made of the config's pairings
    for alias, d in doc.items():
        if not isinstance(d, dict) or not isinstance(d.get("primary"), str):
            log.error("Geo-DR pairing %r in %s is malformed: ignored", alias, path)
            continue
        found[alias.lower()] = Pairing(alias, d["primary"], d.get("secondary"), d.get("alternate_name"))


def from_toml(table, model: EventHubsModel) -> None:
    """``[geo_dr.<alias>]`` tables: ``primary`` and ``secondary`` namespace names (both
    configured, Standard or above, the secondary without event hubs of its own)."""
    if table is None:
        return
    if not isinstance(table, dict):
        raise ValueError("[geo_dr] must be a table of [geo_dr.<alias>] tables")
    for alias, t in table.items():
        where = f"[geo_dr.{alias}]"
        if not isinstance(t, dict):
            raise ValueError(f"{where} must be a table with primary and secondary")
        unknown = set(t) - {"primary", "secondary"}
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} (known: primary, "
                             "secondary)")
        primary, secondary = t.get("primary"), t.get("secondary")
        if not isinstance(primary, str) or not isinstance(secondary, str):
            raise ValueError(f"{where}: primary and secondary must name configured namespaces")
        if primary.lower() not in {n.lower() for n in model.namespaces}:
            raise ValueError(f"{where}: primary {primary!r} is not a configured namespace")
        refusal = pairing_refusal(model, alias, primary, secondary)
        if refusal is not None:
            raise ValueError(f"{where}: {refusal}")
        pair(model, alias, primary, secondary)
