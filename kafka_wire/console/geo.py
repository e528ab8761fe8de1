"""What the console and ``/metrics`` show of geo-replication (``runtime.geo``:
each replica's location, role, lag and whether it is paused) and of Geo-DR (the
aliases a namespace takes part in, its role and partner)."""
from __future__ import annotations

from kafka_wire.eventhubs import geo_dr


def replicas(runtime) -> dict | None:
    """A geo-replicated namespace's replicas (None for any other namespace)."""
    geo = getattr(runtime, "geo", None)
    if geo is None:
        return None
    return {"primary_location": geo.primary_location, "max_lag_seconds": geo.max_lag_seconds,
            "synchronous": geo.max_lag_seconds == 0, "segment": geo.segment,
            "replicas": [{"location": r.location, "role": r.role, "lag_seconds": round(r.lag_seconds, 3),
                          "lag_events": r.lag_events, "paused": r.paused, "state": r.state}
                         for r in geo.replicas]}


def pairings(services, namespace: str) -> list[dict]:
    """The Geo-DR aliases ``namespace`` takes part in, as it sees them."""
    out = []
    for p in geo_dr.of_namespace(services.eventhubs, namespace):
        role = p.role(namespace)
        partner = p.secondary if role == "Primary" else (p.primary if role == "Secondary" else None)
        out.append({"alias": p.alias, "role": role, "partner": partner, "points_at": p.primary,
                    "host": f"{p.alias.lower()}.servicebus.windows.net"})
    return out


def namespace_json(services, name: str) -> dict:
    """``GET /api/namespaces/{ns}/geo``."""
    runtime = services.namespaces[name]
    return {"namespace": name, "geo_replication": replicas(runtime), "geo_dr": pairings(services, name)}


def metrics(out, services) -> None:
    """``/metrics`` families (``out`` is prometheus._Out)."""
    rows = []
    for ns, rt in services.namespaces.items():
        found = replicas(rt)
        if found is not None:
            rows.extend((ns, r) for r in found["replicas"])
    out.family("geo_replication_lag_seconds", "gauge",
               "How old the oldest event a replica lacks is (0: it has everything; the primary is 0).")
    for ns, r in rows:
        out.sample("geo_replication_lag_seconds", float(r["lag_seconds"]), namespace=ns, location=r["location"])
    out.family("geo_replication_lag_events", "gauge", "Events a replica lacks, over all partitions.")
    for ns, r in rows:
        out.sample("geo_replication_lag_events", r["lag_events"], namespace=ns, location=r["location"])
    out.family("geo_replica_role", "gauge", "1 for each replica's role (Primary or Secondary).")
    for ns, r in rows:
        out.sample("geo_replica_role", 1, namespace=ns, location=r["location"], role=r["role"])
    out.family("geo_replica_paused", "gauge", "1 while a replica is paused (it takes no events).")
    for ns, r in rows:
        out.sample("geo_replica_paused", int(r["paused"]), namespace=ns, location=r["location"])
