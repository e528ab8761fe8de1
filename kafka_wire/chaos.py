"""Chaos mode (``kafka-wire serve --chaos SEED``, ``[server] chaos = SEED``): a
documented mix of recoverable faults fired at a low rate on every front end, for
soak runs (docs/faults.md, "Chaos mode").

Each row of :data:`MIX` becomes one fault of the broker's
:class:`~kafka_wire.fault_plan.FaultPlan`, unscoped, with a seeded probability
per matching request: the same seed fires the same faults at the same requests
(each row draws from its own ``random.Random``, seeded from SEED and the row).
Dropped Kafka connections are not tied to a request: they come on a seeded
schedule on the broker's clock, at most :data:`MAX_DROPS` times, and stop once
the mix is cleared (``DELETE /$faults``, ``kafka-wire fault clear``).

The mix holds only faults the SDKs recover from: no ``link-stolen`` (the Python
SDK stops reading that partition for good), no ``quota-exceeded`` or
``cbs-fail`` (the application gets the error), no storage faults.
"""
from __future__ import annotations

import logging
import random

from kafka_wire.fault_plan import FaultError, FaultPlan

log = logging.getLogger(__name__)

__all__ = ["MIX", "DROP_EVERY_MS", "MAX_DROPS", "install"]

# (kind, probability per matching request, params): the one table of chaos rates.
MIX: tuple[tuple[str, float, dict], ...] = (
    ("server-busy", 0.01, {}),                    # AMQP send refused: the app or SDK sends again
    ("detach-sender", 0.005, {}),                 # the SDK reattaches and sends again
    ("detach-receiver", 0.01, {}),                # the SDK reattaches from its last event
    ("connection-forced", 0.003, {}),             # the SDK reconnects
    ("management-fail", 0.05, {}),                # $management read retried
    ("http-throttle", 0.02, {"status": 503, "retry_after_s": 1}),
    ("kafka-error", 0.01, {"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER"}),
    ("kafka-error", 0.01, {"api": "Fetch", "error": "NOT_LEADER_OR_FOLLOWER"}),
    ("kafka-delay", 0.01, {"api": "Produce", "ms": 200}),
    ("kafka-delay", 0.01, {"api": "Fetch", "ms": 200}),
)
# Between two drops of every Kafka connection: drawn from this range (ms).
DROP_EVERY_MS = (10_000, 30_000)
MAX_DROPS = 1_000
_COUNT = 1_000_000  # each row fires this often at most (FaultPlan's largest count)


def seeds(seed: int) -> list[int]:
    """One seed per row of MIX, then the drop schedule's: all from SEED."""
    rng = random.Random(seed)
    return [rng.getrandbits(62) for _ in range(len(MIX) + 1)]


def install(faults, seed: int) -> list[int]:
    """Set the mix in ``faults`` (a running broker's :class:`kafka_wire.faults.Faults`,
    called on its event loop) and start the drop schedule; the ids of the faults set."""
    plan: FaultPlan = faults.plan
    row_seeds = seeds(seed)
    ids = []
    for (kind, probability, params), row_seed in zip(MIX, row_seeds):
        fault = plan.add({"kind": kind, "params": params, "count": _COUNT,
                          "probability": probability, "seed": row_seed})
        ids.append(fault.id)
    clock = faults._services.clock
    schedule = random.Random(row_seeds[-1])
    drops = [0]

    def drop() -> None:
        if not any(f.id in ids for f in plan.faults):  # the mix was cleared: stop
            return
        try:
            plan.add({"kind": "kafka-drop-connections"})
        except FaultError as exc:  # (the plan is full): this drop is skipped, not the schedule
            log.warning("chaos mode: Kafka connections not dropped this time: %s", exc)
        drops[0] += 1
        if drops[0] < MAX_DROPS:
            clock.call_later(schedule.randint(*DROP_EVERY_MS), drop)

    clock.call_later(schedule.randint(*DROP_EVERY_MS), drop)
    log.info("chaos mode, seed %d: %s, and every Kafka connection dropped every %d-%d s",
             seed, ", ".join(f"{kind} {p:g}" for kind, p, _ in MIX),
             DROP_EVERY_MS[0] // 1000, DROP_EVERY_MS[1] // 1000)
    return ids
