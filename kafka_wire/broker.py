"""Assembles one broker: log manager, topics, coordinators, listener.

Used by the CLI (``kafka-wire serve``) and by ``kafka_wire.testing``.
"""
from __future__ import annotations

import asyncio
import logging
import uuid
from pathlib import Path

from coordinator.clock import SystemClock
from coordinator.producer_ids import ProducerIdManager
from kafka_wire.config import BrokerConfig
from kafka_wire.context import ClusterInfo, NamespaceRuntime, Services
from kafka_wire.server import KafkaServer
from kafka_wire.topics import TopicManager
from log.config import LogConfig
from log.manager import LogManager

log = logging.getLogger(__name__)


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
        self._closers: list = []

    @property
    def bootstrap_servers(self) -> str:
        host, port = self.address
        return f"{host}:{port}"

    async def start(self) -> tuple[str, int]:
        cfg = self.config
        data_dir = Path(cfg.data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        clock = self.clock or SystemClock()
        self.clock = clock
        cluster = ClusterInfo(cfg.node_id, cfg.advertise_host or cfg.listen_host,
                              cfg.advertise_port or cfg.listen_port, _cluster_id(data_dir, cfg.cluster_id))
        self.services = Services(cluster=cluster, config=cfg, clock=clock, topics=None,
                                 default_namespace=cfg.default_namespace)
        for name in dict.fromkeys([cfg.default_namespace, *cfg.namespaces]):
            self.services.namespaces[name] = self._open_namespace(data_dir, name)
        default = self.services.namespaces[cfg.default_namespace]
        self.services.topics = default.topics
        self.logs = default.topics.logs
        self.services.extra["producer_ids"] = ProducerIdManager(data_dir / "producer-ids")
        self._attach_coordinators(data_dir)
        self.server = KafkaServer(self.services)
        host, port = await self.server.start(cfg.listen_host, cfg.listen_port)
        # Port 0 means "pick one": advertise what we actually got.
        cluster.host = cfg.advertise_host or host
        cluster.port = cfg.advertise_port or port
        self.address = (cluster.host, cluster.port)
        self._schedule_retention()
        return self.address

    def _open_namespace(self, data_dir: Path, name: str) -> NamespaceRuntime:
        cfg = self.config
        default_log = LogConfig.from_kafka(cfg.topic_defaults) if cfg.topic_defaults else LogConfig()
        logs = LogManager(data_dir / name, default_log)
        topics = TopicManager(logs, num_partitions=cfg.num_partitions,
                              auto_create=cfg.auto_create_topics, topic_defaults={})
        return NamespaceRuntime(name=name, topics=topics)

    def _attach_coordinators(self, data_dir: Path) -> None:
        try:
            from kafka_wire.groups_setup import attach_groups
        except ImportError:  # consumer groups not built into this tree
            return
        closer = attach_groups(self.services, data_dir)
        if closer is not None:
            self._closers.append(closer)

    def _schedule_retention(self) -> None:
        interval = self.config.retention_check_interval_ms
        if interval <= 0:
            return
        self._retention_timer = self.clock.call_later(interval, self._run_retention)

    def _run_retention(self) -> None:
        now = self.clock.now_ms()
        for ns in self.services.namespaces.values():
            try:
                ns.topics.logs.enforce_retention(now)
            except Exception:
                log.exception("retention pass failed in namespace %s", ns.name)
        self._schedule_retention()

    async def stop(self) -> None:
        """Stop accepting, drop connections, flush and close the log."""
        if self._retention_timer is not None:
            self._retention_timer.cancel()
            self._retention_timer = None
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
                ns.topics.logs.close()
        self.logs = None


async def serve_forever(config: BrokerConfig, ready_line: bool = True) -> None:
    """Run until SIGINT/SIGTERM, then shut down cleanly."""
    import signal

    broker = Broker(config)
    await broker.start()
    log.info("kafka-wire ready: bootstrap.servers=%s (data dir %s)", broker.bootstrap_servers,
             Path(config.data_dir).resolve())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        log.info("shutting down")
        await broker.stop()
