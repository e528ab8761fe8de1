"""Faults present from start-up: the config file's ``[[faults]]`` tables and
``[server] chaos`` / ``serve --chaos SEED`` (docs/faults.md).

A ``[[faults]]`` table is one fault as the control API takes it, with its scope
keys beside the others (or in a ``scope`` table, as the JSON has them)::

    [[faults]]
    kind = "server-busy"
    hub = "orders"
    partition = 0
    count = 3
    probability = 0.5
    seed = 7
    params = { description = "busy (from the config)" }

:func:`parse` checks every entry when the file is loaded (through
:meth:`FaultPlan.add` on a throwaway plan), naming the entry that is wrong;
:func:`install` sets them, and the chaos mix, on the running broker.
"""
from __future__ import annotations

from typing import Any

from kafka_wire.fault_plan import SCOPES, FaultError, FaultPlan, KAFKA_KINDS

__all__ = ["parse", "install", "MAX_ENTRIES"]

MAX_ENTRIES = 100
_FIELDS = ("kind", "params", "count", "probability", "seed", "after_ms", "for_ms")


def _spec(entry: dict) -> dict:
    spec: dict[str, Any] = {k: entry[k] for k in _FIELDS if k in entry}
    scope = entry.get("scope", {})  # the control API's JSON pasted as is: scope = { hub = ... }
    if not isinstance(scope, dict):
        raise FaultError("scope must be a table such as { hub = \"orders\", partition = 0 }")
    spec["scope"] = {**scope, **{k: entry[k] for k in SCOPES if k in entry}}
    unknown = set(entry) - set(_FIELDS) - set(SCOPES) - {"scope"}
    if unknown:
        raise FaultError(f"unknown key(s) {', '.join(sorted(map(repr, map(str, unknown))))[:200]}; "
                         f"known: {', '.join(_FIELDS + SCOPES)}")
    return spec


def _check_kafka(spec: dict) -> None:
    from kafka_wire.faults import api_key_of, error_code_of

    if spec["kind"] == "kafka-drop-connections":
        raise FaultError("kafka-drop-connections closes the connections open when it is set, and "
                         "at start-up there are none: use serve --chaos, or kafka-wire fault add "
                         "while clients are connected")
    params = spec.get("params") or {}
    try:
        if "api" in params:
            api_key_of(params["api"])
        if "error" in params:
            error_code_of(params["error"])
    except (ValueError, TypeError, AttributeError) as exc:
        raise FaultError(str(exc)[:300]) from None


def parse(entries: Any) -> list[dict]:
    """The ``[[faults]]`` tables as control-API specs; ValueError naming the bad entry."""
    if not isinstance(entries, list):
        raise ValueError("faults must be an array of tables: write each as [[faults]] with "
                         'kind = "server-busy" and its scope, count, probability ...')
    if len(entries) > MAX_ENTRIES:
        raise ValueError(f"[[faults]]: {len(entries)} entries; at most {MAX_ENTRIES}")
    plan = FaultPlan(lambda: 0)
    plan.kafka = lambda fault: None  # checked below instead of installed
    specs = []
    for number, entry in enumerate(entries, 1):
        kind = entry.get("kind") if isinstance(entry, dict) else None
        where = f"[[faults]] entry {number}" + (f" ({kind})" if isinstance(kind, str)
                                                 and len(kind) < 40 else "")
        try:
            if not isinstance(entry, dict):
                raise FaultError("must be a table with kind = \"...\"")
            spec = _spec(entry)
            plan.add(spec)
            if spec["kind"] in KAFKA_KINDS:
                _check_kafka(spec)
        except FaultError as exc:
            raise ValueError(f"{where}: {exc}") from None
        specs.append(spec)
    return specs


def install(faults, config) -> None:
    """Set ``config.faults`` and, with ``config.chaos``, the chaos mix on a running broker
    (``faults``: its :class:`kafka_wire.faults.Faults`; on its event loop)."""
    for spec in config.faults:
        faults.plan.add(spec)
    if config.chaos is not None:
        from kafka_wire import chaos
        chaos.install(faults, config.chaos)
