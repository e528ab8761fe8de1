"""``GET /metrics``: the broker in the Prometheus text exposition format (0.0.4).

Metric names (all prefixed ``kafkawire_``; labels in braces):

- ``partition_log_start_offset`` / ``partition_log_end_offset`` / ``partition_size_bytes``
  {namespace, hub, partition}: gauges from the log (sequence numbers; bytes on disk)
- ``partition_incoming_messages_total`` / ``partition_incoming_bytes_total`` /
  ``partition_outgoing_messages_total`` / ``partition_outgoing_bytes_total``
  {namespace, hub, partition}: events and record-batch bytes appended / served (Kafka
  Fetch and AMQP receivers) since start
- ``protocol_events_total`` / ``protocol_bytes_total`` {protocol (kafka, amqp, https), direction
  (in, out)}: the same, per protocol
- ``hub_partitions`` {namespace, hub}
- ``throttled_requests_total`` / ``throttle_seconds_total`` {namespace, api}: requests
  answered with a throttle time, and the sum of those times
- ``hub_throttled_requests_total`` / ``hub_throttle_seconds_total`` {namespace, hub}: the
  same, per hub whose traffic was in the throttled request
- ``throughput_units`` {namespace}: units in force (after auto-inflate), where metered
- ``consumer_group_committed_offset`` / ``consumer_group_lag`` {namespace, group, hub,
  partition}: checkpoint (next sequence number to read) and events behind the log end
- ``consumer_group_members`` {namespace, group, type, state}
- ``requests_total`` {api}; ``request_duration_seconds`` histogram {api}: from
  request decoded to response written (long polls included)
- ``connections`` {listener}: open client connections
- ``capture_files_total`` / ``capture_bytes_total`` / ``capture_events_total``
  {namespace, hub}: from the capture job's CaptureFileCreated events
- ``faults_fired_total`` {kind, namespace}: injected faults that fired (docs/faults.md;
  the namespace is empty for a Kafka fault not tied to one, e.g. a dropped connection)
- ``geo_replication_lag_seconds`` / ``geo_replication_lag_events`` / ``geo_replica_paused``
  {namespace, location} and ``geo_replica_role`` {namespace, location, role}: each replica
  of a geo-replicated namespace (docs/georeplication.md)
- ``uptime_seconds``; ``info`` {version, cluster_id}
"""
from __future__ import annotations

import time

from kafka_wire.console import geo
from kafka_wire.console.metrics import LATENCY_BUCKETS, api_name
from kafka_wire.console.views import ConsoleViews

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
P = "kafkawire_"


def _esc(value) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels) -> str:
    return "{" + ",".join(f'{k}="{_esc(v)}"' for k, v in labels.items()) + "}"


def _num(v) -> str:
    if isinstance(v, float):
        return repr(v) if v == v else "NaN"
    return str(v)


class _Out:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, kind: str, help_: str) -> None:
        self.lines.append(f"# HELP {P}{name} {help_}")
        self.lines.append(f"# TYPE {P}{name} {kind}")

    def sample(self, name: str, value, **labels) -> None:
        self.lines.append(f"{P}{name}{_labels(**labels) if labels else ''} {_num(value)}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def render(views: ConsoleViews) -> str:
    services, metrics = views.services, views.metrics
    out = _Out()
    out.family("info", "gauge", "kafka-wire build and cluster.")
    out.sample("info", 1, version=views.info.get("version", ""),
               cluster_id=services.cluster.cluster_id)
    out.family("uptime_seconds", "gauge", "Seconds since the broker started.")
    out.sample("uptime_seconds", (time.time_ns() // 1_000_000 - metrics.started_ms) / 1000.0)

    logs = []   # (ns, hub, p, plog)
    hubs = []   # (ns, hub, partitions)
    for ns, rt in services.namespaces.items():
        for view in rt.topics.all():
            if view.internal:
                continue
            hubs.append((ns, view.name, view.partitions))
            for p in range(view.partitions):
                plog = rt.topics.log(view.name, p)
                if plog is not None:
                    logs.append((ns, view.name, p, plog))

    out.family("hub_partitions", "gauge", "Partitions of an event hub.")
    for ns, hub, n in hubs:
        out.sample("hub_partitions", n, namespace=ns, hub=hub)
    for name, attr, help_ in (
            ("partition_log_start_offset", "log_start_offset",
             "First sequence number still in the partition."),
            ("partition_log_end_offset", "log_end_offset",
             "Next sequence number the partition will assign."),
            ("partition_size_bytes", "size_bytes", "Bytes the partition's segments hold.")):
        out.family(name, "gauge", help_)
        for ns, hub, p, plog in logs:
            out.sample(name, getattr(plog, attr), namespace=ns, hub=hub, partition=p)
    for i, (name, help_) in enumerate((
            ("partition_incoming_messages_total", "Events appended since start."),
            ("partition_incoming_bytes_total", "Record-batch bytes appended since start."),
            ("partition_outgoing_messages_total", "Events served (Kafka Fetch, AMQP) since start."),
            ("partition_outgoing_bytes_total", "Record-batch bytes served since start."))):
        out.family(name, "counter", help_)
        for ns, hub, p, _plog in logs:
            out.sample(name, metrics.partition_counters(ns, hub, p)[i],
                       namespace=ns, hub=hub, partition=p)

    protocols = metrics.protocol_counters()
    for i, (name, help_) in enumerate((
            ("protocol_events_total", "Events appended (in) / served (out) since start, per protocol."),
            ("protocol_bytes_total", "Record-batch bytes appended / served, per protocol."))):
        out.family(name, "counter", help_)
        for protocol, counts in sorted(protocols.items()):
            out.sample(name, counts[i], protocol=protocol, direction="in")
            out.sample(name, counts[i + 2], protocol=protocol, direction="out")
    out.family("throttled_requests_total", "counter",
               "Requests answered with a throttle time (throughput units exceeded).")
    for (ns, api), (n, _ms) in sorted(metrics.throttled.items()):
        out.sample("throttled_requests_total", n, namespace=ns, api=api)
    out.family("throttle_seconds_total", "counter", "Sum of the throttle times given.")
    for (ns, api), (_n, ms) in sorted(metrics.throttled.items()):
        out.sample("throttle_seconds_total", ms / 1000.0, namespace=ns, api=api)
    out.family("hub_throttled_requests_total", "counter",
               "Throttled requests whose traffic included this hub (a namespace's units are "
               "shared by its hubs).")
    for (ns, hub), (n, _ms) in sorted(metrics.throttled_hubs.items()):
        out.sample("hub_throttled_requests_total", n, namespace=ns, hub=hub)
    out.family("hub_throttle_seconds_total", "counter",
               "Sum of the throttle times of those requests.")
    for (ns, hub), (_n, ms) in sorted(metrics.throttled_hubs.items()):
        out.sample("hub_throttle_seconds_total", ms / 1000.0, namespace=ns, hub=hub)
    out.family("throughput_units", "gauge", "Throughput units in force (metered namespaces).")
    for ns, rt in services.namespaces.items():
        quota = rt.quota
        if quota is not None:
            out.sample("throughput_units", quota.units, namespace=ns)

    _groups(out, services)

    snap = metrics.latency_snapshot()
    out.family("requests_total", "counter", "Kafka requests answered, per API.")
    for api, (_b, _s, count) in sorted(snap.items()):
        out.sample("requests_total", count, api=api)
    out.family("request_duration_seconds", "histogram",
               "Time from request decoded to response written, per API.")
    for api, (buckets, total, count) in sorted(snap.items()):
        cumulative = 0
        for bound, n in zip(LATENCY_BUCKETS, buckets):
            cumulative += n
            out.sample("request_duration_seconds_bucket", cumulative, api=api, le=_num(bound))
        out.sample("request_duration_seconds_bucket", count, api=api, le="+Inf")
        out.sample("request_duration_seconds_sum", total, api=api)
        out.sample("request_duration_seconds_count", count, api=api)

    out.family("connections", "gauge", "Open client connections per listener.")
    for listener, n in sorted(views.connections().items()):
        out.sample("connections", n, listener=listener)

    views.capture.refresh()
    for i, (name, help_) in enumerate((
            ("capture_files_total", "Capture files written (CaptureFileCreated events)."),
            ("capture_bytes_total", "Bytes of the Capture files written."),
            ("capture_events_total", "Events in the Capture files written."))):
        out.family(name, "counter", help_)
        for (ns, hub), t in sorted(views.capture.totals.items()):
            out.sample(name, t[i], namespace=ns, hub=hub)
    out.family("faults_fired_total", "counter", "Injected faults that fired (docs/faults.md).")
    faults = getattr(services, "faults", None)
    if faults is not None:
        for (kind, ns), n in sorted(faults.plan.totals.items()):
            out.sample("faults_fired_total", n, kind=kind, namespace=ns)
    geo.metrics(out, services)
    return out.text()


def _groups(out: _Out, services) -> None:
    committed, lag, members = [], [], []
    for ns, rt in services.namespaces.items():
        coord = rt.groups
        if coord is None:
            continue
        for group_id in coord.offsets.group_ids():
            for (topic, p), om in sorted(coord.offsets.get(group_id).items()):
                plog = rt.topics.log(topic, p)
                committed.append((om.offset, ns, group_id, topic, p))
                if plog is not None:
                    lag.append((max(plog.log_end_offset - om.offset, 0), ns, group_id, topic, p))
        for kind, manager in (("classic", coord.classic), ("consumer", coord.consumer)):
            for group in manager.groups.values():
                members.append((len(group.members), ns, group.group_id, kind, str(group.state)))
    out.family("consumer_group_committed_offset", "gauge",
               "Checkpoint: the next sequence number the group will read.")
    for v, ns, g, hub, p in committed:
        out.sample("consumer_group_committed_offset", v, namespace=ns, group=g, hub=hub, partition=p)
    out.family("consumer_group_lag", "gauge", "Events between the checkpoint and the log end.")
    for v, ns, g, hub, p in lag:
        out.sample("consumer_group_lag", v, namespace=ns, group=g, hub=hub, partition=p)
    out.family("consumer_group_members", "gauge", "Members of a Kafka consumer group.")
    for v, ns, g, kind, state in members:
        out.sample("consumer_group_members", v, namespace=ns, group=g, type=kind, state=state)


__all__ = ["render", "CONTENT_TYPE", "api_name"]
