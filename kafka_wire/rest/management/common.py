"""What every management resource module shares: the request's scope (its
namespace, principal and resource id), a body read without trusting its shape,
and the ARM error answers.

Every malformed input is a :class:`BadRequest` (ARM's 400 ``BadRequest`` with
a message naming the field); nothing a client sends may reach the model as the
wrong type, so no request ends in a 500.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_wire.rest import arm
from kafka_wire.rest.http import Request, Response, nesting

if TYPE_CHECKING:
    from kafka_wire.context import NamespaceRuntime, Services
    from kafka_wire.rest.api import RestApi

MAX_DEPTH = 32  # far deeper than any ARM body; a deeper one is refused before it is built
# Far larger than any ARM body (128 IP rules are a few KB); a larger one is refused before its
# nesting is counted, a Python loop over each character (64 MiB held the loop ~3 s).
MAX_BODY = 1024 * 1024


class BadRequest(ValueError):
    """A body or parameter the service answers 400 for."""


class TooLarge(BadRequest):
    """A body past :data:`MAX_BODY`: ARM's 413."""


@dataclass(slots=True)
class Scope:
    """One request inside an existing namespace."""
    api: RestApi
    request: Request
    runtime: NamespaceRuntime
    base: str          # the namespace's resource id
    principal: object  # who the door let in (None: an open namespace, or the subscription)

    @property
    def services(self) -> Services:
        return self.api.services

    @property
    def method(self) -> str:
        return self.request.method

    def saved(self, what: str, *args) -> None:
        """Keep a change under the data directory (``ManagedState.<what>``)."""
        if self.api.state is not None:
            getattr(self.api.state, what)(*args)

    def missing(self, what: str, name: str) -> Response:
        return arm.fail(404, "NotFound", f"{what} {name!r} does not exist in namespace "
                                         f"{self.runtime.name!r}")


def no_route(request: Request) -> Response:
    return arm.fail(404, "NoRegisteredProviderFound" if "providers" not in request.path.lower()
                    else "NotFound", f"no management API at {request.path[:200]}")


def not_allowed(request: Request) -> Response:
    return arm.fail(405, "MethodNotAllowed", f"{request.method} is not allowed on {request.path[:200]}")


def deleted() -> Response:
    return Response(200, b"", arm.JSON)


def absent() -> Response:
    """DELETE of what does not exist: ARM's 204."""
    return Response(204, b"", arm.JSON)


def body(request: Request) -> dict:
    """The request's JSON object (empty without a body)."""
    if not request.body:
        return {}
    if len(request.body) > MAX_BODY:
        raise TooLarge(f"the request body is {len(request.body)} bytes: at most {MAX_BODY}")
    try:
        text = request.body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("the request body is not UTF-8 JSON") from None
    if nesting(text) > MAX_DEPTH:
        raise BadRequest(f"the request body nests deeper than {MAX_DEPTH} levels")
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise BadRequest(f"the request body is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadRequest("the request body must be a JSON object")
    return value


def props(doc: dict) -> dict:
    """``doc.properties`` (absent or null: empty)."""
    return obj(doc, "properties", "properties")


def obj(doc: dict, key: str, where: str) -> dict:
    value = doc.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadRequest(f"{where} must be a JSON object, not {_shown(value)}")
    return value


def whole(doc: dict, key: str, where: str, least: int | None = None) -> int | None:
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadRequest(f"{where} must be a whole number, not {_shown(value)}")
    if least is not None and value < least:
        raise BadRequest(f"{where} must be at least {least}, not {value}")
    return value


def text(doc: dict, key: str, where: str, longest: int = 1024) -> str | None:
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise BadRequest(f"{where} must be a string, not {_shown(value)}")
    if len(value) > longest or any(ord(c) < 32 for c in value):
        raise BadRequest(f"{where} must be at most {longest} printable characters")
    return value


def flag(doc: dict, key: str, where: str) -> bool | None:
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise BadRequest(f"{where} must be true or false, not {_shown(value)}")
    return value


def objects(doc: dict, key: str, where: str, most: int) -> list[dict]:
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or any(not isinstance(v, dict) for v in value):
        raise BadRequest(f"{where} must be a list of JSON objects")
    if len(value) > most:
        raise BadRequest(f"{where} lists {len(value)} entries: at most {most}")
    return value


def named(problem: str | None) -> None:
    """A name rule's refusal (:mod:`kafka_wire.eventhubs.names`) as a 400."""
    if problem is not None:
        raise BadRequest(problem)


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 60 else shown[:57] + "..."
