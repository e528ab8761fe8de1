"""``kafka-wire groups``: consumer groups per event hub, with members,
assignments, checkpoints and lag per partition.

    kafka-wire groups [--data-dir DIR] [--bootstrap HOST:PORT] [--config FILE]
                      [--namespace NS] [--hub HUB] [--json]

Every event hub lists ``$Default`` first (Event Hubs always has it), then
the consumer groups ``--config`` (the file ``serve --config`` takes) gives
the hub, then each Kafka group that committed offsets for the hub or has a
member subscribed to it — the view of :mod:`kafka_wire.eventhubs.groups_view`.

**Offline** (default; ``--data-dir``, default ``./data``) reads the data
directory and writes nothing, so it is safe while a broker runs on it:

- checkpoints: ``DATA_DIR/_checkpoints/<namespace>/checkpoints.log`` through
  :class:`~coordinator.checkpoints.embedded.EmbeddedCheckpointStore` opened
  ``read_only`` (no truncation of a torn tail, nothing created);
- event hubs: the topic metadata, through :func:`kafka_wire.log.reader.read_topic_partitions`;
- log end offsets: :meth:`kafka_wire.log.reader.PartitionReader.end_offset`
  (the batches of the last segment, each checked, read with ``pread``). No
  ``PartitionLog``/``LogManager`` is opened: their recovery may rewrite files.

Members are not persisted (as in Kafka), so offline shows no members and
the state of groups is ``Empty``; a partition's "offset" is the Event Hubs
byte offset recorded with its checkpoint. A broker that crashed repairs torn
tails when it next starts; until then offline figures stop at the last
complete batch.

**Online** (``--bootstrap``) asks a running broker over the Kafka protocol
with kafka-python's KafkaAdminClient: ListGroups, DescribeGroups (classic
groups), ConsumerGroupDescribe (KIP-848 groups; sent through the admin
client's connection with the message class from :mod:`kafka_wire.schemas`),
OffsetFetch, ListOffsets (latest). Online there are members and live states,
but no Event Hubs byte offsets (OffsetFetch does not carry them), and the
namespace is the one the connection belongs to (``--namespace`` is for
offline use).
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, TextIO

from kafka_wire.coordinator.checkpoints.embedded import CHECKPOINTS_DIR
from kafka_wire.eventhubs.groups_view import (
    DEFAULT_CONSUMER_GROUP, ConsumerGroupView, MemberView, PartitionView, consumer_groups,
)
from kafka_wire.log.reader import PartitionReader, is_namespace_dir, read_topic_partitions
from kafka_wire.replication.store import serving_log_dir

__all__ = ["HubGroups", "offline_report", "online_report", "add_parser", "run"]

@dataclass(frozen=True, slots=True)
class HubGroups:
    namespace: str | None   # None online: the connection's namespace
    event_hub: str
    partitions: int
    consumer_groups: list[ConsumerGroupView]


# -- offline -------------------------------------------------------------------------------

def _namespaces(data_dir: Path) -> list[str]:
    names = {p.name for p in data_dir.iterdir() if is_namespace_dir(p)}
    ckpt = data_dir / CHECKPOINTS_DIR
    if ckpt.is_dir():
        names |= {p.name for p in ckpt.iterdir() if p.is_dir()}
    return sorted(names)


def configured_groups(config: str | Path | None, namespace: str | None) -> dict[str, list[str]]:
    """Hub name (lower case) -> the consumer groups a config file gives it in
    ``namespace`` (a name, or a host that selects one; None: the default namespace)."""
    if config is None:
        return {}
    from kafka_wire.eventhubs.config_file import load

    model, _ = load(Path(config))
    if namespace not in model.namespaces:
        namespace = (model.namespace_for_host(namespace) if namespace else None) or model.default_namespace
    ns = model.namespaces.get(namespace)
    if ns is None:
        return {}
    return {name.lower(): hub.all_consumer_groups() for name, hub in ns.hubs.items()}


def offline_report(data_dir: str | Path, namespace: str | None = None,
                   hub: str | None = None, config: str | Path | None = None) -> list[HubGroups]:
    """The groups of every event hub in a data directory (read-only); ``config``:
    the config file whose consumer groups are listed too."""
    from kafka_wire.coordinator.checkpoints.embedded import EmbeddedCheckpointStore
    from kafka_wire.coordinator.clock import SystemClock
    from kafka_wire.coordinator.group_coordinator import GroupCoordinator

    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise ValueError(f"data directory {data_dir} does not exist")
    namespaces = _namespaces(data_dir)
    if namespace is not None:
        if namespace not in namespaces:
            raise ValueError(f"namespace {namespace!r} not found in {data_dir} "
                             f"(found: {', '.join(namespaces) or 'none'})")
        namespaces = [namespace]
    report = []
    for ns in namespaces:
        store = EmbeddedCheckpointStore(data_dir / CHECKPOINTS_DIR / ns, read_only=True)
        try:
            coordinator = GroupCoordinator(SystemClock(), store=store, namespace=ns)
        finally:
            store.close()
        logs = serving_log_dir(data_dir, ns)  # (after a geo promotion: the new primary's region)
        hubs = read_topic_partitions(logs)
        configured = configured_groups(config, ns)
        if hub is not None:
            hubs = {hub: hubs[hub]} if hub in hubs else {}
        for name, partitions in hubs.items():
            ends: dict[tuple[str, int], int] = {}

            def end_offset(topic: str, partition: int, _logs=logs) -> int:
                key = (topic, partition)
                if key not in ends:
                    ends[key] = PartitionReader(_logs / f"{topic}-{partition}").end_offset()
                return ends[key]

            report.append(HubGroups(ns, name, partitions, consumer_groups(
                coordinator, name, end_offset, partition_count=partitions,
                configured=configured.get(name.lower(), ()))))
    return report


# -- online --------------------------------------------------------------------------------

def _views(hub: str, partitions: int, found: dict[str, tuple[str, str, list[MemberView]]],
           committed: dict[str, dict[int, int]], ends: dict[int, int],
           configured=()) -> list[ConsumerGroupView]:
    """Same shape and order as :func:`kafka_wire.eventhubs.groups_view.consumer_groups`."""
    names = [DEFAULT_CONSUMER_GROUP, *sorted(set(configured) - {DEFAULT_CONSUMER_GROUP})]
    names += sorted(set(found) - set(names))
    out = []
    for name in names:
        state, group_type, members = found.get(name, ("", "", []))
        owners = {p: m.member_id for m in members for p in m.partitions}
        offsets = committed.get(name, {})
        views = []
        for p in range(partitions):
            end = ends.get(p, 0)
            seq = offsets.get(p)
            views.append(PartitionView(p, seq, None, end - 1,
                                       None if seq is None else max(end - seq, 0),
                                       owners.get(p)))
        out.append(ConsumerGroupView(name, name in found, state, group_type, members, views))
    return out


class _RefusalWatch(logging.Filter):
    """Catches the reason a broker refused the bootstrap connection (wrong SASL
    credentials, an address not allowed): kafka-python only logs it and retries
    until its timeout, which then says "Unable to bootstrap"."""

    def __init__(self, quiet: bool) -> None:
        super().__init__()
        self.quiet = quiet
        self.error: Exception | None = None
        self.seen = threading.Event()

    def filter(self, record: logging.LogRecord) -> bool:
        from kafka.errors import AuthorizationError, SaslAuthenticationFailedError

        args = record.args if isinstance(record.args, tuple) else ()
        for arg in args:
            if isinstance(arg, (SaslAuthenticationFailedError, AuthorizationError)):
                self.error = self.error or arg
                self.seen.set()
        return not self.quiet


def online_report(bootstrap: str, hub: str | None = None,
                  timeout_s: float = 10.0, client_options: dict | None = None,
                  configured: dict[str, list[str]] | None = None) -> list[HubGroups]:
    """The groups of every event hub, asked of a running broker. ``client_options``:
    kafka-python settings (credentials, TLS). A broker that refuses the connection
    raises its reason at once (a ``KafkaError``), not a timeout."""
    manager_log = logging.getLogger("kafka.net.manager")
    watch = _RefusalWatch(quiet=manager_log.getEffectiveLevel() > logging.WARNING)
    level = manager_log.level
    manager_log.setLevel(min(manager_log.getEffectiveLevel(), logging.WARNING))
    manager_log.addFilter(watch)
    result: list = []
    worker = threading.Thread(target=lambda: result.append(_capture(
        _online_report, bootstrap, hub, timeout_s, client_options, configured or {})),
        daemon=True,
        name="kafka-wire-groups")
    try:
        worker.start()
        while worker.is_alive() and not watch.seen.wait(0.05):
            pass
    finally:
        manager_log.removeFilter(watch)
        manager_log.setLevel(level)
    if watch.error is not None and not result:
        raise watch.error  # the worker gives up on its own at its timeout
    worker.join()
    ok, value = result[0]
    if not ok:
        raise value
    return value


def _capture(fn, *args):
    try:
        return True, fn(*args)
    except BaseException as exc:  # handed to the caller's thread
        return False, exc


def _online_report(bootstrap: str, hub: str | None, timeout_s: float,
                   client_options: dict | None, configured: dict[str, list[str]]) -> list[HubGroups]:
    from kafka import KafkaAdminClient, TopicPartition
    from kafka.protocol.consumer import OffsetSpec

    from kafka_wire.schemas import ConsumerGroupDescribeRequest

    timeout_ms = int(timeout_s * 1000)
    settings = {"client_id": "kafka-wire-groups", "request_timeout_ms": timeout_ms,
                "bootstrap_timeout_ms": timeout_ms, **(client_options or {})}
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, **settings)
    try:
        topics = {t["name"]: len(t["partitions"]) for t in admin.describe_topics()
                  if not t.get("is_internal") and not t["name"].startswith("__")
                  and t.get("error_code", 0) == 0}
        if hub is not None:
            topics = {hub: topics[hub]} if hub in topics else {}
        listed = admin.list_groups()
        classic_ids = [g["group_id"] for g in listed if g.get("group_type", "classic") != "consumer"]
        consumer_ids = [g["group_id"] for g in listed if g.get("group_type") == "consumer"]
        classic = admin.describe_groups(classic_ids) if classic_ids else {}
        kip848 = {}
        if consumer_ids:
            async def describe():
                coordinators = await admin._find_coordinator_ids(consumer_ids)
                by_node: dict[int, list[str]] = {}
                for group_id, node in coordinators.items():
                    by_node.setdefault(node, []).append(group_id)
                out = []
                for node, ids in by_node.items():
                    out += (await admin._manager.send(ConsumerGroupDescribeRequest(
                        group_ids=ids, include_authorized_operations=False),
                        node_id=node)).groups
                return out
            kip848 = {g.group_id: g for g in admin._manager.run(describe) if g.error_code == 0}
        all_ids = [g["group_id"] for g in listed]
        offsets = admin.list_group_offsets({g: None for g in all_ids}) if all_ids else {}
        tps = {TopicPartition(t, p): OffsetSpec.LATEST for t, n in topics.items() for p in range(n)}
        latest = admin.list_partition_offsets(tps) if tps else {}
    finally:
        admin.close()

    report = []
    for topic, partitions in topics.items():
        found: dict[str, tuple[str, str, list[MemberView]]] = {}
        committed = {g: {tp.partition: om.offset for tp, om in per.items()
                         if tp.topic == topic and om.offset >= 0}
                     for g, per in offsets.items()}
        for group_id, d in classic.items():
            if d.get("error"):
                continue
            subscribed, members = False, []
            if d.get("protocol_type") == "consumer":
                for m in d.get("members", []):
                    meta, assignment = m.get("member_metadata"), m.get("member_assignment")
                    topics_of = meta.get("topics", []) if isinstance(meta, dict) else []
                    if topic not in topics_of:
                        continue
                    subscribed = True
                    parts = []
                    if isinstance(assignment, dict):
                        parts = sorted({p for a in assignment.get("assigned_partitions", [])
                                        if a["topic"] == topic for p in a["partitions"]})
                    members.append(MemberView(m["member_id"], m.get("group_instance_id"),
                                              m.get("client_id", ""), m.get("client_host", ""),
                                              parts))
            if subscribed or committed.get(group_id):
                found[group_id] = (d.get("group_state", ""), "classic", members)
        for group_id, g in kip848.items():
            members = [MemberView(m.member_id, m.instance_id, m.client_id, m.client_host,
                                  sorted({p for tp in m.assignment.topic_partitions
                                          if tp.topic_name == topic for p in tp.partitions}))
                       for m in g.members if topic in m.subscribed_topic_names]
            if members or committed.get(group_id):
                found[group_id] = (g.group_state, "consumer", members)
        ends = {tp.partition: o.offset for tp, o in latest.items() if tp.topic == topic}
        report.append(HubGroups(None, topic, partitions,
                                _views(topic, partitions, found, committed, ends,
                                       configured.get(topic.lower(), ()))))
    return report


def _namespace_of(connection_string: str | None) -> str | None:
    """The host of a connection string's Endpoint (it selects the namespace)."""
    for part in (connection_string or "").split(";"):
        key, _, value = part.partition("=")
        if key.strip().lower() == "endpoint":
            return value.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0] or None
    return None


def _reason(exc: Exception) -> str:
    """The broker's own words where it sent some (kafka-python prefixes its error name)."""
    text = str(exc)
    name = type(exc).__name__ + ": "
    while name in text:
        text = text.split(name, 1)[1]
    return text


# -- output --------------------------------------------------------------------------------

def _dash(value) -> str:
    return "-" if value is None else str(value)


def render_text(report: Iterable[HubGroups], out: TextIO, source: str) -> None:
    report = list(report)
    if not report:
        print(f"no event hubs ({source})", file=out)
        return
    for hub in report:
        where = hub.namespace if hub.namespace is not None else source
        print(f"{where} / {hub.event_hub}  ({hub.partitions} partition{'' if hub.partitions == 1 else 's'})",
              file=out)
        for g in hub.consumer_groups:
            if not g.kafka_group:
                print(f"  consumer group {g.name}  (no Kafka consumer has used it)", file=out)
            else:
                print(f"  consumer group {g.name}  {g.group_type} {g.state}  "
                      f"{len(g.members)} member(s)", file=out)
            for m in g.members:
                static = f" instance {m.instance_id}" if m.instance_id else ""
                print(f"    member {m.member_id}{static}  client {m.client_id or '-'} "
                      f"{m.client_host or ''}  partitions "
                      f"{','.join(map(str, m.partitions)) or '-'}", file=out)
            rows = [("partition", "checkpoint", "offset", "last-seq", "lag", "owner")]
            rows += [(str(p.partition), _dash(p.sequence_number), _dash(p.offset),
                      str(p.last_sequence_number), _dash(p.lag), _dash(p.owner))
                     for p in g.partitions]
            widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
            for r in rows:
                print("    " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip(),
                      file=out)


def render_json(report: Iterable[HubGroups], out: TextIO, mode: str, source: str) -> None:
    json.dump({"mode": mode, "source": source, "event_hubs": [asdict(h) for h in report]},
              out, indent=2)
    out.write("\n")


# -- command -------------------------------------------------------------------------------

def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "groups", help="list consumer groups, members, assignments and lag per partition",
        description="Consumer groups of each event hub. Offline (default) reads --data-dir "
                    "without writing to it; --bootstrap asks a running broker instead.")
    p.add_argument("--data-dir", default="./data",
                   help="read this data directory, read-only (default ./data)")
    p.add_argument("--bootstrap", metavar="HOST:PORT",
                   help="ask a running broker over the Kafka protocol instead")
    p.add_argument("--namespace", help="only this namespace (offline)")
    p.add_argument("--hub", help="only this event hub")
    p.add_argument("--config", metavar="FILE",
                   help="the Config.json (or kafka-wire TOML) the broker serves: its consumer "
                   "groups are listed too, with or without checkpoints")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--connection-string", metavar="STRING",
                   help="authenticate as an Event Hubs client: SASL PLAIN with username "
                   "$ConnectionString (online; add --kafka-option security_protocol=SASL_SSL "
                   "--kafka-option ssl_cafile=CA.pem for the TLS listener)")
    p.add_argument("--kafka-option", action="append", default=[], metavar="KEY=VALUE",
                   help="kafka-python client setting (online; repeat), e.g. "
                   "security_protocol=SASL_SSL")
    p.add_argument("--timeout", type=float, default=10.0,
                   help="seconds to wait for the broker (online; default 10)")
    p.add_argument("--log-level", dest="sub_log_level", default="WARNING",
                   help="log level on stderr (default WARNING)")
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    if not args.bootstrap and (args.connection_string or args.kafka_option):
        raise ValueError("--connection-string and --kafka-option are for --bootstrap (online) use")
    if args.bootstrap:
        if args.namespace:
            raise ValueError("--namespace applies to offline use; online, the namespace is "
                             "the one the connection belongs to")
        from kafka.errors import KafkaError
        if logging.getLogger().getEffectiveLevel() >= logging.WARNING:
            # kafka-python logs every refused connection; the one line below says it all.
            logging.getLogger("kafka").setLevel(logging.CRITICAL)
        from kafka_wire.client_options import connection_string_options, parse_kafka_options

        options = connection_string_options(args.connection_string) if args.connection_string else {}
        options.update(parse_kafka_options(args.kafka_option, typed=True))
        configured = configured_groups(args.config, _namespace_of(args.connection_string))
        try:
            report = online_report(args.bootstrap, args.hub, args.timeout, options, configured)
        except KafkaError as exc:
            print(f"kafka-wire groups: cannot query {args.bootstrap}: {type(exc).__name__}: "
                  f"{_reason(exc)}", file=sys.stderr)
            return 1
        mode, source = "online", args.bootstrap
    else:
        report = offline_report(args.data_dir, args.namespace, args.hub, args.config)
        mode, source = "offline", str(Path(args.data_dir).resolve())
    if args.json:
        render_json(report, out, mode, source)
    else:
        render_text(report, out, source)
    return 0
