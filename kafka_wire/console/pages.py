"""What the console serves on the broker's HTTP listener (:mod:`kafka_wire.httpd`):
``/`` and ``/static/*`` (the web console), ``/metrics`` (Prometheus text
format) and its JSON API under ``/api/`` (:mod:`kafka_wire.console.api`,
documented in docs/console-api.md)."""
from __future__ import annotations

import json
from importlib import resources
from typing import Coroutine

from kafka_wire.console import prometheus
from kafka_wire.console.api import ConsoleApi, refuse
from kafka_wire.console.views import ConsoleViews
from kafka_wire.rest.http import Later, Request, Response

_STATIC_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                 ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
_JSON = "application/json; charset=utf-8"


def _load_static() -> dict[str, tuple[bytes, str]]:
    files = {}
    root = resources.files("kafka_wire.console") / "static"
    for entry in root.iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1]
        if entry.is_file() and suffix in _STATIC_TYPES:
            files[entry.name] = (entry.read_bytes(), _STATIC_TYPES[suffix])
    return files


class ConsolePages:
    def __init__(self, views: ConsoleViews) -> None:
        self.views = views
        self.api = ConsoleApi(views)
        self.static = _load_static()

    def handles_post(self, path: str) -> bool:
        return self.api.handles_post(path)

    def refuse_unread(self, request: Request, size: int) -> Response | None:
        return self.api.refuse_unread(request.segments[1:], request.headers, request.peer, size,
                                      request.signed_in)

    def post(self, request: Request) -> Response | Later:
        return self.api.post(request.segments[1:], request.headers, request.peer, request.body,
                             request.signed_in)

    @staticmethod
    def failed() -> Response:
        return refuse(500, "internal error: see the broker log")

    def get(self, request: Request) -> Response | Coroutine:
        path = request.path.rstrip("/") or "/"
        if path == "/metrics":
            return Response(200, prometheus.render(self.views).encode(), prometheus.CONTENT_TYPE)
        if path in ("/", "/index.html"):
            return self._static("index.html")
        if path.startswith("/static/"):
            return self._static(path[len("/static/"):])
        if not path.startswith("/api/"):
            return Response(404, _json({"error": f"no page at {path[:200]}: the console is at /"}), _JSON)
        return self.api.get(path[len("/api/"):].split("/"), request.query, request.headers,
                            request.peer)

    def _static(self, name: str) -> Response:
        found = self.static.get(name)
        if found is None:
            return Response(404, _json({"error": f"no static file {name[:200]!r}"}), _JSON)
        return Response(200, found[0], found[1])


def _json(value) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()
