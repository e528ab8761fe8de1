"""A namespace's Schema Registry: schema groups (Avro or JSON, with a
compatibility mode) and their schemas, each version with its own id.

Groups are made through the management API (``schemagroups``); schemas through
the Schema Registry REST API (:mod:`kafka_wire.rest.schemas`). Registering the
content a schema already has returns its existing version, as the service
does; a new content is a new version, checked against the latest one under the
group's compatibility (Avro: Backward, the new schema reads data written with
the old; Forward, the old reads the new). Everything is kept in
``DATA_DIR/_schemas/{namespace}.json``, rewritten (atomically) on each change.
"""
from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kafka_wire.eventhubs import avro_compat
from kafka_wire.log.recovery import write_atomic

log = logging.getLogger(__name__)

STATE_DIR = "_schemas"
FORMATS = {"avro": "Avro", "json": "Json"}
COMPATIBILITY = {"none": "None", "backward": "Backward", "forward": "Forward"}


class RegistryError(ValueError):
    """A request the registry refuses: ``status`` and the service's error code."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


@dataclass(slots=True)
class Schema:
    id: str
    group: str
    name: str
    version: int
    format: str
    content: str


@dataclass(slots=True)
class SchemaGroup:
    name: str
    format: str = "Avro"
    compatibility: str = "None"
    properties: dict = field(default_factory=dict)
    versions: dict[str, list[str]] = field(default_factory=dict)  # schema name -> ids by version


class SchemaRegistry:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.groups: dict[str, SchemaGroup] = {}
        self.schemas: dict[str, Schema] = {}
        if path is not None and path.exists():
            try:
                self._load(json.loads(path.read_text()))
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.error("schema registry %s cannot be read (%s): starting empty", path, exc)

    @classmethod
    def for_namespace(cls, data_dir: Path | None, namespace: str) -> SchemaRegistry:
        return cls(None if data_dir is None else Path(data_dir) / STATE_DIR / f"{namespace}.json")

    # -- groups (the management API) -----------------------------------------------------
    def group(self, name: str) -> SchemaGroup | None:
        return self.groups.get(name) or next(
            (g for n, g in self.groups.items() if n.lower() == name.lower()), None)

    def put_group(self, name: str, fmt: str, compatibility: str, properties: dict) -> SchemaGroup:
        fmt_value = FORMATS.get(str(fmt).lower())
        comp = COMPATIBILITY.get(str(compatibility).lower())
        if fmt_value is None:
            raise RegistryError(400, "BadRequest", f"schemaType {fmt!r} is not Avro or Json")
        if comp is None:
            raise RegistryError(400, "BadRequest", f"schemaCompatibility {compatibility!r} is not "
                                                   "None, Backward or Forward")
        if fmt_value == "Json" and comp != "None":
            raise RegistryError(400, "BadRequest", "JSON schema groups take no compatibility mode")
        group = self.group(name)
        if group is None:
            group = self.groups[name] = SchemaGroup(name, fmt_value, comp, dict(properties))
        elif group.format != fmt_value and group.versions:
            raise RegistryError(400, "BadRequest", f"schema group {group.name!r} holds "
                                                   f"{group.format} schemas: its type cannot change")
        else:
            group.format, group.compatibility, group.properties = fmt_value, comp, dict(properties)
        self._save()
        return group

    def delete_group(self, name: str) -> bool:
        group = self.group(name)
        if group is None:
            return False
        for ids in group.versions.values():
            for i in ids:
                self.schemas.pop(i, None)
        del self.groups[group.name]
        self._save()
        return True

    # -- schemas ---------------------------------------------------------------------------------
    def register(self, group_name: str, name: str, fmt: str, content: str) -> Schema:
        group = self._group_for(group_name, fmt)
        existing = self.find(group_name, name, fmt, content)
        if existing is not None:
            return existing
        self._validate(group, content)
        ids = group.versions.setdefault(name, [])
        if ids and group.compatibility != "None":
            latest = self.schemas[ids[-1]].content
            reader, writer = (content, latest) if group.compatibility == "Backward" else (latest, content)
            try:
                why = avro_compat.incompatibility(reader, writer)
            except avro_compat.CheckTooLong as exc:
                raise RegistryError(400, "InvalidSchema", f"the schema cannot be checked for "
                                    f"{group.compatibility} compatibility with version {len(ids)} of "
                                    f"{name!r}: {exc}; share fewer named types across unions, or use "
                                    "a group whose compatibility is None") from None
            if why is not None:
                raise RegistryError(400, "InvalidSchema", f"the schema is not {group.compatibility} "
                                    f"compatible with version {len(ids)} of {name!r}: {why}")
        schema = Schema(uuid.uuid4().hex, group.name, name, len(ids) + 1, group.format, content)
        ids.append(schema.id)
        self.schemas[schema.id] = schema
        self._save()
        log.info("schema %s/%s version %d registered (id %s)", group.name, name, schema.version, schema.id)
        return schema

    def find(self, group_name: str, name: str, fmt: str, content: str) -> Schema | None:
        """The version of ``name`` whose content is ``content`` (ignoring whitespace)."""
        group = self._group_for(group_name, fmt)
        wanted = _canonical(content)
        for i in group.versions.get(name, []):
            if _canonical(self.schemas[i].content) == wanted:
                return self.schemas[i]
        return None

    def version(self, group_name: str, name: str, version: int) -> Schema | None:
        group = self.group(group_name)
        ids = group.versions.get(name, []) if group else []
        return self.schemas[ids[version - 1]] if 1 <= version <= len(ids) else None

    def versions(self, group_name: str, name: str) -> list[int] | None:
        group = self.group(group_name)
        if group is None or name not in group.versions:
            return None
        return list(range(1, len(group.versions[name]) + 1))

    def _group_for(self, group_name: str, fmt: str) -> SchemaGroup:
        group = self.group(group_name)
        if group is None:
            raise RegistryError(404, "ItemNotFound", f"schema group {group_name!r} does not exist: "
                                                     "create it with the management API first")
        if fmt.lower() != group.format.lower():
            raise RegistryError(415, "InvalidSchemaType", f"schema group {group.name!r} holds "
                                                          f"{group.format} schemas, not {fmt}")
        return group

    @staticmethod
    def _validate(group: SchemaGroup, content: str) -> None:
        try:
            if group.format == "Avro":
                avro_compat.parse(content)
            else:
                json.loads(content)
        except (avro_compat.SchemaError, ValueError) as exc:
            raise RegistryError(400, "InvalidSchema", f"not a valid {group.format} schema: {exc}") from None

    # -- storage -------------------------------------------------------------------------------------
    def _save(self) -> None:
        if self.path is None:
            return
        state = {"groups": {n: {"format": g.format, "compatibility": g.compatibility,
                                "properties": g.properties, "versions": g.versions}
                            for n, g in self.groups.items()},
                 "schemas": {i: {"group": s.group, "name": s.name, "version": s.version,
                                 "format": s.format, "content": s.content}
                             for i, s in self.schemas.items()}}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(state, indent=1).encode())

    def _load(self, state: dict) -> None:
        for n, g in state.get("groups", {}).items():
            self.groups[n] = SchemaGroup(n, g["format"], g["compatibility"], g.get("properties", {}),
                                         {k: list(v) for k, v in g.get("versions", {}).items()})
        for i, s in state.get("schemas", {}).items():
            self.schemas[i] = Schema(i, s["group"], s["name"], s["version"], s["format"], s["content"])


def _canonical(content: str) -> str:
    try:
        return json.dumps(json.loads(content), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return content.strip()
