"""Geo-replication of a namespace inside one broker (issue 29; docs/georeplication.md).

``runtime.geo`` is a :class:`~.geo.GeoReplication` for a Premium or Dedicated
namespace with replicas, None for any other. Replicas are regions, each with its
own log directory, fed by the plain messages of :mod:`.stream` so a replica can
later move to another process. Example (inside the broker's event loop)::

    geo = broker.services.namespaces["orders"].geo
    geo.pause("eastus")                       # the region stops taking events
    [r.to_json() for r in geo.replicas]       # roles, lag_seconds, lag_events, paused
    result = await geo.promote("eastus", forced=True)
    result.lost_events, geo.segment           # what the new primary lacked; 1
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from kafka_wire.replication.geo import (
    PRIMARY, SECONDARY, GeoChange, GeoError, GeoReplication, Promotion, ReplicaView, ReplicationFailed,
)

if TYPE_CHECKING:
    from kafka_wire.context import NamespaceRuntime
    from kafka_wire.coordinator.clock import Clock
    from kafka_wire.eventhubs.geo import GeoSettings
    from kafka_wire.log.config import LogConfig

__all__ = ["attach", "GeoReplication", "GeoError", "ReplicationFailed", "GeoChange", "Promotion",
           "ReplicaView", "PRIMARY", "SECONDARY"]


def attach(runtime: NamespaceRuntime, settings: GeoSettings, data_dir: Path, clock: Clock,
           default_log: LogConfig, close_connections: Callable[[], None] | None = None) -> GeoReplication:
    """Make ``runtime`` geo-replicated with ``settings`` (its replicas' state under
    DATA_DIR/_geo/<namespace>/ wins over ``settings`` after the first start).
    Call :meth:`GeoReplication.start` once the namespace's coordinators are open."""
    geo = GeoReplication(runtime, settings, data_dir, clock, default_log)
    if close_connections is not None:
        geo.close_connections = close_connections
    runtime.geo = geo
    return geo
