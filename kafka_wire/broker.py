"""Assembles one broker: log manager, topics, coordinators, listener.

Used by the CLI (``kafka-wire serve``) and by ``kafka_wire.testing``.
"""
from __future__ import annotations

import asyncio
import dataclasses
import errno
import gc
import logging
import os
import socket
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Awaitable, Callable

from kafka_wire.apis import refusals as kafka_refusals
from kafka_wire.coordinator.clock import SystemClock
from kafka_wire.coordinator.producer_ids import ProducerIdManager
from kafka_wire.config import BrokerConfig
from kafka_wire.faults import Faults
from kafka_wire.context import ClusterInfo, NamespaceRuntime, Services
from kafka_wire.eventhubs import tls
from kafka_wire.eventhubs.attach import configure as configure_eventhubs
from kafka_wire.eventhubs.geo_kept import kept_geo_settings
from kafka_wire.eventhubs.managed import ManagedState
from kafka_wire.eventhubs.auth import Authenticator
from kafka_wire.eventhubs.model import EventHubsModel
from kafka_wire.eventhubs.door import Door
from kafka_wire.eventhubs.subscription import Subscription
from kafka_wire.eventhubs.report import CompatibilityReport
from kafka_wire.fetch_sessions import FetchSessionCache
from kafka_wire.server import KafkaServer
from kafka_wire.topics import TopicManager
from kafka_wire.log.config import LogConfig
from kafka_wire.log.cleaner import LogCleaner
from kafka_wire.log.manager import LogManager

log = logging.getLogger(__name__)

# How often the log flusher looks for partitions whose flush.ms has passed (ms);
# sooner when a partition's flush.ms is shorter, but not below _FLUSH_MIN_MS.
_FLUSH_CHECK_MS = 1000
_FLUSH_MIN_MS = 50


class StartupError(Exception):
    """A problem the person starting the broker can fix (an address in use, a data
    directory that is a file): the CLI prints it as one line, without a traceback."""


def prepare_data_dir(data_dir: Path) -> None:
    """Create ``data_dir`` if needed and check that the broker can write in it."""
    where = "--data-dir (or [server] data_dir in the config)"
    if data_dir.exists() and not data_dir.is_dir():
        raise StartupError(f"data directory {data_dir} is a file, not a directory: choose "
                           f"another path with {where}")
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise StartupError(f"cannot create data directory {data_dir}: part of its path is a "
                           f"file; choose another path with {where}") from None
    except OSError as exc:
        raise StartupError(f"cannot create data directory {data_dir}: {exc.strerror}; choose "
                           f"another path with {where}") from None
    probe = data_dir / f".write-probe-{os.getpid()}"
    try:  # a real write: root passes permission checks but not a read-only mount
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise StartupError(f"data directory {data_dir} is not writable ({exc.strerror}): fix its "
                           f"permissions or choose another path with {where}") from None


async def listen(what: str, flag: str, host: str, port: int,
                 start: Callable[[], Awaitable[tuple[str, int]]]) -> tuple[str, int]:
    """Open one listener (Kafka, SASL_SSL, HTTP, and any added later), turning the
    OS's refusal into one line that names the address and the flag to change."""
    try:
        return await start()
    except socket.gaierror:
        raise StartupError(f"cannot listen for {what} on {host}:{port}: {host!r} is not a known "
                           f"host name or address; use {flag} HOST:PORT with a local address "
                           "such as 127.0.0.1") from None
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            why = "the address is already in use; stop the process that holds it or"
        elif exc.errno == errno.EADDRNOTAVAIL:
            why = "no network interface here has that address;"
        elif exc.errno == errno.EACCES:
            why = "permission denied (ports below 1024 need privileges);"
        else:
            why = f"{exc.strerror or exc};"
        raise StartupError(f"cannot listen for {what} on {host}:{port}: {why} choose another "
                           f"address with {flag} HOST:PORT") from None


def _cluster_id(data_dir: Path, wanted: str | None) -> str:
    """Kafka keeps the cluster id in meta.properties; so do we."""
    meta = data_dir / "meta.properties"
    if wanted:
        return wanted
    if meta.exists():
        for line in meta.read_text().splitlines():
            if line.startswith("cluster.id="):
                return line.split("=", 1)[1].strip()
    cid = uuid.uuid4().hex[:22]
    tmp = meta.with_suffix(".tmp")
    tmp.write_text(f"version=1\ncluster.id={cid}\n")
    tmp.replace(meta)
    return cid


class Broker:
    def __init__(self, config: BrokerConfig, clock=None) -> None:
        self.config = config
        self.clock = clock
        self.services: Services | None = None
        self.server: KafkaServer | None = None
        self.logs: LogManager | None = None
        self.address: tuple[str, int] | None = None
        self._retention_timer = None
        self._flush_timer = None
        self._flusher: ThreadPoolExecutor | None = None
        self._report: CompatibilityReport | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closers: list = []
        self._ns_closers: dict[str, list] = {}  # each namespace's coordinators' closers
        self.tls_server: KafkaServer | None = None
        self.tls_address: tuple[str, int] | None = None
        self.tls_ca_file: Path | None = None
        self.amqp_server = None   # kafka_wire.amqp.server.AmqpServer when AMQP is on (all its listeners)
        self.amqp_address: tuple[str, int] | None = None
        self.amqps_address: tuple[str, int] | None = None
        self._tls_context = None
        self.console = None  # kafka_wire.console.Console when HTTP is on
        self.http = None  # kafka_wire.httpd.listener.HttpListener: REST and the console
        self.managed: ManagedState | None = None  # the management API's changes
        self.capture = None  # kafka_wire.capture_jobs.CaptureJobs when config.capture_jobs
        self.http_address: tuple[str, int] | None = None
        self.https_address: tuple[str, int] | None = None
        self._serving = False

    @property
    def bootstrap_servers(self) -> str:
        host, port = self.address
        return f"{host}:{port}"

    @property
    def tls_bootstrap_servers(self) -> str | None:
        if self.tls_address is None:
            return None
        host, port = self.tls_address
        return f"{host}:{port}"

    async def start(self) -> tuple[str, int]:
        cfg = self.config
        data_dir = Path(cfg.data_dir)
        prepare_data_dir(data_dir)
        clock = self.clock or SystemClock()
        self.clock = clock
        cluster = ClusterInfo(cfg.node_id, cfg.advertise_host or cfg.listen_host,
                              cfg.advertise_port or cfg.listen_port, _cluster_id(data_dir, cfg.cluster_id))
        model = cfg.eventhubs or EventHubsModel.single(cfg.default_namespace)
        self._model = model
        if not cfg.in_memory:  # what the management API changed, over the config file's model
            self.managed = ManagedState(data_dir)
            self.managed.add_namespaces(model)
        if cfg.eventhubs is not None:  # the model decides which namespaces exist
            cfg.default_namespace = model.default_namespace
            cfg.namespaces = [n for n in model.namespaces if n != model.default_namespace]
        else:  # the flags' namespaces, and those made through the management API
            cfg.namespaces = list(dict.fromkeys(
                [*cfg.namespaces, *(n for n in model.namespaces if n != model.default_namespace)]))
        report = CompatibilityReport(data_dir, clock, kafka_refusals.error_code)  # Kafka codes in it
        self._closers.append(report.close)
        self._report = report
        namespaces = {name: self._open_namespace(data_dir, name)
                      for name in dict.fromkeys([cfg.default_namespace, *cfg.namespaces])}
        self.services = Services(
            config=cfg, clock=clock, cluster=cluster, namespaces=namespaces,
            default_namespace=cfg.default_namespace, eventhubs=model, report=report,
            auth=Authenticator(model, report),
            producer_ids=ProducerIdManager(data_dir / "producer-ids"),
            fetch_sessions=FetchSessionCache(),
            subscription=Subscription(model, cfg.subscription_key, data_dir))
        self.logs = self.services.default.topics.logs
        self._attach_coordinators(data_dir)
        for ns in namespaces.values():
            if ns.geo is not None:
                ns.geo.start()
        if self.managed is not None:
            self.managed.apply(model)
        configure_eventhubs(self.services)
        self._follow_geo_dr(data_dir)
        if cfg.capture_jobs:
            from kafka_wire.capture_jobs import CaptureJobs
            self.capture = CaptureJobs(data_dir)
            self.capture.reconcile(model, clock.now_ms())
        self.server = KafkaServer(self.services, cluster)
        self.services.faults = Faults(asyncio.get_running_loop(), self.services,
                                      servers=self._servers)
        # Every fault that fires is kept in the report too (kafka-wire report).
        self.services.faults.plan.listeners.append(
            lambda fired: report.record_fault(fired, cfg.default_namespace))
        if cfg.faults or cfg.chaos is not None:  # [[faults]], serve --chaos
            from kafka_wire.startup_faults import install
            install(self.services.faults, cfg)
        if cfg.http_listen_host is not None:
            self._attach_console()
        host, port = await listen("Kafka", "--listen", cfg.listen_host, cfg.listen_port,
                                  lambda: self.server.start(cfg.listen_host, cfg.listen_port))
        # Port 0 means "pick one": advertise what we actually got.
        cluster.host = cfg.advertise_host or host
        cluster.port = cfg.advertise_port or port
        self.address = (cluster.host, cluster.port)
        if cfg.tls_listen_host:
            await self._start_tls(data_dir, model)
        await self._start_amqp()
        if self.console is not None:
            await self._start_console()
        self._schedule_retention()
        self._loop = asyncio.get_running_loop()
        # Its own thread, joined by stop(): the loop's default executor is not.
        self._flusher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kafka-wire-flush")
        # Its thread starts now, not at the first flush a second later: a started broker
        # has all its threads (a test that counts threads around its own broker relies on it).
        self._flusher.submit(int).result()
        self._schedule_flush(_FLUSH_CHECK_MS)
        self._serving = True
        return self.address

    def _attach_console(self) -> None:
        from kafka_wire.console import attach

        def connections() -> dict[str, int]:
            counts = {"kafka": len(self.server.connections) if self.server else 0}
            if self.tls_server is not None:
                counts["kafka_sasl_ssl"] = len(self.tls_server.connections)
            if self.amqp_server is not None:
                counts["amqp"] = len(self.amqp_server.connections)
            return counts

        from kafka_wire.httpd.listener import HttpListener

        self.console = attach(self.services, connections=connections, capture_dir=self.config.capture_dir)
        self.http = HttpListener(self.console.pages, ready=lambda: self._serving,
                                 max_connections=self.config.bounds.http_connections)

    async def _start_console(self) -> None:
        cfg = self.config
        from kafka_wire.rest.api import RestApi

        if self.amqp_server is not None:  # AMQP over WebSockets on the HTTP listener too
            self.http.websocket = self.amqp_server.serve_upgrade
        self.http.rest = rest = RestApi(  # the Event Hubs REST API
            self.services, self.managed, None if cfg.in_memory else Path(cfg.data_dir))
        rest.add_namespace, rest.remove_namespace = self.add_namespace, self.remove_namespace
        rest.hubs_changed = self.hubs_changed
        rest.enable_geo = self.enable_geo  # geoDataReplication on a namespace that had none
        self.console.views.registry = rest.registry  # Avro bodies in the Data Explorer
        self.http.clock = self.services.clock
        try:
            self.http_address = await listen(
                "HTTP", "--http-listen (or --no-http)", cfg.http_listen_host, cfg.http_listen_port,
                lambda: self.http.start(cfg.http_listen_host, cfg.http_listen_port))
        except StartupError as exc:
            if not cfg.http_optional:
                raise
            log.warning("HTTP console/metrics not started: %s", exc)
            self.console = self.http = None
            return
        self.console.start()
        log.info("console and metrics on http://%s:%d/ (health: /health, Prometheus: /metrics)",
                 *self.http_address)
        if cfg.https_listen_host is None:
            return
        if self._tls_context is None:
            raise StartupError("HTTPS needs the TLS listener's certificate: add --tls-listen "
                               "(or [server] tls_listen), or drop --https-listen")
        try:
            self.https_address = await listen(
                "HTTPS", "--https-listen", cfg.https_listen_host, cfg.https_listen_port,
                lambda: self.http.start(cfg.https_listen_host, cfg.https_listen_port,
                                        ssl=self._tls_context))
            log.info("console, metrics and REST API on https://%s:%d/", *self.https_address)
        except StartupError as exc:
            if not cfg.https_optional:
                raise
            log.warning("HTTPS listener not started: %s", exc)

    async def _start_tls(self, data_dir: Path, model: EventHubsModel) -> None:
        """The SASL_SSL listener: same broker, its own advertised address."""
        cfg = self.config
        if cfg.tls_cert_file:
            files = tls.TlsFiles(Path(cfg.tls_cert_file), Path(cfg.tls_key_file),
                                 Path(cfg.tls_ca_file) if cfg.tls_ca_file else None)
        else:
            names = tls.default_names([cfg.tls_listen_host, cfg.tls_advertise_host or "",
                                       cfg.advertise_host or "", cfg.listen_host],
                                      list(model.namespaces))
            files = await asyncio.get_running_loop().run_in_executor(
                None, tls.ensure_certificates, (data_dir / "tls").resolve(), names)
        base = self.services.cluster
        cluster = ClusterInfo(base.node_id, cfg.tls_advertise_host or cfg.tls_listen_host,
                              cfg.tls_advertise_port or cfg.tls_listen_port, base.cluster_id, base.rack)
        self.tls_server = KafkaServer(self.services, cluster)
        try:
            context = tls.server_context(files)
        except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
            raise StartupError(f"cannot load the TLS certificate {files.cert} and key {files.key}: "
                               f"{getattr(exc, 'strerror', None) or exc}; fix --tls-cert/--tls-key "
                               "(or [tls] cert_file/key_file in the config)") from None
        self._tls_context = context
        host, port = await listen("SASL_SSL", "--tls-listen", cfg.tls_listen_host, cfg.tls_listen_port,
                                  lambda: self.tls_server.start(cfg.tls_listen_host,
                                                                cfg.tls_listen_port, ssl=context))
        cluster.host = cfg.tls_advertise_host or host
        cluster.port = cfg.tls_advertise_port or port
        self.tls_address = (cluster.host, cluster.port)
        self.tls_ca_file = files.ca
        log.info("SASL_SSL listener on %s:%d%s", cluster.host, cluster.port,
                 f"; clients trust the CA in {files.ca}" if files.ca else "")

    async def _start_amqp(self) -> None:
        """AMQP (and AMQPS, on the TLS listener's certificate) for the Event Hubs SDKs."""
        cfg = self.config
        if cfg.amqp_listen_host is None and cfg.amqps_listen_host is None:
            return
        from kafka_wire.amqp.server import AmqpServer

        # One server for every AMQP listener (AMQP, AMQPS, WebSockets on the HTTP
        # listener): receivers of a partition are one set, whichever way they came.
        server = self.amqp_server = AmqpServer(self.services)
        bounds = cfg.bounds
        server.limits = dataclasses.replace(
            server.limits, max_sessions=bounds.amqp_sessions_per_connection,
            max_links=bounds.amqp_links_per_connection,
            unauthenticated_timeout_s=float(bounds.amqp_unauthenticated_s))
        if cfg.amqp_listen_host is not None:
            try:
                self.amqp_address = await listen(
                    "AMQP", "--amqp-listen (or --no-amqp)", cfg.amqp_listen_host,
                    cfg.amqp_listen_port, lambda: server.start(cfg.amqp_listen_host, cfg.amqp_listen_port))
                log.info("AMQP listener on %s:%d", *self.amqp_address)
            except StartupError as exc:
                if not cfg.amqp_optional:
                    raise
                log.warning("AMQP listener not started: %s", exc)
        if cfg.amqps_listen_host is not None:
            if self._tls_context is None:
                raise StartupError("AMQPS needs the TLS listener's certificate: add --tls-listen "
                                   "(or [server] tls_listen), or drop --amqps-listen")
            try:
                self.amqps_address = await listen(
                    "AMQPS", "--amqps-listen (or --no-amqp)", cfg.amqps_listen_host,
                    cfg.amqps_listen_port,
                    lambda: server.start(cfg.amqps_listen_host, cfg.amqps_listen_port,
                                         ssl=self._tls_context))
                log.info("AMQPS listener on %s:%d", *self.amqps_address)
            except StartupError as exc:
                if not cfg.amqps_optional:
                    raise
                log.warning("AMQPS listener not started: %s", exc)

    def _open_namespace(self, data_dir: Path, name: str) -> NamespaceRuntime:
        cfg = self.config
        configured = self._model.namespaces.get(name) if self._model is not None else None
        # the durability mode's flush.messages among them (the namespace's, else the broker's)
        defaults = cfg.log_topic_defaults(getattr(configured, "durability", None))
        default_log = LogConfig.from_kafka(defaults) if defaults else LogConfig()
        logs = LogManager(data_dir / name, default_log)
        topics = TopicManager(logs, num_partitions=cfg.num_partitions,
                              auto_create=cfg.auto_create_topics, topic_defaults={})
        ns = NamespaceRuntime(name=name, topics=topics, policy=Door())
        ns.door.bind(ns, self._report, self.clock, self._model, cfg.bounds)
        if configured is not None and configured.geo_replication is not None:
            self.enable_geo(ns, configured.geo_replication, default_log)
        elif configured is not None and (kept := kept_geo_settings(data_dir, name)) is not None:
            self.enable_geo(ns, kept, default_log)  # made geo-replicated by the management API
        if cfg.log_cleaner_interval_ms > 0:
            # Compaction runs on its own thread; it takes a partition's lock only to swap.
            ns.cleaner = LogCleaner(logs, interval_ms=cfg.log_cleaner_interval_ms, clock=self.clock.now_ms)
            ns.cleaner.start()
        return ns

    def _follow_geo_dr(self, data_dir: Path) -> None:
        """Geo-DR pairings made through the management API, and the copying of paired
        primaries' metadata to their secondaries (kafka_wire.eventhubs.geo_dr)."""
        from kafka_wire.eventhubs import geo_dr

        if not self.config.in_memory:
            geo_dr.load(self.services.eventhubs, data_dir)
        self._closers.append(geo_dr.follow(self.services, self.managed, self.hubs_changed))

    def enable_geo(self, ns: NamespaceRuntime, settings, default_log: LogConfig | None = None):
        """Make ``ns`` geo-replicated (the config's replicas, or the management API's):
        its secondaries' logs live under DATA_DIR/_geo/<namespace>/."""
        from kafka_wire import replication

        geo = replication.attach(ns, settings, Path(self.config.data_dir), self.clock,
                                 default_log or ns.topics.logs.default_config,
                                 close_connections=lambda: self.close_connections(ns, "failed over"))
        if self._serving:  # made at runtime: its coordinators are open already
            geo.start()
        return geo

    def close_connections(self, runtime: NamespaceRuntime, why: str) -> None:
        """Close every Kafka and AMQP connection bound to ``runtime`` (AMQP ones with
        amqp:connection:forced): its clients reconnect."""
        default = self.services.default
        for server in self._servers():
            for conn in list(server.connections):
                # a connection that did not sign in works in the default namespace
                if conn.state is not None and (conn.state.namespace or default) is runtime:
                    conn.close()
        if self.amqp_server is not None:
            for conn in list(self.amqp_server.connections):
                if conn.namespace is runtime:
                    conn.forced(f"namespace {runtime.name} {why}: reconnect")

    def hubs_changed(self) -> None:
        """The management API changed hubs: AMQP links to a hub made Disabled (or
        deleted) are detached, capture jobs follow their settings."""
        if self.amqp_server is not None:
            self.amqp_server.hubs_changed()
        if self.capture is not None:
            self.capture.reconcile(self.services.eventhubs, self.services.clock.now_ms())

    def add_namespace(self, ns) -> NamespaceRuntime:
        """Serve a namespace made at runtime (the management API), on the loop's thread:
        its log, coordinators and Event Hubs model, as if it had been configured."""
        from kafka_wire.eventhubs.attach import configure_namespace

        data_dir = Path(self.config.data_dir)
        runtime = self._open_namespace(data_dir, ns.name)
        self._open_coordinators(runtime, data_dir)
        self.services.eventhubs.namespaces[ns.name] = ns
        configure_namespace(self.services, runtime, ns)
        self.services.namespaces[ns.name] = runtime
        log.info("namespace %s created (%s tier) through the management API", ns.name, ns.tier.value)
        return runtime

    def remove_namespace(self, name: str) -> None:
        """Stop serving namespace ``name`` and delete its data (the management API),
        on the loop's thread: its connections are closed first."""
        import shutil

        from kafka_wire.coordinator.checkpoints.embedded import CHECKPOINTS_DIR
        from kafka_wire.eventhubs.schema_registry import STATE_DIR as SCHEMAS_DIR
        from kafka_wire.replication.store import GEO_DIR

        if name == self.services.default_namespace:
            raise ValueError(f"namespace {name!r} is the default namespace: it cannot be deleted")
        runtime = self.services.namespaces.pop(name)

        def close_connections() -> None:
            for server in self._servers():
                for conn in list(server.connections):
                    if conn.state is not None and conn.state.namespace is runtime:
                        conn.close()
            if self.amqp_server is not None:
                for conn in list(self.amqp_server.connections):
                    if conn.namespace is runtime:
                        conn.close()

        # The logs it serves from are closed before a geo-replica's regions are deleted:
        # after a promotion they are one of those regions, and closing fsyncs them.
        steps = [("closing its connections", close_connections),
                 ("closing its coordinators", lambda: self._close_coordinators(name)),
                 ("stopping its log cleaner", runtime.cleaner.stop if runtime.cleaner is not None else None),
                 ("closing its logs", runtime.topics.logs.close),
                 ("deleting its geo-replicas", runtime.geo.delete_data if runtime.geo is not None else None)]
        try:
            for what, step in steps:
                if step is None:
                    continue
                try:
                    step()
                except Exception:  # its data goes all the same: a half-deleted namespace is worse
                    log.exception("deleting namespace %s: %s failed", name, what)
        finally:
            # It is gone whatever failed above: no longer served, its name free, its data removed.
            self.services.eventhubs.namespaces.pop(name, None)
            data_dir = Path(self.config.data_dir)
            for directory in (data_dir / name, data_dir / CHECKPOINTS_DIR / name,
                              data_dir / "_transactions" / name, data_dir / GEO_DIR / name):
                shutil.rmtree(directory, ignore_errors=True)
            # its Schema Registry too: a namespace made later under its name starts without it
            (data_dir / SCHEMAS_DIR / f"{name}.json").unlink(missing_ok=True)
        log.info("namespace %s deleted through the management API", name)

    def _servers(self) -> list[KafkaServer]:
        """The Kafka listeners now running (fault injection drops their connections)."""
        return [s for s in (self.server, self.tls_server) if s is not None]

    def _attach_coordinators(self, data_dir: Path) -> None:
        for ns in self.services.namespaces.values():
            self._open_coordinators(ns, data_dir)
        self._closers.append(self._close_coordinators)

    def _open_coordinators(self, ns: NamespaceRuntime, data_dir: Path) -> None:
        from kafka_wire.groups_setup import open_groups
        from kafka_wire.txns_setup import open_transactions

        # Groups first: committing a transaction's offsets needs them.
        self._ns_closers[ns.name] = [open_groups(self.services, ns, data_dir),
                                     open_transactions(self.services, ns, data_dir)]

    def _close_coordinators(self, name: str | None = None) -> None:
        """Close one namespace's coordinators (None: every namespace's), last opened first."""
        for n in [name] if name is not None else list(self._ns_closers):
            for closer in reversed(self._ns_closers.pop(n, [])):
                try:
                    closer()
                except Exception:
                    log.exception("error while closing namespace %s", n)

    def _schedule_retention(self) -> None:
        interval = self.config.retention_check_interval_ms
        if interval <= 0:
            return
        self._retention_timer = self.clock.call_later(interval, self._run_retention)

    def _schedule_flush(self, delay_ms: int) -> None:
        self._flush_timer = self.clock.call_later(delay_ms, self._run_flush)

    def _run_flush(self) -> None:
        """flush.ms fires on a timer, not only on the next append; the fsyncs run
        off the event loop, one pass at a time."""
        self._flush_timer = None
        now = self.clock.now_ms()
        logs = [ns.topics.logs for ns in self.services.namespaces.values()]
        logs += [m for ns in self.services.namespaces.values() if ns.geo is not None
                 for m in ns.geo.secondary_logs()]  # a geo-replica's regions are flushed alike

        def flush_all() -> int | None:
            due = [m.flush_due(now) for m in logs]
            return min((d for d in due if d is not None), default=None)

        def again(done: asyncio.Future) -> None:
            if not self._serving:
                return
            if done.exception() is not None:
                log.error("log flush failed: %s", done.exception())
            smallest = None if done.exception() else done.result()
            self._schedule_flush(_FLUSH_CHECK_MS if smallest is None
                                 else max(_FLUSH_MIN_MS, min(smallest, _FLUSH_CHECK_MS)))

        self._loop.run_in_executor(self._flusher, flush_all).add_done_callback(again)

    def _run_retention(self) -> None:
        now = self.clock.now_ms()
        for ns in self.services.namespaces.values():
            try:
                ns.topics.logs.enforce_retention(now)
                ns.topics.logs.expire_producers(now)
            except Exception:
                log.exception("retention pass failed in namespace %s", ns.name)
        self._schedule_retention()

    async def stop(self) -> None:
        """Stop accepting, drop connections, flush and close the log."""
        self._serving = False  # /health answers 503 from here on
        if self.console is not None:
            self.console.stop()
            self.console = None
        if self.http is not None:
            await self.http.stop()
            self.http = None
        if self.capture is not None:  # its queries end before the log they read closes
            await asyncio.get_running_loop().run_in_executor(None, self.capture.stop)
            self.capture = None
        if self._retention_timer is not None:
            self._retention_timer.cancel()
            self._retention_timer = None
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        if self._flusher is not None:
            self._flusher.shutdown(wait=True)  # a flush in progress finishes first
            self._flusher = None
        if self.amqp_server is not None:
            await self.amqp_server.stop()
            self.amqp_server = None
        if self.tls_server is not None:
            await self.tls_server.stop()
            self.tls_server = None
        if self.server is not None:
            await self.server.stop()
            self.server = None
        for closer in reversed(self._closers):
            try:
                closer()
            except Exception:
                log.exception("error while closing")
        self._closers.clear()
        if self.services is not None:
            for ns in self.services.namespaces.values():
                if ns.cleaner is not None:
                    ns.cleaner.stop()
                if ns.geo is not None:
                    ns.geo.close()
                ns.topics.logs.close()
        self.logs = None


async def serve_forever(config: BrokerConfig, ready_line: bool = True) -> None:
    """Run until SIGINT/SIGTERM, then shut down cleanly."""
    import signal

    broker = Broker(config)
    try:
        await broker.start()
    except BaseException:
        await broker.stop()  # what did start (log cleaners, listeners) must not keep us alive
        raise
    # A broker process of its own (not an EmulatedBroker in someone's test process):
    # what start-up built lives as long as the broker, so the collector stops scanning
    # it, and young collections run less often. The AMQP paths allocate per event;
    # the collector was ~6% of their CPU.
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)
    log.info("kafka-wire ready: bootstrap.servers=%s (data dir %s)", broker.bootstrap_servers,
             Path(config.data_dir).resolve())
    if broker.tls_address is not None:
        log.info("kafka-wire SASL_SSL listener: %s, CA certificate: %s",
                 broker.tls_bootstrap_servers, broker.tls_ca_file or "(given by the config)")
    subscription = broker.services.subscription
    if broker.http is not None and subscription.required:
        log.info("management API: creating, deleting and listing namespaces needs the subscription's "
                 "bearer token: `kafka-wire token --management --data-dir %s`", config.data_dir)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        log.info("shutting down")
        await broker.stop()
