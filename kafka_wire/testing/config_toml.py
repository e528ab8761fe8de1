"""kafka-wire's TOML config written from Python values, for a test's broker
(``EmulatedBroker(config_file=...)``): a namespace, its SAS policies and hubs as
dicts rather than TOML text copied from test to test.

Example::

    from kafka_wire.testing.config_toml import namespace_config, sas_policy, toml_text

    path.write_text(toml_text(namespace_config(
        "contoso", policies={"RootManageSharedAccessKey": sas_policy("cm9vdA==")},
        hubs={"orders": {"partitions": 2}})))
"""
from __future__ import annotations

import json
import math
import re
from typing import Any, Mapping

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def sas_policy(primary_key: str, *rights: str) -> dict:
    """A SAS policy's table: its key, and ``rights`` when given (none: the loader's default)."""
    return {"primary_key": primary_key, **({"rights": list(rights)} if rights else {})}


def namespace_config(name: str, *, tier: str = "Standard", policies: Mapping[str, Mapping] | None = None,
                     hubs: Mapping[str, Mapping] | None = None, **settings: Any) -> dict:
    """A config of one namespace ``name``, the default one: its ``tier``, other
    ``settings`` (``throughput_units=1``, ``oauth={...}``), its SAS ``policies`` and its
    event ``hubs`` (name -> table: ``partitions``, a hub's own ``policies``, ...)."""
    ns: dict[str, Any] = {"tier": tier, **settings}
    if policies:
        ns["policies"] = dict(policies)
    if hubs:
        ns["eventhubs"] = dict(hubs)
    return {"default_namespace": name, "namespaces": {name: ns}}


def toml_text(doc: Mapping[str, Any]) -> str:
    """``doc`` (nested mappings of strings, numbers, booleans and lists) as TOML: each
    mapping a ``[dotted.header]`` table, after the values of the table holding it."""
    lines: list[str] = []

    def table(path: tuple[str, ...], values: Mapping[str, Any]) -> None:
        subtables = {k: v for k, v in values.items() if isinstance(v, Mapping)}
        plain = {k: v for k, v in values.items() if not isinstance(v, Mapping)}
        if path and (plain or not subtables):  # (a table of tables only is implied by theirs)
            lines.append("[" + ".".join(map(_key, path)) + "]")
        lines.extend(f"{_key(k)} = {_value(v)}" for k, v in plain.items())
        for k, v in subtables.items():
            table((*path, k), v)

    table((), doc)
    return "\n".join(lines) + "\n"


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def _string(s: str) -> str:
    # JSON's escapes are TOML's; JSON leaves DEL raw, which a TOML basic string may not hold
    return json.dumps(s, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(map(_value, v)) + "]"
    raise TypeError(f"no TOML value for {type(v).__name__} {v!r}: use a str, number, bool, list or mapping")
