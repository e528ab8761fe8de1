"""A geo-replicated namespace as the broker runs it: ``runtime.geo``.

:class:`GeoReplication` keeps one :class:`~.store.ReplicaStore` per region. The
primary's store is the one the namespace serves from (``runtime.topics.logs``);
each secondary is fed by a :class:`_Link` with the messages of :mod:`.stream`:
batches read back from the primary's log from the replica's end (as a Kafka
follower fetches), and the namespace's metadata (hubs, checkpoints, settings).

- Synchronous (``max_lag_seconds == 0``): every append is shipped before it is
  acknowledged (the append hook ships inline, on the event loop), and a send is
  refused while fewer than a quorum of replicas can take it (a paused one).
- Asynchronous (300..86400 s): appends are acknowledged at once and shipped
  right after; a paused replica falls behind, and once the quorum's lag passes
  ``max_lag_seconds`` sends to the primary are refused. Lag is measured on the
  broker's clock (a test's virtual clock moves it without sleeping).

The refusal is :attr:`Refusal.REPLICATION <kafka_wire.eventhubs.refusals.Refusal>`:
Kafka NOT_ENOUGH_REPLICAS (retriable), AMQP ``com.microsoft:server-busy``, HTTP 503.

Promotion (:meth:`GeoReplication.promote`) makes a secondary the primary: planned
waits until it has everything (sends are refused meanwhile), forced switches at
once and what had not replicated is gone. A new *segment* (replication epoch)
begins; per partition it begins at the new primary's log end offset. The old
primary becomes a secondary: its divergent tail is truncated and it re-syncs.
The namespace's connections are closed (clients reconnect to the new primary).
See docs/georeplication.md.
"""
from __future__ import annotations

import asyncio
import json
import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from kafka_wire.eventhubs.geo import (
    MAX_REPLICAS, GeoSettings, location_error, max_lag_error, normalize_location,
)
from kafka_wire.eventhubs.refusals import Denial, Refusal, Refused
from kafka_wire.log import batch as rb
from kafka_wire.log.errors import OffsetOutOfRange
from kafka_wire.log.manager import LogManager
from kafka_wire.log.recovery import write_atomic
from kafka_wire.replication.store import GEO_DIR, STATE_FILE, ReplicaStore
from kafka_wire.replication.stream import Batches, HubMeta, Metadata

if TYPE_CHECKING:
    from kafka_wire.context import NamespaceRuntime
    from kafka_wire.coordinator.clock import Clock
    from kafka_wire.log.config import LogConfig

__all__ = ["GeoReplication", "GeoError", "ReplicationFailed", "ReplicaView", "GeoChange", "Promotion",
           "PRIMARY", "SECONDARY"]

log = logging.getLogger(__name__)

PRIMARY, SECONDARY = "Primary", "Secondary"
SHIP_BYTES = 1024 * 1024      # one read of the primary's log per step of a partition's shipping
METADATA_EVERY_MS = 1000      # checkpoints and settings are shipped at least this often


class GeoError(Refused):
    """A geo-replication request refused (unknown replica, a promotion in progress,
    a bad value): ``reason`` is a :class:`Refusal` each surface maps to its words."""


class ReplicationFailed(GeoError):
    """A synchronous send the primary stored but a secondary could not take: it is not
    acknowledged. ``errno`` is what the Kafka front end answers (Kafka's own word for
    it, NOT_ENOUGH_REPLICAS_AFTER_APPEND, retriable); the door maps ``reason``
    (REPLICATION) to AMQP ``com.microsoft:server-busy`` and HTTP 503. The event stays on
    the primary and is shipped by the next pass, so a retry may store it twice, as in
    Kafka; an idempotent producer's retry is recognised and acknowledged once shipped."""
    errno = 20  # kafka.errors.NotEnoughReplicasAfterAppendError.errno


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One replica as surfaces show it. ``lag_seconds``: how old the oldest event
    the replica lacks is (0 when it has everything; always 0 for the primary);
    ``lag_events``: how many events it lacks over all partitions."""
    location: str
    role: str                 # "Primary" | "Secondary"
    lag_seconds: float
    lag_events: int
    paused: bool
    state: str                # "Ready" | "CatchingUp" | "Paused"

    def to_json(self) -> dict:
        return {"location": self.location, "role": self.role, "lag_seconds": round(self.lag_seconds, 3),
                "lag_events": self.lag_events, "paused": self.paused, "state": self.state}


@dataclass(frozen=True, slots=True)
class GeoChange:
    """What a change listener hears: ``kind`` one of promoted, paused, resumed,
    added, removed, max-lag; ``location`` the replica concerned (None for max-lag)."""
    kind: str
    location: str | None
    segment: int
    detail: dict = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Promotion:
    """A finished promotion: ``lost`` maps (hub, partition) to the offsets
    [first, end) the old primary had and the new one does not (forced only)."""
    location: str
    previous: str
    forced: bool
    segment: int
    lost: dict[tuple[str, int], tuple[int, int]]
    waited_ms: int            # from the request until the new primary serves (wall clock)

    @property
    def lost_events(self) -> int:
        return sum(end - first for first, end in self.lost.values())

    def to_json(self) -> dict:
        return {"location": self.location, "previous": self.previous, "forced": self.forced,
                "segment": self.segment, "lost_events": self.lost_events, "waited_ms": self.waited_ms,
                "lost": [{"hub": h, "partition": p, "from": a, "to": b} for (h, p), (a, b) in self.lost.items()]}


class _Link:
    """The primary's side of one secondary: paused or not, and since when it lacks events."""
    __slots__ = ("store", "paused", "behind_since_ms", "shipped_meta", "agreed")

    def __init__(self, store: ReplicaStore, paused: bool = False) -> None:
        self.store = store
        self.paused = paused
        self.behind_since_ms: int | None = None  # append time of the oldest event not shipped
        self.shipped_meta: Metadata | None = None
        # (hub, partition) -> the secondary's log end offset when it was last found (or
        # made, by shipping) a copy of the primary's log up to there. While its end is
        # still that and the primary's is not below it, no batch is compared again (the
        # synchronous append path ships without reading the secondary's tail).
        self.agreed: dict[tuple[str, int], int] = {}


class GeoReplication:
    """``runtime.geo`` of a geo-replicated namespace (None for any other)."""

    def __init__(self, runtime: NamespaceRuntime, settings: GeoSettings, data_dir: Path, clock: Clock,
                 default_log: LogConfig) -> None:
        self.runtime = runtime
        self.namespace = runtime.name
        self.clock = clock
        self._default_log = default_log
        self._root = Path(data_dir) / GEO_DIR / runtime.name
        self._root.mkdir(parents=True, exist_ok=True)
        self._data_dir = Path(data_dir)
        self._listeners: list[Callable[[GeoChange], None]] = []
        self._promoting: str | None = None
        # What the next pass ships: partitions appended to since the last one, and
        # whether hubs changed (checkpoints and settings go with the timer).
        self._dirty: set[tuple[str, int]] = set()
        self._hubs_dirty = False
        self._offsets_dirty = False
        self._pass_pending = False
        self._timer = None
        self._closed = False
        # Set by the broker: closes the namespace's Kafka and AMQP connections.
        self.close_connections: Callable[[], None] = lambda: None
        state = self._load_state()
        if state is None:  # first start: the configured replicas
            self.home = settings.primary           # whose logs are DATA_DIR/<namespace>
            self.primary_location = settings.primary
            self.max_lag_seconds = settings.max_lag_seconds
            self.segment = 0
            self._starts: dict[tuple[str, int], list[tuple[int, int]]] = {}
            locations, paused = list(settings.locations), set()
        else:
            self.home = state["home"]
            self.primary_location = state["primary"]
            self.max_lag_seconds = int(state["max_lag_seconds"])
            self.segment = int(state["segment"])
            self._starts = {(h, int(p)): [(int(s), int(o)) for s, o in rows]
                            for h, parts in state["starts"].items() for p, rows in parts.items()}
            locations, paused = list(state["locations"]), set(state.get("paused", []))
        home_logs = runtime.topics.logs
        self._stores: dict[str, ReplicaStore] = {}
        for loc in locations:
            logs = home_logs if loc == self.home else LogManager(self._root / loc, default_log)
            self._stores[loc] = ReplicaStore(loc, logs, self._root / f"{loc}.json")
        self._links = {loc: _Link(self._stores[loc], loc in paused)
                       for loc in locations if loc != self.primary_location}
        if self.primary_location != self.home:  # promoted before a restart: serve from it
            self._serve_from(self._stores[self.primary_location].logs)
            if self.home is None:  # the first primary was removed: its (empty) logs are not used
                home_logs.close()
        runtime.topics.replication = self
        runtime.topics.on_delete.append(self._hub_deleted)
        # Rows of hubs (or partitions) the primary no longer holds: a deletion whose state
        # file write was cut short, or a state file written before deletions pruned it.
        held = {name: info.partitions for name, info in self._primary_logs().topics().items()}
        self._starts = {key: rows for key, rows in self._starts.items() if key[1] < held.get(key[0], 0)}
        # Each promotion moved these partitions' leader epoch up one (_switch): the state file
        # keeps that history across a restart, as Kafka's leader-epoch-checkpoint does.
        for (hub, partition), rows in self._starts.items():
            runtime.topics.restore_leader_epochs(hub, partition, [start for _seg, start in rows])
        self._save_state()

    # -- what surfaces read ------------------------------------------------------------
    @property
    def synchronous(self) -> bool:
        return self.max_lag_seconds == 0

    @property
    def locations(self) -> list[str]:
        """Every region, the primary first."""
        return [self.primary_location, *self._links]

    @property
    def replicas(self) -> list[ReplicaView]:
        """Every replica, the primary first, with role, lag and state."""
        out = [ReplicaView(self.primary_location, PRIMARY, 0.0, 0, False, "Ready")]
        now = self.clock.now_ms()
        for loc, link in self._links.items():
            events = self._lag_events(link)
            state = "Paused" if link.paused else ("CatchingUp" if events else "Ready")
            out.append(ReplicaView(loc, SECONDARY, self._lag_s(link, now), events, link.paused, state))
        return out

    def replica(self, location: str) -> ReplicaView:
        """One replica's view; GeoError NOT_FOUND for an unknown location."""
        loc = self._known(location)
        return next(r for r in self.replicas if r.location == loc)

    def segment_starts(self, hub: str, partition: int) -> list[tuple[int, int]]:
        """[(segment, the sequence number it began at)] for one partition, oldest first:
        segment 0 begins at 0; each promotion adds the new primary's log end offset."""
        return [(0, 0), *self._starts.get((hub, partition), ())]

    def segment_of(self, hub: str, partition: int, sequence_number: int) -> int:
        """The segment in which ``sequence_number`` was (or will be) written."""
        found = 0
        for seg, start in self.segment_starts(hub, partition):
            if sequence_number >= start:
                found = seg
        return found

    def position_valid(self, hub: str, partition: int, segment: int, sequence_number: int) -> bool:
        """Whether a position taken in ``segment`` (a checkpoint or an offset string)
        still names the same event now: true in the current segment, and in an older
        one only below the start of the segment after it (what every later primary
        received); a newer segment than the current one is unknown: false."""
        if segment == self.segment:
            return True
        if segment > self.segment or segment < 0:
            return False
        starts = self.segment_starts(hub, partition)
        later = [start for seg, start in starts if seg > segment]
        return not later or sequence_number <= min(later)

    def add_listener(self, listener: Callable[[GeoChange], None]) -> Callable[[], None]:
        """Call ``listener(change)`` after each change (on the event loop); returns
        a function that removes it. A listener's exception is logged, not raised."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def to_json(self) -> dict:
        return {"namespace": self.namespace, "primary": self.primary_location,
                "max_lag_seconds": self.max_lag_seconds, "synchronous": self.synchronous,
                "segment": self.segment, "promoting": self._promoting,
                "replicas": [r.to_json() for r in self.replicas]}

    # -- the door asks before every send -------------------------------------------------
    def admission(self) -> Denial | None:
        """None when the primary may take a send now; else why not (Refusal.REPLICATION)."""
        if self._promoting is not None:
            return Denial(Refusal.REPLICATION, f"namespace {self.namespace!r} is failing over to "
                                               f"{self._promoting}: retry in a moment")
        if not self._links:
            return None
        needed = self._quorum()
        if self.synchronous:
            ready = sum(1 for link in self._links.values() if not link.paused)
            if ready < needed:
                return Denial(Refusal.REPLICATION, (
                    f"namespace {self.namespace!r} replicates synchronously and {needed} secondary "
                    f"replica(s) must take each send, but only {ready} can (paused: "
                    f"{', '.join(l for l, k in self._links.items() if k.paused)}): retry once they resume"))
            return None
        lag = self.quorum_lag_seconds()
        if lag > self.max_lag_seconds:
            return Denial(Refusal.REPLICATION, (
                f"namespace {self.namespace!r}: replication lag {lag:.0f} s exceeds "
                f"maxReplicationLagDurationInSeconds {self.max_lag_seconds}: sends to the primary "
                "fail until the secondaries catch up"))
        return None

    def quorum_lag_seconds(self) -> float:
        """The lag of the quorum: the smallest lag that ``quorum`` secondaries are within."""
        if not self._links:
            return 0.0
        now = self.clock.now_ms()
        lags = sorted(self._lag_s(link, now) for link in self._links.values())
        return lags[self._quorum() - 1]

    def _quorum(self) -> int:
        """Secondaries that, with the primary, are a majority of the replicas."""
        return (len(self._links) + 1) // 2

    # -- the topic manager's hooks (on the event loop) -------------------------------------
    def appended(self, topic: str, partition: int, info) -> None:
        """After an append to the primary (data or a transaction marker)."""
        behind = False
        failed: list[str] = []
        for link in self._links.values():
            if not link.paused and self.synchronous:
                try:
                    self._ship_partition(link, topic, partition, appended_at=info.base_offset)
                    continue
                except Exception:  # the primary has it: the next pass retries the secondary
                    log.exception("namespace %s: synchronous replication to %s failed",
                                  self.namespace, link.store.location)
                    failed.append(link.store.location)
            behind = True
            if link.behind_since_ms is None:
                link.behind_since_ms = info.append_time_ms
        if behind:
            self._dirty.add((topic, partition))
            self._schedule_pass()
        # Shipped before it is acknowledged, or not acknowledged. A transaction marker is
        # the coordinator's write, not a send: it is not refused (the next pass ships it).
        if failed and not any(h.is_control for h in info.headers):
            raise ReplicationFailed(Refusal.REPLICATION, (
                f"namespace {self.namespace!r} replicates synchronously and the secondary replica(s) "
                f"{', '.join(failed)} could not take this send: the primary stored it at offset "
                f"{info.base_offset} of {topic}-{partition}, but it is not acknowledged; retry "
                "(an idempotent producer's retry is not stored twice)"))

    def changed(self) -> None:
        """After hubs changed on the primary (created, deleted, grown, reconfigured)."""
        if self.synchronous:
            for link in self._links.values():
                if not link.paused:
                    self._ship_metadata(link, hubs_only=True)
        else:
            self._hubs_dirty = True
            self._schedule_pass()

    def _hub_deleted(self, name: str) -> None:
        """A hub deleted on the primary: its segment starts (its partitions' leader epochs
        after a restart) go, so a hub made again with its name starts at segment and epoch 0,
        as a hub made after a promotion does."""
        gone = [key for key in self._starts if key[0] == name]
        if gone:
            for key in gone:
                del self._starts[key]
            self._save_state()

    def offsets_changed(self) -> None:
        """After a consumer group's committed offsets changed on the primary: shipped
        before the commit is answered in synchronous mode, on the next pass otherwise."""
        if self.synchronous:
            meta = None
            for link in self._links.values():
                if not link.paused:
                    meta = meta or self._metadata()
                    link.store.apply_rest(meta)
                    link.shipped_meta = meta
        else:
            self._offsets_dirty = True
            self._schedule_pass()

    # -- operations -------------------------------------------------------------------
    def pause(self, location: str) -> None:
        """Stall a secondary (as an unreachable region): it takes nothing until resumed."""
        link = self._link(location)
        if not link.paused:
            link.paused = True
            self._save_state()
            log.warning("namespace %s: replica %s paused", self.namespace, link.store.location)
            self._notify("paused", link.store.location)

    def resume(self, location: str) -> None:
        """Let a paused secondary catch up (at once, on the event loop)."""
        link = self._link(location)
        if link.paused:
            link.paused = False
            self._ship_all(link)
            self._save_state()
            log.info("namespace %s: replica %s resumed", self.namespace, link.store.location)
            self._notify("resumed", link.store.location)

    def set_max_lag(self, seconds: int) -> None:
        """maxReplicationLagDurationInSeconds: 0 (synchronous) or 300..86400."""
        problem = max_lag_error(seconds)
        if problem:
            raise GeoError(Refusal.INVALID, problem)
        self.max_lag_seconds = seconds
        if seconds == 0:  # synchronous from now on: nothing may stay behind
            for link in self._links.values():
                if not link.paused:
                    self._ship_all(link)
        self._save_state()
        self._notify("max-lag", None, max_lag_seconds=seconds)

    def add_replica(self, location: str) -> ReplicaView:
        """A new secondary in ``location``, copied from the primary at once."""
        loc = normalize_location(location)
        problem = location_error(loc)
        if problem:
            raise GeoError(Refusal.INVALID, problem)
        if loc in self._stores:
            raise GeoError(Refusal.INVALID, f"namespace {self.namespace!r} already has a replica in {loc}")
        if len(self._stores) >= MAX_REPLICAS:
            raise GeoError(Refusal.LIMIT, f"namespace {self.namespace!r} has {len(self._stores)} replicas: "
                                          f"at most {MAX_REPLICAS}")
        directory = self._root / loc
        if directory.exists():  # left by an earlier replica there: start clean
            shutil.rmtree(directory)
        (self._root / f"{loc}.json").unlink(missing_ok=True)
        store = ReplicaStore(loc, LogManager(directory, self._default_log), self._root / f"{loc}.json")
        self._stores[loc] = store
        link = self._links[loc] = _Link(store)
        self._ship_all(link)
        self._save_state()
        log.info("namespace %s: replica %s added", self.namespace, loc)
        self._notify("added", loc)
        return self.replica(loc)

    def remove_replica(self, location: str) -> None:
        """Drop a secondary and its data (the primary cannot be removed: promote another first)."""
        loc = self._known(location)
        if loc == self.primary_location:
            raise GeoError(Refusal.INVALID, f"{loc} is the primary replica of {self.namespace!r}: "
                                            "promote another replica before removing it")
        del self._links[loc]
        store = self._stores.pop(loc)
        if loc == self.home:  # its logs are DATA_DIR/<namespace>: emptied, the place stays
            for name in list(store.logs.topics()):
                store.logs.delete_topic(name)
            self.home = None
        store.close()
        if store.logs.root != self._data_dir / self.namespace:
            shutil.rmtree(self._root / loc, ignore_errors=True)
        (self._root / f"{loc}.json").unlink(missing_ok=True)
        self._save_state()
        log.info("namespace %s: replica %s removed", self.namespace, loc)
        self._notify("removed", loc)

    async def promote(self, location: str, *, forced: bool = False) -> Promotion:
        """Make the secondary in ``location`` the primary. Planned (``forced`` False)
        ships everything to it first, sends being refused meanwhile; forced switches
        at once and the old primary's unreplicated events are lost. Then the
        namespace serves from the new primary, its connections are closed, and the
        old primary becomes a secondary (its divergent tail truncated)."""
        started = time.monotonic()
        loc = self._known(location)
        if loc == self.primary_location:
            raise GeoError(Refusal.INVALID, f"{loc} is already the primary replica of {self.namespace!r}")
        if self._promoting is not None:
            raise GeoError(Refusal.LIMIT, f"namespace {self.namespace!r} is already failing over to "
                                          f"{self._promoting}")
        link = self._links[loc]
        if not forced and link.paused:
            raise GeoError(Refusal.INVALID, (
                f"replica {loc} is paused: a planned promotion waits until it has caught up, which "
                "it cannot; resume it, or force the promotion (what it lacks is lost)"))
        self._promoting = loc
        try:
            await asyncio.sleep(0)  # sends admitted before the fence finish their appends
            lost: dict[tuple[str, int], tuple[int, int]] = {}
            if not forced:
                self._ship_all(link)
            else:
                logs = self._primary_logs()
                for key, mine in self._lacking(link, load=True).items():
                    lost[key] = (mine, logs.get_log(*key).log_end_offset)
            previous = self.primary_location
            self._switch(loc)
        finally:
            self._promoting = None
        result = Promotion(loc, previous, forced, self.segment, lost,
                           int((time.monotonic() - started) * 1000))
        log.warning("namespace %s: %s promotion of %s (was %s), segment %d, %d events lost",
                    self.namespace, "forced" if forced else "planned", loc, previous, self.segment,
                    result.lost_events)
        self._notify("promoted", loc, previous=previous, forced=forced, lost_events=result.lost_events)
        return result

    def close(self) -> None:
        """Stop shipping; close every region's logs but the one the namespace serves
        from (the broker closes that one)."""
        self._closed = True
        if self._hub_deleted in self.runtime.topics.on_delete:
            self.runtime.topics.on_delete.remove(self._hub_deleted)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        serving = self.runtime.topics.logs
        for store in self._stores.values():
            if store.logs is not serving:
                store.close()

    def start(self) -> None:
        """Ship what the secondaries lack (after a restart) and start the metadata timer;
        from now on committed offsets are shipped as they change."""
        groups = getattr(self.runtime, "groups", None)
        if groups is not None:
            groups.offsets.on_change = self.offsets_changed
        for link in self._links.values():
            if not link.paused:
                self._ship_all(link)
            else:  # its lag is the age of what it lacks, as before the restart
                link.behind_since_ms = self._oldest_lacking_ms(link, load=True)
        self._arm_timer()

    def delete_data(self) -> None:
        """The namespace is deleted: its replicas' directories go too."""
        self.close()
        shutil.rmtree(self._root, ignore_errors=True)

    # -- shipping -------------------------------------------------------------------
    def _primary_logs(self) -> LogManager:
        return self._stores[self.primary_location].logs

    def _metadata(self, *, hubs_only: bool = False) -> Metadata:
        logs = self._primary_logs()
        hubs = {name: HubMeta(info.partitions, dict(info.configs), info.topic_id)
                for name, info in logs.topics().items()}
        offsets: dict[str, dict[tuple[str, int], tuple[int, str]]] = {}
        if hubs_only:
            return Metadata(hubs, offsets)
        groups = getattr(self.runtime, "groups", None)
        if groups is not None:
            for group_id, offs in groups.offsets.offsets.items():
                if offs:
                    offsets[group_id] = {key: (om.offset, om.metadata) for key, om in offs.items()}
        return Metadata(hubs, offsets, self._settings())

    def _settings(self) -> dict | None:
        ns = self.runtime.model
        if ns is None:
            return None
        from kafka_wire.eventhubs.managed import hub_json
        return {"tier": ns.tier.value, "mode": ns.mode, "units": ns.units,
                "hubs": {name: hub_json(h) for name, h in sorted(ns.hubs.items())}}

    def _ship_metadata(self, link: _Link, *, hubs_only: bool = False) -> None:
        meta = self._metadata(hubs_only=hubs_only)
        link.store.apply_hubs(meta)
        if not hubs_only:
            link.store.apply_rest(meta)
            link.shipped_meta = meta

    def _ship_all(self, link: _Link) -> None:
        """Everything the secondary lacks: hubs, then events, then checkpoints and settings."""
        meta = self._metadata()
        link.store.apply_hubs(meta)
        for topic, partition in list(self._primary_logs().logs()):
            self._ship_partition(link, topic, partition)
        link.store.apply_rest(meta)
        link.shipped_meta = meta
        link.behind_since_ms = None

    def _ship_partition(self, link: _Link, topic: str, partition: int, *,
                        appended_at: int | None = None) -> None:
        """Ship what the secondary lacks of one partition, after cutting what it holds
        that the primary does not. ``appended_at``: the first offset of the append that
        asks (synchronous): the usual case, the secondary ending right there and agreeing
        up to it, is taken without comparing batches; anything else (the primary cut its
        own tail meanwhile, a retry answered as a duplicate) is compared."""
        src = self._primary_logs().get_log(topic, partition)
        if src is None:
            return
        store = link.store
        dst = store.logs.get_log(topic, partition)
        if dst is None:  # a hub (or partition) the secondary has not heard of yet
            store.apply_hubs(self._metadata(hubs_only=True))
            dst = store.logs.get_log(topic, partition)
            if dst is None:
                return
        key = (topic, partition)
        end = src.log_end_offset
        at = dst.log_end_offset
        if link.agreed.get(key) == at and at <= end and appended_at in (None, at):
            agreed = at
        else:
            agreed = link.agreed[key] = _agreed_end(src, dst)
        if agreed < at:
            # The secondary holds events the primary has not (the primary lost an unsynced
            # tail in a crash, or promotions crossed): as a Kafka follower truncates to its
            # leader's epoch end offset, it drops them and takes the primary's from there.
            log.warning("namespace %s: replica %s had offsets %d..%d of %s-%d that the primary "
                        "does not (ahead of it, or different events there): dropped, it follows the "
                        "primary from offset %d", self.namespace, store.location, agreed, at - 1,
                        topic, partition, agreed)
            store.truncate(topic, partition, agreed)
            at = link.agreed[key] = dst.log_end_offset
        while at < end:
            if at < src.log_start_offset:  # retention removed what it lacks: start where the primary does
                dst.truncate_fully_and_start_at(src.log_start_offset)
                at = src.log_start_offset
            stored = src.stored_batches(at, SHIP_BYTES)
            if not stored:
                break
            data = b"".join(bytes(view) for _pos, _ms, view in stored)
            at = store.apply_batches(Batches(topic, partition, at, data,
                                             tuple(ms for _pos, ms, _view in stored)))
            link.agreed[key] = at

    def _schedule_pass(self) -> None:
        if self._pass_pending or self._closed:
            return
        self._pass_pending = True
        try:
            asyncio.get_running_loop().call_soon(self._run_pass)
        except RuntimeError:  # no loop (a unit test calling in directly): ship now
            self._run_pass()

    def _run_pass(self) -> None:
        """Ship what changed since the last pass (an unpaused secondary lacks nothing
        else: resuming and promoting ship everything); a failed link is caught up by
        the timer's next tick."""
        self._pass_pending = False
        if self._closed:
            return
        dirty, self._dirty = self._dirty, set()
        full = self._offsets_dirty
        meta = (self._metadata(hubs_only=not full) if self._hubs_dirty or full else None)
        self._hubs_dirty = self._offsets_dirty = False
        for link in self._links.values():
            if link.paused:
                continue
            try:
                if meta is not None:
                    link.store.apply_hubs(meta)
                for topic, partition in dirty:
                    self._ship_partition(link, topic, partition)
                if full:  # checkpoints after the events they name
                    link.store.apply_rest(meta)
                    link.shipped_meta = meta
                link.behind_since_ms = None
            except Exception:
                link.shipped_meta = None  # the next tick ships everything again
                log.exception("namespace %s: replication to %s failed; retried on the next tick",
                              self.namespace, link.store.location)

    def _arm_timer(self) -> None:
        if self._closed:
            return
        try:
            self._timer = self.clock.call_later(METADATA_EVERY_MS, self._tick)
        except RuntimeError:
            self._timer = None

    def _tick(self) -> None:
        """Checkpoints change without appends: ship them at least every second; and
        secondaries drop what retention removed from the primary."""
        self._timer = None
        if self._closed:
            return
        for link in self._links.values():
            if not link.paused:
                try:
                    meta = self._metadata()
                    if meta != link.shipped_meta or link.behind_since_ms is not None:
                        self._ship_all(link)
                    self._follow_retention(link)
                except Exception:
                    log.exception("namespace %s: replication to %s failed", self.namespace,
                                  link.store.location)
        self._arm_timer()

    def _follow_retention(self, link: _Link) -> None:
        primary = self._primary_logs()
        for key, dst in link.store.logs.logs().items():
            src = primary.get_log(*key)
            if src is None or not src.loaded or not dst.loaded:
                continue
            start = min(src.log_start_offset, dst.log_end_offset)
            if start > dst.log_start_offset:
                dst.delete_records_before(start)

    def secondary_logs(self) -> list[LogManager]:
        """The secondaries' log managers (the broker's flusher fsyncs them too)."""
        return [link.store.logs for link in self._links.values()]

    # -- promotion --------------------------------------------------------------------
    def _switch(self, loc: str) -> None:
        old = self.primary_location
        new_store = self._stores[loc]
        self.segment += 1
        ends = new_store.ends()
        for key, end in ends.items():
            self._starts.setdefault(key, []).append((self.segment, end))
        # The old primary becomes a secondary: what it has past the new segment's start
        # never reached the new primary and is dropped (it re-syncs from there). The new
        # primary takes the idempotence state of producers acknowledged for dropped
        # batches, so they go on in sequence instead of meeting a gap (a fatal error in
        # librdkafka); what they had sent there stays lost.
        # (Where a log is not a copy of the new primary's, it is cut where they part.)
        old_store = self._stores[old]
        for (topic, partition), plog in old_store.logs.logs().items():
            new_log = new_store.logs.get_log(topic, partition)
            if new_log is None:
                continue
            keep = _agreed_end(new_log, plog)
            if plog.log_end_offset <= keep:
                continue
            new_log.adopt_producers(plog)
            old_store.truncate(topic, partition, keep)
        # Every other secondary follows the new primary too: what it received from the
        # old one past the new segment's start is dropped (and shipped again from the new).
        for other, link in self._links.items():
            if other == loc:
                continue
            for (topic, partition), dst in link.store.logs.logs().items():
                new_log = new_store.logs.get_log(topic, partition)
                if new_log is not None:
                    link.store.truncate(topic, partition, _agreed_end(new_log, dst))
        del self._links[loc]
        self._links[old] = _Link(old_store)
        self.primary_location = loc
        self._serve_from(new_store.logs)
        for topic, partition in ends:
            self.runtime.topics.bump_leader_epoch(topic, partition)
        self._restore_checkpoints(new_store)
        self._save_state()
        for link in self._links.values():  # the old primary first re-syncs, then the others
            if not link.paused:
                self._ship_all(link)
            else:
                link.behind_since_ms = self._oldest_lacking_ms(link)
        self.close_connections()

    def _serve_from(self, logs: LogManager) -> None:
        """The namespace's topics read and write ``logs`` from now on."""
        topics = self.runtime.topics
        topics.switch_logs(logs)
        cleaner = self.runtime.cleaner
        if cleaner is not None:
            cleaner.manager = logs

    def _restore_checkpoints(self, store: ReplicaStore) -> None:
        """The namespace's committed offsets become those the new primary received."""
        groups = getattr(self.runtime, "groups", None)
        if groups is None:
            return
        manager = groups.offsets
        for group_id in list(manager.offsets):
            kept = store.offsets.get(group_id, {})
            gone = [key for key in manager.offsets[group_id] if key not in kept]
            if gone:
                manager.delete(group_id, gone)
        for group_id, offs in store.offsets.items():
            now = manager.offsets.get(group_id, {})
            changed = [(t, p, o, -1, m) for (t, p), (o, m) in offs.items()
                       if (t, p) not in now or now[(t, p)].offset != o]
            if changed:
                manager.commit(group_id, changed)

    # -- helpers ------------------------------------------------------------------------
    def _known(self, location) -> str:
        loc = normalize_location(location)
        problem = location_error(loc)
        if problem:
            raise GeoError(Refusal.INVALID, problem)
        if loc not in self._stores:
            raise GeoError(Refusal.NOT_FOUND, f"namespace {self.namespace!r} has no replica in {loc}: "
                                              f"its replicas are {', '.join(self.locations)}")
        return loc

    def _link(self, location) -> _Link:
        loc = self._known(location)
        if loc == self.primary_location:
            raise GeoError(Refusal.INVALID, f"{loc} is the primary replica of {self.namespace!r}: only "
                                            "secondaries can be paused or resumed")
        return self._links[loc]

    def _lag_s(self, link: _Link, now_ms: int) -> float:
        since = link.behind_since_ms
        return 0.0 if since is None else max(0.0, (now_ms - since) / 1000.0)

    def _lacking(self, link: _Link, *, load: bool = False) -> dict[tuple[str, int], int]:
        """(hub, partition) -> the first offset the secondary lacks, for each partition
        of the primary whose end it has not (what it holds past a divergence counts as
        lacking). Partitions not loaded yet were not appended to since the start: skipped
        unless ``load``."""
        out = {}
        for key, src in self._primary_logs().logs().items():
            if not (load or src.loaded):
                continue
            dst = link.store.logs.get_log(*key)
            if dst is None:
                first = 0
            elif link.agreed.get(key) == dst.log_end_offset <= src.log_end_offset:
                first = dst.log_end_offset
            else:
                first = _agreed_end(src, dst)
                if first == dst.log_end_offset:
                    link.agreed[key] = first
            if first < src.log_end_offset:
                out[key] = first
        return out

    def _lag_events(self, link: _Link) -> int:
        logs = self._primary_logs()
        return sum(logs.get_log(*key).log_end_offset - first for key, first in self._lacking(link).items())

    def _oldest_lacking_ms(self, link: _Link, *, load: bool = False) -> int | None:
        """The append time of the oldest event the secondary lacks (None: it lacks none),
        read from the primary's log: the lag survives a restart, a crash included."""
        logs = self._primary_logs()
        oldest = None
        for key, first in self._lacking(link, load=load).items():
            src = logs.get_log(*key)
            found = src.batch_position(max(first, src.log_start_offset))
            if found is not None and (oldest is None or found[1] < oldest):
                oldest = found[1]
        return oldest

    def _notify(self, kind: str, location: str | None, **detail) -> None:
        change = GeoChange(kind, location, self.segment, detail)
        for listener in list(self._listeners):
            try:
                listener(change)
            except Exception:
                log.exception("geo-replication listener failed on %s", kind)

    def _state_path(self) -> Path:
        return self._root / STATE_FILE

    def _load_state(self) -> dict | None:
        try:
            state = json.loads(self._state_path().read_text())
            for key in ("home", "primary", "max_lag_seconds", "segment", "starts", "locations"):
                state[key]
            return state
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as exc:
            log.error("namespace %s: unreadable geo-replication state %s (%s): starting from the "
                      "config file's replicas", self.namespace, self._state_path(), exc)
            return None

    def _save_state(self) -> None:
        starts: dict[str, dict[str, list]] = {}
        for (hub, partition), rows in self._starts.items():
            starts.setdefault(hub, {})[str(partition)] = [list(r) for r in rows]
        doc = {"home": self.home, "primary": self.primary_location, "max_lag_seconds": self.max_lag_seconds,
               "segment": self.segment, "starts": starts, "locations": self.locations,
               "paused": sorted(loc for loc, link in self._links.items() if link.paused)}
        write_atomic(self._state_path(), json.dumps(doc, sort_keys=True, indent=1).encode())


def _batch_key(plog, offset: int) -> tuple[int, int, int] | None:
    """(base offset, size, CRC-32C) of ``plog``'s batch holding ``offset`` (the next one
    past a compaction gap); None when there is none. Replicas store the primary's
    batches byte for byte, so equal keys mean the same batch."""
    try:
        view = plog.read(offset, 1)
    except OffsetOutOfRange:
        return None
    if not len(view):
        return None
    header = rb.parse_header(view, 0)
    return header.base_offset, header.size, header.crc


def _agreed_end(src, dst) -> int:
    """How far ``dst`` (a secondary's log) is a copy of ``src`` (the primary's): the
    offset from which it holds nothing or something else. Logs diverge only at their
    tails (a torn, unsynced tail; a forced promotion), so the batch just below the
    shorter end is compared first (the usual answer: they agree), then earlier ones
    at doubling distances, then a binary search between the last agreeing and the
    first differing offset. Compaction rewrites only sealed segments, far below."""
    end = min(src.log_end_offset, dst.log_end_offset)
    floor = max(src.log_start_offset, dst.log_start_offset)
    if end <= floor:
        return end

    def same(offset: int) -> bool:
        key = _batch_key(dst, offset)
        return key is not None and key == _batch_key(src, offset)

    if same(end - 1):
        return end
    bad, step = end - 1, 1
    while True:
        probe = max(bad - step, floor)
        if probe == bad:  # bad is the floor: nothing in common above it
            return floor
        if same(probe):
            good = probe
            break
        bad, step = probe, step * 2
    while bad - good > 1:
        mid = (good + bad) // 2
        if same(mid):
            good = mid
        else:
            bad = mid
    return bad
