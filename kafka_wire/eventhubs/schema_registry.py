"""A namespace's Schema Registry: schema groups (Avro or JSON, with a
compatibility mode) and their schemas, each version with its own id.

Groups are made through the management API (``schemagroups``); schemas through
the Schema Registry REST API (:mod:`kafka_wire.rest.schemas`). Registering the
content a schema already has returns its existing version, as the service
does; a new content is a new version, checked against the latest one under the
group's compatibility (Avro: Backward, the new schema reads data written with
the old; Forward, the old reads the new). Everything is kept in
``DATA_DIR/_schemas/{namespace}.json``: a journal of JSON lines, the first a snapshot of
the registry (its groups; a file written before 2026-11-28 may hold its versions there too)
and each later one a change (a group made or changed, a schema version), so a register
appends its own version and nothing else. Deleting a group rewrites the file (atomically)
without it, one version a line: its schemas leave the disk with it.

The registry is bounded as the service bounds it (:class:`~kafka_wire.eventhubs.bounds.Bounds`):
versions across all groups and the registry's total size, refused before anything is stored.

A namespace's registry is read from its file when first used, in a thread of its own
(:class:`Registries`), each version's digest with it: on the broker's loop 100 MB took
0.3-0.9 s, and the first lookup of a name as long again, which every Kafka, AMQP and HTTP
client waited out. The requests that need it meanwhile wait for that one read.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

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
                with open(path, "rb") as f:
                    self._load(f)
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                # Kept aside, not overwritten by the next change (every version it holds was
                # lost so): the operator may mend it and put it back.
                aside = path.with_name(f"{path.name}.unreadable-{uuid.uuid4().hex[:8]}")
                try:
                    path.rename(aside)
                except OSError as err:
                    aside = f"left in place: {err}"
                log.error("schema registry %s cannot be read (%s): starting empty; the file is kept "
                          "as %s", path, exc, aside)
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
    def _journal(self) -> bytes:
        """The whole registry as a journal: its groups (each schema name with no version yet)
        on the first line, then each version on a line of its own, as a register appends it.
        Not one line: reading a line is one call into the JSON parser, which holds the GIL,
        and a 100 MB line would hold the broker's loop however the file is read."""
        listed = {i for g in self.groups.values() for ids in g.versions.values() for i in ids}
        head = {"groups": {n: {"format": g.format, "compatibility": g.compatibility,
                               "properties": g.properties, "versions": {k: [] for k in g.versions}}
                           for n, g in self.groups.items()},
                "schemas": {i: {"group": s.group, "name": s.name, "version": s.version,  # (none, as
                                "format": s.format, "content": s.content}  # registers keep it)
                            for i, s in self.schemas.items() if i not in listed}}
        lines = [json.dumps(head, separators=(",", ":")).encode()]
        for g in self.groups.values():
            for ids in g.versions.values():
                for s in filter(None, map(self.schemas.get, ids)):
                    lines.append(json.dumps({"schema": s.id, "group": s.group, "name": s.name,
                                             "version": s.version, "format": s.format,
                                             "content": s.content}, separators=(",", ":")).encode())
        return b"\n".join(lines) + b"\n"

    def _save(self) -> None:
        """The whole registry as a new journal (atomically)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, self._journal())
        self._rewrite = False

    def _append(self, change: dict) -> None:
        """One change at the journal's end (fsynced, as the snapshot is): a register costs the
        size of its own schema, not of the registry."""
        if self.path is None:
            return
        if self._rewrite or not self.path.exists():
            self._save()  # a first line to append to: the registry before this change
        try:
            with open(self.path, "ab") as f:
                f.write(json.dumps(change, separators=(",", ":")).encode() + b"\n")
                f.flush()
                os.fsync(f.fileno())
        except OSError:
            # A full disk may have left part of the line: the next change must not follow it
            # (that line would be unreadable with lines after it, and the journal with it),
            # so it rewrites the journal whole from what is kept, which this change is not.
            self._rewrite = True
            raise

    def _load(self, f) -> None:
        """Read from the binary file ``f`` a line at a time: one version's line is the most
        a call into the JSON parser takes (it holds the GIL), and the file is never held whole."""
        first = f.readline()
        try:
            state = json.loads(first)  # the journal's first line
        except ValueError:
            state = json.loads(first + f.read())  # the older one-object file, over many lines
            self._rewrite = True  # not a journal to append to
        for n, g in state.get("groups", {}).items():
            self.groups[n] = SchemaGroup(n, g["format"], g["compatibility"], g.get("properties", {}),
                                         {k: list(v) for k, v in g.get("versions", {}).items()})
        for i, s in state.get("schemas", {}).items():
            self.schemas[i] = Schema(i, s["group"], s["name"], s["version"], s["format"], s["content"])
        broken = None
        for line in f:
            if not line.strip():
                continue
            if broken is not None:  # a line that cannot be read, and more after it
                raise broken
            try:
                change = json.loads(line)
            except ValueError as exc:
                broken = exc
                continue
            self._apply(change)
        if broken is not None:  # the last append, cut short by a crash: it was never acknowledged
            log.warning("schema registry %s: a torn last change is dropped", self.path)
            self._rewrite = True  # later appends must not follow a partial line
        self._size = sum(len(s.content.encode()) for s in self.schemas.values())

    def digest_all(self) -> None:
        """Each version's digest, computed now (off the loop) rather than at the first
        lookup of its name: 100 versions of 1 MB are 0.45 s of parsing (on an idle machine)."""
        for i, s in self.schemas.items():
            if i not in self._digests:
                self._digests[i] = _digest(s.content)

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


class RegistryLoading(Exception):
    """The namespace's registry is being read from its file, off the loop: what needs it
    waits for :meth:`wait`, then takes it (the REST router, which then answers the route
    once: :class:`kafka_wire.rest.schemas.NeedsRegistry`; :meth:`Registries.read`)."""

    def __init__(self, done: asyncio.Future) -> None:
        super().__init__("the Schema Registry is being read")
        self._done = done

    async def wait(self) -> None:
        # shielded: a waiter cancelled (its client gone) must not cancel the others' wait
        await asyncio.shield(self._done)


class _Read:
    """One registry's read in its own thread; ``done`` is resolved on the loop."""

    def __init__(self, path: Path, bounds: Bounds | None, loop: asyncio.AbstractEventLoop) -> None:
        self.path, self.bounds, self.loop = path, bounds, loop
        self.done: asyncio.Future = loop.create_future()
        self.registry: SchemaRegistry | None = None
        self.error: BaseException | None = None

    def run(self, then: Callable[[_Read], None]) -> None:
        try:
            registry = SchemaRegistry(self.path, self.bounds)
            try:
                registry.digest_all()
            except Exception:  # a lookup computes what is missing, as it did
                log.exception("schema registry %s: digests not computed", self.path)
            self.registry = registry
        except BaseException as exc:  # handed to the requests waiting for it
            self.error = exc
        finally:
            try:
                self.loop.call_soon_threadsafe(then, self)
            except RuntimeError:  # the loop is closed: the broker stopped meanwhile
                pass


class Registries:
    """Each namespace's Schema Registry, read from ``DATA_DIR/_schemas`` when first asked
    for, in a thread (a read of 100 MB held the broker's loop ~0.45 s). Requests arriving
    meanwhile wait for the same read (:class:`RegistryLoading`); none touches the registry
    before it is all in, so nothing is read twice or changed while being read."""

    def __init__(self, data_dir: Path | None, bounds_of: Callable[[str], Bounds | None]) -> None:
        self.data_dir = None if data_dir is None else Path(data_dir)
        self._bounds_of = bounds_of
        self._ready: dict[str, SchemaRegistry] = {}
        self._reading: dict[str, _Read] = {}

    def get(self, namespace: str) -> SchemaRegistry:
        """The namespace's registry; raises :class:`RegistryLoading` while its file is read
        (the first ask starts the read)."""
        found = self._ready.get(namespace)
        if found is not None:
            return found
        read = self._reading.get(namespace)
        if read is None:
            path = self._path(namespace)
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if path is None or loop is None or not path.exists():  # nothing to read, or no loop
                found = self._ready[namespace] = SchemaRegistry(path, self._bounds_of(namespace))
                return found
            read = self._reading[namespace] = _Read(path, self._bounds_of(namespace), loop)
            threading.Thread(target=read.run, args=(self._read,), daemon=True,
                             name=f"schema-registry-{namespace}").start()
        raise RegistryLoading(read.done)

    async def read(self, namespace: str) -> SchemaRegistry | None:
        """The namespace's registry for a caller that is not a REST route (the console):
        a read under way (or started here) is awaited, the loop serving others meanwhile;
        None where the read failed (the REST requests waiting for it get its error)."""
        for _ in range(3):  # (read again only where the namespace was deleted meanwhile)
            try:
                return self.get(namespace)
            except RegistryLoading as loading:
                try:
                    await loading.wait()
                except Exception:  # an unreadable file: shown without its schemas
                    log.warning("schema registry of %s not read: Avro bodies shown undecoded", namespace)
                    return None
        return None

    def forget(self, namespace: str) -> None:
        """Namespace ``namespace`` was deleted: a read under way is not kept."""
        self._ready.pop(namespace, None)
        self._reading.pop(namespace, None)

    def _path(self, namespace: str) -> Path | None:
        return None if self.data_dir is None else self.data_dir / STATE_DIR / f"{namespace}.json"

    def _read(self, read: _Read) -> None:
        """On the loop: a read ended."""
        for namespace, pending in list(self._reading.items()):
            if pending is read:
                del self._reading[namespace]
                if read.registry is not None:
                    self._ready[namespace] = read.registry
        if not read.done.done():
            if read.error is not None:
                read.done.set_exception(read.error)
            else:
                read.done.set_result(None)


def _digest(content: str) -> bytes:
    return hashlib.sha256(_canonical(content).encode()).digest()


def _canonical(content: str) -> str:
    try:
        return json.dumps(json.loads(content), sort_keys=True, separators=(",", ":"))
    except ValueError:
        return content.strip()
