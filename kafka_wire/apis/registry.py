"""Handlers register the API versions they serve; dispatch and ApiVersions read it.

A handler is ``def handle(request, ctx) -> response | None`` or an ``async def``
of the same shape. ``request`` is the decoded kafka-python message (its
``API_VERSION`` says which version arrived); ``ctx`` is a
:class:`kafka_wire.context.RequestContext`. Returning ``None`` sends nothing
(Produce with acks=0). We never advertise a version nobody registered.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from kafka_wire import codec


@dataclass(frozen=True, slots=True)
class Registration:
    api_key: int
    min_version: int
    max_version: int
    handler: Callable[..., Any]
    # Requests allowed before SASL authentication completes.
    pre_auth: bool = False


_REGISTRY: dict[int, Registration] = {}


def handles(api_key: int, min_version: int, max_version: int, *, pre_auth: bool = False):
    """Register ``fn`` as the handler of ``api_key`` for the given version range."""
    codec_max = codec.max_codec_version(api_key)
    if codec_max < 0:
        raise ValueError(f"no codec for api key {api_key}")
    if max_version > codec_max:
        raise ValueError(f"api key {api_key}: codec stops at v{codec_max}, not v{max_version}")

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        if api_key in _REGISTRY:
            raise ValueError(f"api key {api_key} registered twice")
        _REGISTRY[api_key] = Registration(api_key, min_version, max_version, fn, pre_auth)
        return fn

    return register


def lookup(api_key: int) -> Registration | None:
    return _REGISTRY.get(api_key)


def advertised() -> list[tuple[int, int, int]]:
    return sorted((r.api_key, r.min_version, r.max_version) for r in _REGISTRY.values())


def load_all() -> None:
    """Import every API module so their decorators run."""
    import importlib
    import pkgutil

    import kafka_wire.apis as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name != "registry":
            importlib.import_module(f"kafka_wire.apis.{mod.name}")
