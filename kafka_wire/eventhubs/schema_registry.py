"""A namespace's Schema Registry: schema groups (Avro or JSON, with a
compatibility mode) and their schemas, each version with its own id.

Groups are made through the management API (``schemagroups``); schemas through
the Schema Registry REST API (:mod:`kafka_wire.rest.schemas`). Registering the
content a schema already has returns its existing version, as the service
does; a new content is a new version, checked against the latest one under the
group's compatibility (Avro: Backward, the new schema reads data written with
the old; Forward, the old reads the new). Everything is kept in
``DATA_DIR/_schemas/{namespace}.json``: a journal of JSON lines, the first a snapshot of
the registry and each later one a change (a group made or changed, a schema version), so
a register appends its own version and nothing else. Deleting a group
rewrites the file (atomically) without it: its schemas leave the disk with it.

The registry is bounded as the service bounds it (:class:`~kafka_wire.eventhubs.bounds.Bounds`):
versions across all groups and the registry's total size, refused before anything is stored.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from kafka_wire.eventhubs import avro_compat
from kafka_wire.eventhubs.bounds import Bounds
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
    def __init__(self, path: Path | None, bounds: Bounds | None = None) -> None:
        self.path = path
        self.bounds = bounds or Bounds()
        self.groups: dict[str, SchemaGroup] = {}
        self.schemas: dict[str, Schema] = {}
        self._size = 0  # UTF-8 bytes of every version's content
        self._digests: dict[str, bytes] = {}  # id -> digest of its canonical content, once computed
        self._rewrite = False  # the file is not a journal to append to: the next change rewrites it
        if path is not None and path.exists():
            try:
                self._load(path.read_bytes())
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                log.error("schema registry %s cannot be read (%s): starting empty", path, exc)
                self.groups, self.schemas, self._size, self._rewrite = {}, {}, 0, True

    @classmethod
    def for_namespace(cls, data_dir: Path | None, namespace: str,
                      bounds: Bounds | None = None) -> SchemaRegistry:
        return cls(None if data_dir is None else Path(data_dir) / STATE_DIR / f"{namespace}.json", bounds)

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
        if group is not None and group.format != fmt_value and group.versions:
            raise RegistryError(400, "BadRequest", f"schema group {group.name!r} holds "
                                                   f"{group.format} schemas: its type cannot change")
        change = {"group": name if group is None else group.name, "format": fmt_value,
                  "compatibility": comp, "properties": dict(properties)}
        self._append(change)  # on disk first: a change that cannot be kept is not made
        return self._apply(change)

    def delete_group(self, name: str) -> bool:
        group = self.group(name)
        if group is None:
            return False
        for ids in group.versions.values():
            for i in ids:
                gone = self.schemas.pop(i, None)
                self._digests.pop(i, None)
                if gone is not None:
                    self._size -= len(gone.content.encode())
        del self.groups[group.name]
        self._save()  # rewritten: a deleted group's schemas must not stay on disk
        return True

    # -- schemas ---------------------------------------------------------------------------------
    def register(self, group_name: str, name: str, fmt: str, content: str) -> Schema:
        group = self._group_for(group_name, fmt)
        wanted = _digest(content)
        existing = self._find(group, name, wanted)
        if existing is not None:
            return existing
        self._check_bounds(group, name, content)
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
        self._append({"schema": schema.id, "group": schema.group, "name": name,
                      "version": schema.version, "format": schema.format, "content": content})
        ids.append(schema.id)
        self.schemas[schema.id] = schema
        self._digests[schema.id] = wanted
        self._size += len(content.encode())
        log.info("schema %s/%s version %d registered (id %s)", group.name, name, schema.version, schema.id)
        return schema

    def find(self, group_name: str, name: str, fmt: str, content: str) -> Schema | None:
        """The version of ``name`` whose content is ``content`` (ignoring whitespace)."""
        return self._find(self._group_for(group_name, fmt), name, _digest(content))

    def _find(self, group: SchemaGroup, name: str, wanted: bytes) -> Schema | None:
        # Each version's digest is computed once: a lookup parses the asked content only,
        # not every stored version (120 versions of 1 MB took ~0.8 s a register).
        for i in group.versions.get(name, []):
            digest = self._digests.get(i)
            if digest is None:
                digest = self._digests[i] = _digest(self.schemas[i].content)
            if digest == wanted:
                return self.schemas[i]
        return None

    def _check_bounds(self, group: SchemaGroup, name: str, content: str) -> None:
        """The service's quotas, checked before anything is stored (403, as the service
        answers a register over its schema quota, SubCode 40300)."""
        most = self.bounds.schema_versions_per_namespace
        if len(self.schemas) >= most:
            raise RegistryError(403, "QuotaExceeded", f"Cannot create schema {name} in group "
                                f"{group.name} because no more than {most} schemas is allowed. "
                                f"Currently there are {len(self.schemas)} schemas in the namespace: "
                                "delete a schema group, or raise [limits] schema_versions_per_namespace")
        most_mb = self.bounds.schema_registry_megabytes
        size = len(content.encode())
        if self._size + size > most_mb * 1024 * 1024:
            raise RegistryError(403, "QuotaExceeded", f"Cannot create schema {name} in group "
                                f"{group.name}: the namespace's schema registry holds "
                                f"{self._size} bytes and may hold {most_mb} MB; this schema has "
                                f"{size} bytes: delete a schema group, or raise [limits] "
                                "schema_registry_megabytes")

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
    def _snapshot(self) -> dict:
        return {"groups": {n: {"format": g.format, "compatibility": g.compatibility,
                               "properties": g.properties, "versions": g.versions}
                           for n, g in self.groups.items()},
                "schemas": {i: {"group": s.group, "name": s.name, "version": s.version,
                                "format": s.format, "content": s.content}
                            for i, s in self.schemas.items()}}

    def _save(self) -> None:
        """The whole registry as the journal's one line (atomically)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(self._snapshot(), separators=(",", ":")).encode() + b"\n")
        self._rewrite = False

    def _append(self, change: dict) -> None:
        """One change at the journal's end (fsynced, as the snapshot is): a register costs the
        size of its own schema, not of the registry."""
        if self.path is None:
            return
        if self._rewrite or not self.path.exists():
            self._save()  # a first line to append to: the registry before this change
        with open(self.path, "ab") as f:
            f.write(json.dumps(change, separators=(",", ":")).encode() + b"\n")
            f.flush()
            os.fsync(f.fileno())

    def _load(self, data: bytes) -> None:
        lines = data.split(b"\n")
        try:
            state = json.loads(data)  # the journal's first line alone, or the older one-object file
            lines, torn = [], False
            self._rewrite = b"\n" in data.rstrip()  # the older file, over many lines: not a journal
        except ValueError:
            state = json.loads(lines[0])
            lines = [line for line in lines[1:] if line.strip()]
            torn = False
        for n, g in state.get("groups", {}).items():
            self.groups[n] = SchemaGroup(n, g["format"], g["compatibility"], g.get("properties", {}),
                                         {k: list(v) for k, v in g.get("versions", {}).items()})
        for i, s in state.get("schemas", {}).items():
            self.schemas[i] = Schema(i, s["group"], s["name"], s["version"], s["format"], s["content"])
        for k, line in enumerate(lines):
            try:
                change = json.loads(line)
            except ValueError:
                if k != len(lines) - 1:
                    raise
                torn = True  # the last append, cut short by a crash: it was never acknowledged
                log.warning("schema registry %s: a torn last change is dropped", self.path)
                break
            self._apply(change)
        self._size = sum(len(s.content.encode()) for s in self.schemas.values())
        self._rewrite = self._rewrite or torn  # later appends must not follow a partial line

    def _apply(self, change: dict) -> SchemaGroup | None:
        if "schema" in change:
            schema = Schema(change["schema"], change["group"], change["name"], change["version"],
                            change["format"], change["content"])
            self.schemas[schema.id] = schema
            self.groups[schema.group].versions.setdefault(schema.name, []).append(schema.id)
        elif "group" in change:
            group = self.groups.get(change["group"])
            if group is None:
                group = self.groups[change["group"]] = SchemaGroup(change["group"])
            group.format, group.compatibility = change["format"], change["compatibility"]
            group.properties = dict(change.get("properties", {}))
            return group
        else:
            raise ValueError(f"unknown change {sorted(change)}")


def _digest(content: str) -> bytes:
    return hashlib.sha256(_canonical(content).encode()).digest()


def _canonical(content: str) -> str:
    try:
        return json.dumps(json.loads(content), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return content.strip()
