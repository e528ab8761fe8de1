"""Observability: the HTTP listener (health, Prometheus metrics, JSON API) and
the web console, served by the broker's own event loop.

:func:`attach` installs the metric hooks (:mod:`.metrics`) and returns a
:class:`Console` that the broker starts after its Kafka listener and stops
before it. With HTTP off (``BrokerConfig.http_listen_host = None``, the
in-process test broker's default) nothing is installed and the Kafka path is
untouched.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

from kafka_wire.console.capture_files import CaptureFiles
from kafka_wire.console.http_server import HttpServer
from kafka_wire.console.metrics import BrokerMetrics
from kafka_wire.console.views import ConsoleViews

log = logging.getLogger(__name__)

__all__ = ["Console", "attach", "BrokerMetrics"]


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("kafka-wire")
    except Exception:
        return "dev"


def capture_directories(services, configured: Path | None) -> list[Path]:
    """Where capture output (and its _capture_events.jsonl) lives: the configured
    directory, then each capture-enabled hub's destination."""
    dirs = [Path(configured)] if configured else []
    for ns in services.eventhubs.namespaces.values():
        for hub in ns.hubs.values():
            if hub.capture.enabled:
                dirs.append(Path(hub.capture.destination))
    return dirs


class Console:
    def __init__(self, services, metrics: BrokerMetrics, views: ConsoleViews,
                 ready: Callable[[], bool]) -> None:
        self.services = services
        self.metrics = metrics
        self.views = views
        self.http = HttpServer(views, ready)
        self.address: tuple[str, int] | None = None

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self.address = await self.http.start(host, port)
        self.views.start()
        log.info("console and metrics on http://%s:%d/ (health: /health, Prometheus: /metrics)",
                 *self.address)
        return self.address

    async def start_https(self, host: str, port: int, ssl) -> tuple[str, int]:
        """The same pages and REST API over TLS (the broker's certificate)."""
        address = await self.http.start(host, port, ssl=ssl)
        log.info("console, metrics and REST API on https://%s:%d/", *address)
        return address

    async def stop(self) -> None:
        self.views.stop()
        await self.http.stop()


def attach(services, *, ready: Callable[[], bool], connections: Callable[[], dict],
           capture_dir: Path | None = None) -> Console:
    """Install the metric hooks on ``services`` and build the console (not started)."""
    metrics = BrokerMetrics()
    services.observer = metrics
    for name, rt in services.namespaces.items():
        rt.topics.on_append = metrics.appender(name, rt.topics.on_append)
    capture = CaptureFiles(capture_directories(services, capture_dir),
                           discover=lambda: capture_directories(services, capture_dir))
    views = ConsoleViews(services, metrics, capture, connections, {"version": _version()})
    return Console(services, metrics, views, ready)
