"""What the console and the JSON API show: namespaces → hubs → partitions,
consumer groups with members and lag, throughput history, throttling and
Capture files. Built on demand from the broker's collaborators; read-only.

A sampler (every :data:`SAMPLE_S` seconds, wall time) keeps a short history of
each hub's incoming and outgoing counters, so the console's throughput chart
has data as soon as it opens and partition rates need no client-side state.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Any

from kafka_wire.eventhubs.groups_view import checkpoint_blobs, consumer_groups
from kafka_wire.console import geo
from kafka_wire.console.capture_files import CaptureFiles
from kafka_wire.console.lag_history import LagHistory
from kafka_wire.console.metrics import BrokerMetrics

log = logging.getLogger(__name__)

SAMPLE_S = 1.0
HISTORY = 300  # samples: five minutes


class ConsoleViews:
    def __init__(self, services, metrics: BrokerMetrics, capture: CaptureFiles,
                 connections=None, info: dict | None = None) -> None:
        self.services = services
        self.metrics = metrics
        self.capture = capture
        self.connections = connections or (lambda: {})
        self.info = info or {}
        # (namespace, hub) -> deque of (t_ms, in_events, in_bytes, out_events, out_bytes)
        self.history: dict[tuple[str, str], deque] = {}
        # (namespace, hub, partition) -> [in_ev/s, in_B/s, out_ev/s, out_B/s]
        self.rates: dict[tuple[str, str, int], list[float]] = {}
        self.lag = LagHistory()
        # async namespace -> its SchemaRegistry or None (the REST API's), for Avro bodies
        self.registry = None
        self._prev: tuple[int, dict] | None = None
        self._timer: asyncio.TimerHandle | None = None

    # -- sampling -------------------------------------------------------------------
    def start(self) -> None:
        self.sample()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def sample(self) -> None:
        now = time.time_ns() // 1_000_000
        current = {k: list(v) for k, v in self.metrics.partitions.items()}
        hubs: dict[tuple[str, str], list[int]] = {}
        for (ns, hub, _p), c in current.items():
            t = hubs.setdefault((ns, hub), [0, 0, 0, 0])
            for i in range(4):
                t[i] += c[i]
        for key, t in hubs.items():
            h = self.history.get(key)
            if h is None:
                h = self.history[key] = deque(maxlen=HISTORY)
            h.append((now, *t))
        if self._prev is not None:
            then, before = self._prev
            dt = max(now - then, 1) / 1000.0
            self.rates = {k: [(c[i] - before.get(k, (0, 0, 0, 0))[i]) / dt for i in range(4)]
                          for k, c in current.items()}
        self._prev = (now, current)
        if self.lag.due(now):
            self._sample_lag(now)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._timer = loop.call_later(SAMPLE_S, self.sample)

    def _sample_lag(self, now: int) -> None:
        seen = {}
        for name, rt in self.services.namespaces.items():
            for view in rt.topics.all():
                if view.internal:
                    continue
                for g in self._group_views(rt, view.name, view.partitions):
                    lags = [p.lag for p in g.partitions]
                    if any(lag is not None for lag in lags):
                        seen[(name, view.name, g.name)] = lags
        self.lag.record(now, seen)

    # -- views ------------------------------------------------------------------------
    def _runtime(self, namespace: str):
        return self.services.namespaces.get(namespace)

    def overview(self) -> dict[str, Any]:
        cluster = self.services.cluster
        now = time.time_ns() // 1_000_000
        return {
            **self.info,
            "cluster_id": cluster.cluster_id,
            "bootstrap_servers": f"{cluster.host}:{cluster.port}",
            "uptime_s": round((now - self.metrics.started_ms) / 1000.0, 1),
            "connections": self.connections(),
            "time_ms": now,
            "sample_interval_s": SAMPLE_S,
        }

    def namespaces(self) -> list[dict]:
        out = []
        for name, rt in self.services.namespaces.items():
            model = rt.model
            quota = rt.quota
            hubs = [self._hub_summary(name, rt, view) for view in rt.topics.all()
                    if not view.internal]
            out.append({
                "name": name,
                "default": name == self.services.default_namespace,
                "tier": getattr(getattr(model, "tier", None), "value", None),
                "mode": getattr(model, "mode", None),
                "throughput_units": getattr(quota, "units", None),
                "throttled_requests": getattr(quota, "throttled_requests", 0),
                "throttled_ms": getattr(quota, "throttled_ms", 0),
                "hubs": hubs,
                "geo": geo.replicas(rt),  # replicas, roles and lag (None: not geo-replicated)
                "geo_dr": geo.pairings(self.services, name),
            })
        return out

    def _hub_summary(self, namespace: str, rt, view) -> dict:
        size = events = 0
        for p in range(view.partitions):
            plog = rt.topics.log(view.name, p)
            if plog is not None:
                size += plog.size_bytes
                events += plog.log_end_offset - plog.log_start_offset
        rate = [0.0, 0.0, 0.0, 0.0]
        for p in range(view.partitions):
            r = self.rates.get((namespace, view.name, p))
            if r:
                for i in range(4):
                    rate[i] += r[i]
        throttled, throttled_ms = self.metrics.hub_throttling(namespace, view.name)
        return {"name": view.name, "partitions": view.partitions, "size_bytes": size,
                "events": events, "rates": _rates(rate), "throttled_requests": throttled,
                "throttled_ms": throttled_ms}

    def hub(self, namespace: str, hub: str) -> dict | None:
        rt = self._runtime(namespace)
        view = rt.topics.get(hub) if rt is not None else None
        if view is None:
            return None
        partitions = []
        for p in range(view.partitions):
            plog = rt.topics.log(hub, p)
            c = self.metrics.partition_counters(namespace, hub, p)
            partitions.append({
                "partition": p,
                "log_start_offset": plog.log_start_offset if plog else 0,
                "log_end_offset": plog.log_end_offset if plog else 0,
                "last_sequence_number": (plog.log_end_offset - 1) if plog else -1,
                "size_bytes": plog.size_bytes if plog else 0,
                "incoming_events": c[0], "incoming_bytes": c[1],
                "outgoing_events": c[2], "outgoing_bytes": c[3],
                "rates": _rates(self.rates.get((namespace, hub, p)) or [0, 0, 0, 0]),
            })
        return {
            **self._hub_summary(namespace, rt, view),
            "namespace": namespace,
            "configs": view.configs,
            "partition_list": partitions,
            "consumer_groups": self.groups(namespace, hub, view.partitions),
            "throughput": self.throughput(namespace, hub),
            "capture_files": [f for f in self.capture_files()
                              if f["hub"] == hub and f["namespace"] in (namespace, "")][:20],
        }

    def _group_views(self, rt, hub: str, partition_count: int | None):
        configured: list[str] = []
        if rt.model is not None:
            h = rt.model.hub(hub) if hasattr(rt.model, "hub") else None
            configured = list(getattr(h, "consumer_groups", []) or [])

        def end(topic: str, p: int) -> int:
            plog = rt.topics.log(topic, p)
            return plog.log_end_offset if plog is not None else 0

        return consumer_groups(rt.groups, hub, end, partition_count=partition_count,
                               configured=configured)

    def checkpoint_blobs(self, namespace: str, hub: str) -> list[dict]:
        """The hub's Kafka checkpoints and owners as Azure SDK checkpoint-store blobs."""
        rt = self._runtime(namespace)
        view = rt.topics.get(hub) if rt is not None else None
        if view is None:
            return []

        def position(topic: str, p: int, offset: int) -> int | None:
            plog = rt.topics.log(topic, p)
            found = plog.event_position(offset) if plog is not None else None
            return found[0] if found else None

        return checkpoint_blobs(rt.groups, f"{namespace}.servicebus.windows.net", hub,
                                self._group_views(rt, hub, view.partitions), position)

    def groups(self, namespace: str, hub: str, partition_count: int | None = None) -> list[dict]:
        rt = self._runtime(namespace)
        if rt is None:
            return []
        out = []
        for g in self._group_views(rt, hub, partition_count):
            lags = [p.lag for p in g.partitions if p.lag is not None]
            out.append({
                "name": g.name, "kafka_group": g.kafka_group, "state": g.state,
                "type": g.group_type, "total_lag": sum(lags) if lags else None,
                "members": [{"member_id": m.member_id, "instance_id": m.instance_id,
                             "client_id": m.client_id, "client_host": m.client_host,
                             "partitions": m.partitions} for m in g.members],
                "partitions": [{"partition": p.partition, "sequence_number": p.sequence_number,
                                "offset": p.offset, "last_sequence_number": p.last_sequence_number,
                                "lag": p.lag, "owner": p.owner} for p in g.partitions],
                "lag_history": self.lag.of(namespace, hub, g.name),
            })
        return out

    def throughput(self, namespace: str, hub: str) -> list[dict]:
        samples = list(self.history.get((namespace, hub), ()))
        out = []
        for (t0, *a), (t1, *b) in zip(samples, samples[1:]):
            dt = max(t1 - t0, 1) / 1000.0
            out.append({"time_ms": t1, **_rates([(b[i] - a[i]) / dt for i in range(4)])})
        return out

    def throttling(self) -> list[dict]:
        return [e.as_json() for e in reversed(self.metrics.throttle_events)]

    def faults_fired(self) -> list[dict]:
        """Injected faults that fired (docs/faults.md), newest first: when, which kind,
        at what (namespace, hub, partition, consumer group, link, protocol) and client."""
        faults = getattr(self.services, "faults", None)
        if faults is None:
            return []
        out = []
        for f in reversed(faults.plan.fired):
            target = f["target"]
            out.append({"at_ms": f["at_ms"], "fault": f["fault"], "kind": f["kind"],
                        "namespace": target.get("namespace"), "hub": target.get("hub"),
                        "partition": target.get("partition"),
                        "consumer_group": target.get("consumer_group"), "link": target.get("link"),
                        "protocol": target.get("protocol"), "client": f.get("client")})
        return out

    def capture_files(self) -> list[dict]:
        self.capture.refresh()
        return list(self.capture.recent)

    def snapshot(self, namespace: str | None = None, hub: str | None = None) -> dict:
        """Everything the console shows in one answer (one request per refresh)."""
        return {
            "broker": self.overview(),
            "namespaces": self.namespaces(),
            "hub": self.hub(namespace, hub) if namespace and hub else None,
            "throttling": self.throttling()[:50],
            "faults_fired": self.faults_fired()[:50],
            "capture_files": self.capture_files()[:50],
            "capture_directories": [str(d) for d in self.capture.directories],
        }


def _rates(r) -> dict:
    return {"incoming_events_per_s": round(r[0], 2), "incoming_bytes_per_s": round(r[1], 1),
            "outgoing_events_per_s": round(r[2], 2), "outgoing_bytes_per_s": round(r[3], 1)}
