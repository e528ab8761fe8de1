"""Application groups: clients identified by their SAS policy name (or OAuth
application id), with throttling policies on what they send and read, and a
switch that refuses them all.

A group's identifier is ``SASKeyName=<policy>`` or ``AADAppID=<id>``, matched
against the principal a connection authenticated as, by kind: ``SASKeyName``
the policy of a SAS key or token (or a connection string's key name on an open
namespace), ``AADAppID`` the application id of a bearer JWT (its ``appid``,
else ``azp`` claim). A SAS policy named like an application id is not that
application, nor is a token whose subject is named like a policy.

Each throttling policy is a rate per second of ``IncomingBytes``,
``IncomingMessages``, ``OutgoingBytes`` or ``OutgoingMessages``, enforced the
way throughput units are: a token bucket of one second's worth, and a request
past it is answered after the throttle time (Kafka's ``throttle_time_ms``, an
AMQP settlement or an HTTPS answer later).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from kafka_wire.eventhubs.quotas import TokenBucket

log = logging.getLogger(__name__)

METRICS = {m.lower(): m for m in ("IncomingBytes", "IncomingMessages", "OutgoingBytes",
                                    "OutgoingMessages")}
# The ARM API's rateLimitThreshold is an int64 (ThrottlingPolicy.RateLimitThreshold, a
# long in every SDK): past it a rate is no number Azure takes, and no float the token
# bucket can hold (float(10**400) overflows on the first send).
MAX_RATE = 2 ** 63 - 1


@dataclass(slots=True)
class ThrottlingPolicy:
    name: str
    metric: str
    rate: int

    def __post_init__(self) -> None:
        metric = METRICS.get(str(self.metric).lower())
        if metric is None:
            raise ValueError(f"metricId {self.metric!r} is not one of {', '.join(METRICS.values())}")
        if not isinstance(self.rate, int) or isinstance(self.rate, bool) or not 1 <= self.rate <= MAX_RATE:
            big = isinstance(self.rate, int) and self.rate > MAX_RATE  # repr() fails past 4300 digits
            shown = f"a number of {self.rate.bit_length()} bits" if big else repr(self.rate)[:40]
            raise ValueError(f"rateLimitThreshold must be a whole number from 1 to {MAX_RATE} "
                             f"(an int64), not {shown}")
        self.metric = metric


@dataclass(slots=True)
class ApplicationGroup:
    name: str
    identifier: str                       # SASKeyName=<policy> | AADAppID=<id>
    enabled: bool = True
    policies: list[ThrottlingPolicy] = field(default_factory=list)

    def __post_init__(self) -> None:
        kind, sep, value = self.identifier.partition("=")
        if not sep or kind.lower() not in ("saskeyname", "aadappid") or not value:
            raise ValueError(f"clientAppGroupIdentifier {self.identifier!r} is not SASKeyName=<policy> "
                             "or AADAppID=<application id>")

    def matches(self, principal) -> bool:
        if principal is None:
            return False
        kind, _, value = self.identifier.partition("=")
        # (without case: application ids are GUIDs, and policy names are matched so here)
        if kind.lower() == "aadappid":
            name = principal.app_id if principal.bearer else None
        else:
            name = None if principal.bearer else principal.policy
        return name is not None and name.lower() == value.lower()

    def to_json(self) -> dict:
        return {"identifier": self.identifier, "enabled": self.enabled,
                "policies": [{"name": p.name, "metric": p.metric, "rate": p.rate} for p in self.policies]}

    @classmethod
    def from_json(cls, name: str, d: dict) -> ApplicationGroup:
        return cls(name, d["identifier"], d.get("enabled", True),
                   [ThrottlingPolicy(p["name"], p["metric"], _kept_rate(name, p["name"], p["rate"]))
                    for p in d.get("policies", [])])


def _kept_rate(group: str, policy: str, rate):
    """A rate kept by an older broker, which took any whole number: one past
    :data:`MAX_RATE` is as good as no limit, and is loaded as the largest rate."""
    if isinstance(rate, int) and not isinstance(rate, bool) and rate > MAX_RATE:
        log.warning("application group %s, policy %s: its rateLimitThreshold (%d bits) is past "
                    "the int64 the API allows: %d is used", group, policy, rate.bit_length(), MAX_RATE)
        return MAX_RATE
    return rate


class GroupLimiter:
    """The token buckets of a namespace's application groups' policies."""

    def __init__(self) -> None:
        self._buckets: dict[tuple[str, str], tuple[ThrottlingPolicy, TokenBucket]] = {}

    def forget(self, group: str) -> None:
        """The group changed: its buckets start full with the new rates."""
        for key in [k for k in self._buckets if k[0] == group]:
            del self._buckets[key]

    def charge(self, group: ApplicationGroup, incoming: bool, nbytes: int, events: int,
               now_ms: int) -> int:
        """Spend what a request moved; the throttle time (ms) its policies impose."""
        wait = 0
        for policy in group.policies:
            if policy.metric.startswith("Incoming") != incoming:
                continue
            key = (group.name, policy.name)
            entry = self._buckets.get(key)
            if entry is None or entry[0] is not policy:
                entry = self._buckets[key] = (policy, TokenBucket(policy.rate, now_ms))
            amount = nbytes if policy.metric.endswith("Bytes") else events
            wait = max(wait, entry[1].take(amount, now_ms))
        return wait


def group_for(groups: dict[str, ApplicationGroup], principal) -> ApplicationGroup | None:
    if not groups or principal is None:
        return None
    return next((g for g in groups.values() if g.matches(principal)), None)
