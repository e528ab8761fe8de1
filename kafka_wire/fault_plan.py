"""Faults of every front end, in one protocol-neutral model.

A fault is a **kind** (what goes wrong: ``server-busy``, ``detach-receiver``,
``http-throttle``, ``kafka-error`` ...), a **scope** (namespace, hub, partition,
consumer group, client, link; an empty field matches anything) and a **firing**
rule: the first ``count`` matching requests, each with ``probability`` drawn
from ``random.Random(seed)`` (deterministic: the same run fires at the same
requests), only once ``after_ms`` passed since it was added and, with
``for_ms``, only for that long (on the broker's clock).

Front ends ask :meth:`FaultPlan.fire` at their hook points; while no fault is
set, :attr:`FaultPlan.active` is False and they skip it (one attribute read).
Every firing is recorded (time, fault, target, client) in a bounded list,
:attr:`FaultPlan.fired`. The plan lives on the broker's event loop; the HTTP
control API (``/$faults``), the CLI (``kafka-wire fault``) and
``broker.faults.add`` all reach it. See docs/faults.md.
"""
from __future__ import annotations

import itertools
import random
import re
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["FaultPlan", "Fault", "FaultError", "KINDS", "SCOPES", "MAX_FAULTS", "MAX_FIRED"]

MAX_FAULTS = 1000  # set at once
MAX_FIRED = 1000   # firings kept
MAX_TOTALS = 1000  # (kind, namespace) counters kept for /metrics; past it, under namespace ""
SCOPES = ("namespace", "hub", "partition", "consumer_group", "client", "link")

# kind -> (what it does, its parameters with defaults)
KINDS: dict[str, tuple[str, dict[str, Any]]] = {
    "server-busy": ("AMQP: refuse a transfer with com.microsoft:server-busy",
                    {"description": "the server is busy: please retry after 4 seconds"}),
    "quota-exceeded": ("AMQP: refuse a transfer with amqp:resource-limit-exceeded",
                       {"description": "the namespace's quota is exceeded"}),
    "detach-sender": ("AMQP: detach a sender link (at its next transfer) with a condition",
                      {"condition": "amqp:link:detach-forced",
                       "description": "the service detached the link (fault injected)"}),
    "detach-receiver": ("AMQP: detach a receiver link (at its next delivery) with a condition",
                        {"condition": "amqp:link:detach-forced",
                         "description": "the service detached the link (fault injected)"}),
    "link-stolen": ("AMQP: detach a receiver with amqp:link:stolen, as a higher owner level does",
                    {"description": "a receiver with a higher epoch took the partition "
                                    "(fault injected)"}),
    "connection-forced": ("AMQP: close the connection with amqp:connection:forced (at the "
                          "next transfer or delivery)",
                          {"description": "the service closed the connection (fault injected)"}),
    "cbs-fail": ("AMQP: answer a $cbs put-token with an error status",
                 {"status": 503, "description": "the token service is unavailable (fault injected)"}),
    "management-fail": ("AMQP: answer a $management read with an error status",
                        {"status": 503, "description": "the management node is unavailable "
                                                       "(fault injected)"}),
    "http-throttle": ("HTTP: answer a REST send or management request with 429 or 503 and "
                      "Retry-After", {"status": 429, "retry_after_s": 4}),
    "token-refused": ("AMQP: answer a $cbs put-token renewal (a token for an audience the "
                      "connection holds one for already) with 401; a first put-token is served",
                      {"description": "the token was refused at renewal (fault injected)"}),
    "partition-unavailable": ("AMQP: refuse the attach of a receiver or partition sender with "
                              "condition; Kafka: the partition has no leader "
                              "(NOT_LEADER_OR_FOLLOWER) while the fault fires",
                              {"condition": "com.microsoft:timeout",
                               "description": "the partition is unavailable: please retry "
                                              "(fault injected)"}),
    "delay-disposition": ("AMQP: hold the settlement of a send ms (long enough, the SDK's send "
                          "times out: a withheld disposition)", {"ms": 5000}),
    "withhold-flow": ("AMQP: a receiver link gets no events (no credit honoured), a sender "
                      "link no credit, for ms", {"ms": 5000}),
    "append-fail": ("Storage: fail an append (Kafka Produce, AMQP, REST and console sends) as "
                    "a full disk or an I/O error does", {"error": "disk-full"}),
    "append-slow": ("Storage: hold an append ms: the events are stored, the answer waits "
                    "(other clients are not held)", {"ms": 2000}),
    "http-slow": ("HTTP: answer a REST send or management request ms late", {"ms": 2000}),
    "kafka-error": ("Kafka: answer requests of an API (or partitions of them) with an error code",
                    {"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER"}),
    "kafka-delay": ("Kafka: hold responses of an API", {"api": "Fetch", "ms": 500}),
    "kafka-drop-connections": ("Kafka: close client connections now (of one client id, if "
                               "given)", {}),
}
KAFKA_KINDS = ("kafka-error", "kafka-delay", "kafka-drop-connections")
# append-fail's errors: what the append fails with, in the OSError's own words
STORAGE_ERRORS = {"disk-full": "[Errno 28] No space left on device (fault injected)",
                  "io-error": "[Errno 5] Input/output error (fault injected)"}
STORAGE_KINDS = ("append-fail", "append-slow")

_CONDITION = re.compile(r"^[a-z][a-z0-9.:-]{0,127}$")
_NAME = re.compile(r"^[^\x00-\x1f/\\]{1,256}$")


class FaultError(ValueError):
    """A fault that cannot be set: the message says what to change."""


@dataclass
class Fault:
    id: int
    kind: str
    params: dict[str, Any]
    scope: dict[str, str]
    count: int
    probability: float
    seed: int
    after_ms: int
    for_ms: int | None
    added_ms: int
    fired: int = 0
    rng: random.Random = field(repr=False, default_factory=random.Random)

    def to_json(self) -> dict:
        return {"id": self.id, "kind": self.kind, "params": self.params, "scope": self.scope,
                "count": self.count, "probability": self.probability, "seed": self.seed,
                "after_ms": self.after_ms, "for_ms": self.for_ms, "added_ms": self.added_ms,
                "fired": self.fired}

    def matches(self, target: dict[str, Any]) -> bool:
        for key, wanted in self.scope.items():
            got = target.get(key)
            if got is None or str(got).lower() != wanted.lower():
                return False
        return True


def _int(spec: dict, key: str, default, low: int, high: int) -> int | None:
    value = spec.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise FaultError(f"{key} must be a whole number from {low} to {high}, not {value!r}")
    return value


class FaultPlan:
    """The faults set on one broker (see the module docstring). ``now_ms``: the
    broker's clock."""

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self.now_ms = now_ms
        self.faults: list[Fault] = []
        self.fired: deque[dict] = deque(maxlen=MAX_FIRED)
        # Firings ever, by (kind, namespace): /metrics counts them; clear() keeps them,
        # as a counter only goes up. Listeners get each firing (the report keeps them).
        self.totals: Counter[tuple[str, str]] = Counter()
        self.listeners: list[Callable[[dict], None]] = []
        self.active = False
        self._ids = itertools.count(1)
        # Kafka kinds are served by kafka_wire.faults.Faults: it sets this to a
        # callable(fault) that installs one there.
        self.kafka: Callable[[Fault], None] | None = None

    # -- setting --------------------------------------------------------------------
    def add(self, spec: dict) -> Fault:
        """Set a fault described as the control API's JSON (FaultError if malformed)."""
        if not isinstance(spec, dict):
            raise FaultError("a fault is a JSON object such as "
                             '{"kind": "server-busy", "scope": {"hub": "orders"}, "count": 2}')
        unknown = set(spec) - {"kind", "params", "scope", "count", "probability", "seed",
                               "after_ms", "for_ms"}
        if unknown:
            raise FaultError(f"unknown field(s) {sorted(unknown)!r}: use kind, params, scope, count, "
                             "probability, seed, after_ms, for_ms")
        kind = spec.get("kind")
        if not isinstance(kind, str) or kind not in KINDS:
            raise FaultError(f"kind must be one of {', '.join(KINDS)}; not {kind!r}"[:400])
        if len(self.faults) >= MAX_FAULTS:
            raise FaultError(f"{MAX_FAULTS} faults are set already: clear some first")
        params = self._params(kind, spec.get("params", {}))
        scope = self._scope(spec.get("scope", {}))
        count = _int(spec, "count", 1, 1, 1_000_000)
        probability = spec.get("probability", 1.0)
        if isinstance(probability, bool) or not isinstance(probability, (int, float)) \
                or not 0.0 < probability <= 1.0:  # (not float(): 10**400 overflows it)
            raise FaultError(f"probability must be a number above 0 and at most 1, not {probability!r}")
        seed = _int(spec, "seed", 0, 0, 2**63 - 1)
        after_ms = _int(spec, "after_ms", 0, 0, 7 * 86_400_000)
        for_ms = _int(spec, "for_ms", None, 1, 7 * 86_400_000)
        fault = Fault(next(self._ids), kind, params, scope, count, float(probability), seed,
                      after_ms, for_ms, self.now_ms(), rng=random.Random(seed))
        if kind in KAFKA_KINDS:
            if self.kafka is None:
                raise FaultError("this broker has no Kafka fault hooks")
            self.kafka(fault)
            if kind == "kafka-drop-connections":
                return fault  # done at once, recorded by the hook
        self.faults.append(fault)
        self.active = True
        return fault

    @staticmethod
    def _params(kind: str, given) -> dict:
        if not isinstance(given, dict):
            raise FaultError("params must be a JSON object")
        defaults = KINDS[kind][1]
        unknown = set(given) - set(defaults)
        if unknown:
            raise FaultError(f"{kind} takes no parameter(s) {sorted(unknown)!r}"[:300]
                             + (f": it takes {', '.join(defaults)}" if defaults else ""))
        params = {**defaults, **given}
        for key, value in params.items():
            default = defaults[key]
            if isinstance(default, int):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise FaultError(f"params.{key} must be a whole number, not {value!r}"[:300])
            elif not isinstance(value, str) or not 0 < len(value) <= 512:
                raise FaultError(f"params.{key} must be text of 1 to 512 characters")
        if "condition" in params and not _CONDITION.match(params["condition"]):
            raise FaultError("params.condition must be an AMQP condition symbol such as "
                             "amqp:link:detach-forced")
        status = params.get("status")
        if kind == "http-throttle" and status not in (429, 503):
            raise FaultError("params.status of http-throttle must be 429 or 503")
        if status is not None and not 400 <= status <= 599:
            raise FaultError("params.status must be an error status from 400 to 599")
        if "retry_after_s" in params and not 0 <= params["retry_after_s"] <= 3600:
            raise FaultError("params.retry_after_s must be from 0 to 3600")
        if kind == "append-fail" and params["error"] not in STORAGE_ERRORS:
            raise FaultError(f"params.error of {kind} must be one of {', '.join(STORAGE_ERRORS)}"
                             f", not {params['error'][:64]!r}")
        if "ms" in params and not 0 <= params["ms"] <= 600_000:
            raise FaultError("params.ms must be from 0 to 600000")
        return params

    @staticmethod
    def _scope(given) -> dict[str, str]:
        if not isinstance(given, dict):
            raise FaultError("scope must be a JSON object such as {\"hub\": \"orders\", \"partition\": \"0\"}")
        unknown = set(given) - set(SCOPES)
        if unknown:
            raise FaultError(f"unknown scope field(s) {sorted(unknown)!r}"[:300]
                             + f": use {', '.join(SCOPES)}")
        scope = {}
        for key, value in given.items():
            if value is None or value == "":
                continue
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise FaultError(f"scope.{key} must be text (or a partition number)")
            text = str(value)
            if not _NAME.match(text):
                raise FaultError(f"scope.{key} must be 1 to 256 characters without '/', '\\' "
                                 "or control characters")
            scope[key] = text
        return scope

    def remove(self, fault_id: int) -> bool:
        before = len(self.faults)
        self.faults = [f for f in self.faults if f.id != fault_id]
        self.active = bool(self.faults)
        return len(self.faults) != before

    def clear(self) -> None:
        """Forget every fault and every firing."""
        self.faults = []
        self.fired.clear()
        self.active = False

    # -- firing (hot paths call this only while ``active``) ---------------------------
    def fire(self, kinds: tuple[str, ...], target: dict[str, Any]) -> Fault | None:
        """The fault of one of ``kinds`` that fires for ``target`` (and records it), or None."""
        now = None
        for fault in self.faults:
            if fault.kind not in kinds or not fault.matches(target):
                continue
            now = self.now_ms() if now is None else now
            if not self.due(fault, now):
                if fault.for_ms is not None and now >= fault.added_ms + fault.after_ms + fault.for_ms:
                    self.remove(fault.id)  # its window is over: it cannot fire again
                continue
            self.record(fault, target, now)
            if fault.fired >= fault.count:
                self.remove(fault.id)
            return fault
        return None

    def due(self, fault: Fault, now: int | None = None) -> bool:
        """Does ``fault`` fire at a request that matches it now: inside its window and,
        with a probability, drawn from its seeded rng (one draw per matching request)."""
        now = self.now_ms() if now is None else now
        start = fault.added_ms + fault.after_ms
        if now < start or (fault.for_ms is not None and now >= start + fault.for_ms):
            return False
        return fault.probability >= 1.0 or fault.rng.random() < fault.probability

    def record(self, fault: Fault, target: dict[str, Any], now: int | None = None) -> None:
        fault.fired += 1
        target = {k: v[:256] if isinstance(v, str) else v for k, v in target.items() if v is not None}
        entry = {"at_ms": self.now_ms() if now is None else now, "fault": fault.id,
                 "kind": fault.kind, "target": target, "client": target.get("client")}
        self.fired.append(entry)
        # The namespace is one the hook found served (a name from a URL that names none is
        # None): the counters stay bounded by the namespaces, and by MAX_TOTALS besides.
        key = (fault.kind, str(target.get("namespace") or ""))
        if key not in self.totals and len(self.totals) >= MAX_TOTALS:
            key = (fault.kind, "")
        self.totals[key] += 1
        for listener in self.listeners:
            listener(entry)

    def to_json(self) -> dict:
        return {"faults": [f.to_json() for f in self.faults], "fired": list(self.fired),
                "kinds": {k: {"does": v[0], "params": v[1]} for k, v in KINDS.items()},
                "scopes": list(SCOPES)}


def storage_fault(plan: FaultPlan, target: dict[str, Any]) -> tuple[str | None, int]:
    """For an append to ``target`` (namespace, hub, partition, client, protocol): (why it
    fails, or None; how long its answer is held, ms). Every front end's append asks this
    through kafka_wire.eventhubs.publication.injected_storage_fault while the plan is active."""
    fault = plan.fire(STORAGE_KINDS, target)
    if fault is None:
        return None, 0
    if fault.kind == "append-fail":
        return STORAGE_ERRORS[fault.params["error"]], 0
    return None, fault.params["ms"]
