"""Geo-replication settings of a namespace, in Event Hubs' words (EVENTHUBS.md §12).

A Premium or Dedicated namespace may keep secondary replicas in other regions.
``max_lag_seconds`` is ``maxReplicationLagDurationInSeconds``: 0 (synchronous:
a send is acknowledged once a quorum of replicas has it) or 300..86400
(asynchronous: acknowledged at once, replicated behind; past the limit,
operations on the primary fail). The running side is
:mod:`kafka_wire.replication`; this module only says what is valid.

In the TOML config::

    [namespaces.orders.geo_replication]
    replicas = ["westus", "eastus"]      # every region; the first is the primary
    primary = "westus"                   # optional: another of them as the primary
    max_replication_lag_seconds = 300    # 0 (the default) or 300..86400
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GeoSettings", "MIN_ASYNC_LAG_S", "MAX_LAG_S", "MAX_REPLICAS", "location_error",
           "max_lag_error", "parse_table", "tier_error", "TABLE_KEYS"]

MIN_ASYNC_LAG_S = 5 * 60        # "0 and 5 minutes to 1 day"
MAX_LAG_S = 24 * 60 * 60
MAX_REPLICAS = 8                # a bound of ours (the service lists a handful of regions per namespace)
MAX_LOCATION = 40
# Azure region names as ARM writes them ("westus2", "germanywestcentral"): lower-case
# letters and digits. Upper case and spaces ("West US 2") are folded by normalize().
_LOCATION = re.compile(r"[a-z][a-z0-9]{1,39}")
TABLE_KEYS = {"replicas", "primary", "max_replication_lag_seconds"}
GEO_TIERS = ("Premium", "Dedicated")


def normalize_location(name: Any) -> Any:
    """ "West US 2" → "westus2", as ARM accepts display names; anything else as it is."""
    if isinstance(name, str) and len(name) <= 2 * MAX_LOCATION:
        return name.replace(" ", "").lower()
    return name


def location_error(name: Any) -> str | None:
    """Why ``name`` is not a region name we accept, or None."""
    if not isinstance(name, str):
        return f"a replica location must be a string such as \"westus\", not {type(name).__name__}"
    if not _LOCATION.fullmatch(name):
        shown = name if len(name) <= MAX_LOCATION else name[:MAX_LOCATION] + "..."
        return (f"replica location {shown!r} is invalid: use an Azure region name, 2-{MAX_LOCATION} "
                "lower-case letters and digits starting with a letter (e.g. \"westus2\")")
    return None


def max_lag_error(seconds: Any) -> str | None:
    """Why ``seconds`` is not a valid maxReplicationLagDurationInSeconds, or None."""
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        return "maxReplicationLagDurationInSeconds must be a whole number of seconds"
    if seconds != 0 and not MIN_ASYNC_LAG_S <= seconds <= MAX_LAG_S:
        return (f"maxReplicationLagDurationInSeconds {seconds} is out of range: the allowed values "
                f"are 0 (synchronous) and {MIN_ASYNC_LAG_S} to {MAX_LAG_S} (5 minutes to 1 day)")
    return None


def tier_error(tier_name: str, namespace: str) -> str | None:
    """The service's refusal of geo-replication on a tier without it."""
    if tier_name in GEO_TIERS:
        return None
    return (f"namespace {namespace!r} is {tier_name}: geo-replication is available only on the "
            "Premium and Dedicated tiers")


@dataclass(slots=True)
class GeoSettings:
    """A namespace's replicas as configured: ``locations`` lists every region (the
    primary among them), ``primary`` the one that serves at first start."""
    primary: str
    locations: list[str] = field(default_factory=list)
    max_lag_seconds: int = 0

    @property
    def secondaries(self) -> list[str]:
        return [loc for loc in self.locations if loc != self.primary]

    def validate(self, where: str) -> None:
        if not isinstance(self.locations, list) or not self.locations:
            raise ValueError(f"{where}: replicas must list the namespace's regions, the primary "
                             "first, e.g. [\"westus\", \"eastus\"]")
        if len(self.locations) > MAX_REPLICAS:
            raise ValueError(f"{where}: {len(self.locations)} replicas; at most {MAX_REPLICAS}")
        seen = set()
        for loc in self.locations:
            problem = location_error(loc)
            if problem:
                raise ValueError(f"{where}: {problem}")
            if loc in seen:
                raise ValueError(f"{where}: replica {loc!r} is listed twice")
            seen.add(loc)
        if self.primary not in seen:
            raise ValueError(f"{where}: primary {self.primary!r} is not among the replicas "
                             f"{self.locations}")
        problem = max_lag_error(self.max_lag_seconds)
        if problem:
            raise ValueError(f"{where}: {problem}")

    def to_json(self) -> dict:
        return {"primary": self.primary, "locations": list(self.locations),
                "max_lag_seconds": self.max_lag_seconds}


def parse_table(t: Any, where: str) -> GeoSettings:
    """``[namespaces.X.geo_replication]`` as a :class:`GeoSettings`; ValueError names
    the key and what to write instead."""
    if not isinstance(t, dict):
        raise ValueError(f"{where} must be a table with replicas = [\"westus\", \"eastus\"]")
    unknown = sorted(set(t) - TABLE_KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; known: "
                         + ", ".join(sorted(TABLE_KEYS)))
    raw = t.get("replicas")
    if not isinstance(raw, list) or not raw:
        raise ValueError(f"{where}: replicas must list the namespace's regions, the primary "
                         "first, e.g. [\"westus\", \"eastus\"]")
    locations = [normalize_location(loc) for loc in raw]
    for loc in locations:
        problem = location_error(loc)
        if problem:
            raise ValueError(f"{where}: {problem}")
    primary = normalize_location(t.get("primary", locations[0]))
    problem = location_error(primary)
    if problem:
        raise ValueError(f"{where}: primary: {problem}")
    settings = GeoSettings(primary, locations, t.get("max_replication_lag_seconds", 0))
    settings.validate(where)
    return settings
