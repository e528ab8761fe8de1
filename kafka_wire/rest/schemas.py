"""The Schema Registry REST API (``/$schemaGroups``), as ``azure-schemaregistry``
and its Avro encoder call it: register a schema, look up its id by content, get
a schema by id or by version, list groups and versions.

The namespace is the one the ``Host`` names; the bearer token is a JWT (where the
namespace has OAuth) or a SAS token. Rights are Azure's registry roles
(:mod:`kafka_wire.eventhubs.rights`): reading (the lists, a schema, and ``POST
...:get-id``, a lookup by content) takes Schema Registry Reader or Contributor,
registering (``PUT``) Contributor; Azure Event Hubs Data Owner does both. The Event
Hubs data roles (Sender, Receiver) grant no registry access. Azure's registry takes no
SAS tokens; here a namespace-wide SAS policy with Manage stands in for Data Owner, and
Send or Listen alone, like the roles they are, reach nothing. Groups come from the
management API.
"""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Callable, NamedTuple
from urllib.parse import quote

from kafka_wire.eventhubs.rights import SCHEMA_READERS, SCHEMA_WRITERS
from kafka_wire.eventhubs.schema_registry import RegistryError, Schema, SchemaRegistry
from kafka_wire.rest import arm
from kafka_wire.rest.http import Request, Response, error, nesting
from kafka_wire.whole_numbers import whole_number

if TYPE_CHECKING:
    from kafka_wire.context import NamespaceRuntime
    from kafka_wire.rest.api import RestApi

MAX_DEPTH = 128  # JSON levels: a record nesting 30 records deep uses about 120
# The service's largest schema; a larger body is refused before its nesting is counted
# (a Python loop over each character: 64 MiB held the broker's loop ~3 s).
MAX_SCHEMA_BYTES = 1024 * 1024
API_VERSIONS = frozenset({"2020-09-01-preview", "2021-10", "2022-10", "2023-07-01"})
_CONTENT_TYPES = {"avro": "application/json;serialization=Avro",
                  "json": "application/json;serialization=Json"}
_FORMAT_OF = {"application/json;serialization=avro": "Avro", "application/json;serialization=json": "Json"}
# The service's rule for a schema name (its API definition: at most 50 characters, a letter or
# digit first, no '\\', '/', '$' or ':'), narrowed to printable ASCII: the name is echoed in the
# answer's headers (Schema-Name, Location), where CR LF would split the answer and a character
# past Latin-1 cannot be written at all. (Avro full names are ASCII anyway.)
_SCHEMA_NAME = re.compile(r"[A-Za-z0-9][\x20-\x23\x25-\x2e\x30-\x39\x3b-\x5b\x5d-\x7e]{0,49}")


class NeedsRegistry(NamedTuple):
    """A route's answer that needs ``runtime``'s Schema Registry: ``answer(registry)``,
    called once by the REST router (:meth:`RestApi.handle`), at once where the registry
    is in, else when its read (off the loop) ends. A handler has no other way to the
    registry, so what it does before returning this (authorization, checks) cannot use
    or change it, and what changes it (a register, a group's put or delete) runs once,
    after the read: a request is never answered twice over."""
    runtime: NamespaceRuntime
    answer: Callable[[SchemaRegistry], Response]

    def around(self, wrap: Callable[[Callable[[], Response]], Response]) -> NeedsRegistry:
        """The same, its answer made by ``wrap(answer)``: ``answer()`` gives the one it had
        (a router maps its errors, or acts after a change, as for its other routes)."""
        answer = self.answer
        return self._replace(answer=lambda registry: wrap(lambda: answer(registry)))


def handle(api: RestApi, request: Request) -> Response | NeedsRegistry:
    version = request.query.get("api-version")
    if version not in API_VERSIONS:
        return arm.fail(400, "InvalidApiVersion" if version else "MissingApiVersion",
                        f"api-version {version!r} is not served: use one of {', '.join(sorted(API_VERSIONS))}")
    write = request.method == "PUT"  # (a POST is a read: :get-id looks an id up by content)
    runtime, principal, refused = api.authorize(request, None, SCHEMA_WRITERS if write else SCHEMA_READERS,
                                                namespace_wide=True)
    if refused is not None and principal is not None:  # a token without the registry's rights
        refused = error(401, f"the token ({principal}) may not {'register schemas in' if write else 'read'} "
                             f"the Schema Registry of namespace {runtime.name!r}: that takes the role "
                             f"Schema Registry {'Contributor' if write else 'Reader or Contributor'} or "
                             "Azure Event Hubs Data Owner (of SAS policies, a namespace-wide one with Manage)")
    if refused is not None:
        return _json_error(refused)
    return NeedsRegistry(runtime, lambda registry: _answer(request, registry))


def _answer(request: Request, registry: SchemaRegistry) -> Response:
    segs = request.segments[1:]
    low = [s.lower() for s in segs]
    try:
        if not segs:
            if request.method != "GET":
                return _not_allowed(request)
            return arm.ok({"Value": sorted(registry.groups)})
        if low[0] == "$schemas" and len(segs) == 2 and request.method == "GET":
            schema = registry.schemas.get(segs[1])
            if schema is None:
                return arm.fail(404, "ItemNotFound", f"no schema has id {segs[1]!r}")
            return _content(schema)
        if len(segs) < 3 or low[1] != "schemas":
            return arm.fail(404, "NotFound", f"no Schema Registry API at {request.path}")
        group, name = segs[0], segs[2]
        if len(segs) == 3 and request.method == "POST" and low[2].endswith(":get-id"):
            fmt = _format(request)
            schema = registry.find(group, name[:-len(":get-id")], fmt, _text(request))
            if schema is None:
                return arm.fail(404, "ItemNotFound", f"schema {name[:-7]!r} in group {group!r} has no "
                                                     "version with this content")
            return _properties(schema)
        if len(segs) == 3 and request.method == "PUT":
            problem = schema_name_error(name)
            if problem is not None:  # refused before anything is stored (a read finds no such name)
                return arm.fail(400, "BadRequest", problem)
            return _properties(registry.register(group, name, _format(request), _text(request)))
        if len(segs) >= 4 and low[3] == "versions" and request.method == "GET":
            if len(segs) == 4:
                versions = registry.versions(group, name)
                if versions is None:
                    return arm.fail(404, "ItemNotFound", f"schema {name!r} is not in group {group!r}")
                return arm.ok({"Value": versions})
            if len(segs) == 5 and (number := whole_number(segs[4])) is not None:
                schema = registry.version(group, name, number)
                if schema is None:
                    return arm.fail(404, "ItemNotFound", f"schema {name!r} in group {group!r} has no "
                                                         f"version {segs[4]}")
                return _content(schema)
        return _not_allowed(request)
    except RegistryError as exc:
        return arm.fail(exc.status, exc.code, str(exc))


def schema_name_error(name: str) -> str | None:
    """Why the Schema Registry refuses ``name`` (a sentence to act on), or None."""
    if _SCHEMA_NAME.fullmatch(name):
        return None
    shown = repr(name) if len(repr(name)) <= 60 else repr(name)[:57] + "..."
    return (f"schema name {shown} is invalid: use 1-50 printable ASCII characters, starting with a "
            "letter or digit, without '\\', '/', '$' or ':'")


def _format(request: Request) -> str:
    ctype = request.headers.get("content-type", "").replace(" ", "").lower()
    fmt = _FORMAT_OF.get(ctype)
    if fmt is None:
        raise RegistryError(415, "InvalidSchemaType", f"content type {ctype!r} is not an Avro or "
                                                      "JSON schema (application/json; serialization=Avro)")
    return fmt


def _text(request: Request) -> str:
    """The schema's text, nested no deeper than :data:`MAX_DEPTH` (a JSON reader and the
    Avro resolver recurse once a level: past Python's recursion limit they would fail)."""
    if len(request.body) > MAX_SCHEMA_BYTES:
        raise RegistryError(413, "RequestTooLarge", f"the schema is {len(request.body)} bytes: at most "
                                                    f"{MAX_SCHEMA_BYTES}")
    try:
        text = request.body.decode("utf-8")
    except UnicodeDecodeError:
        raise RegistryError(400, "InvalidSchema", "the schema is not UTF-8 text") from None
    if nesting(text) > MAX_DEPTH:
        raise RegistryError(400, "InvalidSchema", f"the schema nests deeper than {MAX_DEPTH} levels")
    return text


def _headers(schema: Schema) -> dict[str, str]:
    where = f"/$schemaGroups/{quote(schema.group, safe='')}/schemas/{quote(schema.name, safe='')}" \
            f"/versions/{schema.version}"  # a URL: a space in a name is %20 there
    return {"Schema-Id": schema.id, "Schema-Id-Location": f"/$schemaGroups/$schemas/{schema.id}",
            "Schema-Group-Name": schema.group, "Schema-Name": schema.name,
            "Schema-Version": str(schema.version), "Location": where}


def _properties(schema: Schema) -> Response:
    return Response(204, b"", _CONTENT_TYPES[schema.format.lower()], _headers(schema))


def _content(schema: Schema) -> Response:
    return Response(200, schema.content.encode(), _CONTENT_TYPES[schema.format.lower()], _headers(schema))


def _not_allowed(request: Request) -> Response:
    return arm.fail(405, "MethodNotAllowed", f"{request.method} is not allowed on {request.path}")


def _json_error(refused: Response) -> Response:
    """The REST API's refusal (XML) in the registry's JSON shape."""
    detail = refused.body.decode(errors="replace")
    if "<Detail>" in detail:
        detail = detail.split("<Detail>", 1)[1].rsplit("</Detail>", 1)[0]
    code = {401: "Unauthorized", 403: "Forbidden", 404: "NotFound"}.get(refused.status, "BadRequest")
    return Response(refused.status, json.dumps({"error": {"code": code, "message": detail}}).encode(),
                    arm.JSON)
