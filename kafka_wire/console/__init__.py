"""Observability: the web console, its JSON API and Prometheus metrics, served
on the broker's HTTP listener (:mod:`kafka_wire.httpd`) beside the REST API.

:func:`attach` installs the metric hooks (:mod:`.metrics`) and returns a
:class:`Console` (its :class:`~.pages.ConsolePages` are what the listener
routes to) that the broker starts with its HTTP listener and stops before it.
With HTTP off (``BrokerConfig.http_listen_host = None``, the in-process test
broker's default) nothing is installed and the Kafka path is untouched.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

from kafka_wire.console.capture_files import CaptureFiles
from kafka_wire.console.metrics import BrokerMetrics
from kafka_wire.console.pages import ConsolePages
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
    def __init__(self, services, metrics: BrokerMetrics, views: ConsoleViews) -> None:
        self.services = services
        self.metrics = metrics
        self.views = views
        self.pages = ConsolePages(views)

    def start(self) -> None:
        self.views.start()

    def stop(self) -> None:
        self.views.stop()


def attach(services, *, connections: Callable[[], dict], capture_dir: Path | None = None) -> Console:
    """Install the metric hooks on ``services`` and build the console (not started)."""
    metrics = BrokerMetrics()
    services.observer = metrics
    for name, rt in services.namespaces.items():
        rt.topics.on_append = metrics.appender(name, rt.topics.on_append)
    capture = CaptureFiles(capture_directories(services, capture_dir),
                           discover=lambda: capture_directories(services, capture_dir))
    views = ConsoleViews(services, metrics, capture, connections, {"version": _version()})
    return Console(services, metrics, views)
