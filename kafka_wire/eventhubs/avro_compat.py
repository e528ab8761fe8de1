"""Avro schema resolution, as the Schema Registry's compatibility modes need it:
can data written with one schema be read with another? (Avro 1.11 spec,
"Schema Resolution": promotions, record fields by name with defaults, enum
symbols, unions branch by branch, names resolved within each schema.)"""
from __future__ import annotations

import json

_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
_PROMOTIONS = {("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"),
               ("long", "double"), ("float", "double"), ("string", "bytes"), ("bytes", "string")}


class SchemaError(ValueError):
    """Not an Avro schema."""


def parse(text: str):
    try:
        schema = json.loads(text)
    except ValueError:
        schema = text.strip()  # a bare primitive name
        if schema not in _PRIMITIVES:
            raise SchemaError(f"not JSON and not an Avro primitive: {text[:80]!r}") from None
    names: dict[str, object] = {}
    _collect(schema, names, None)
    return schema, names


def _fullname(s: dict, namespace: str | None) -> str:
    name = s["name"]
    if "." in name:
        return name
    ns = s.get("namespace", namespace)
    return f"{ns}.{name}" if ns else name


def _collect(s, names: dict, namespace: str | None) -> None:
    if isinstance(s, str):
        if s not in _PRIMITIVES and s not in names and f"{namespace}.{s}" not in names:
            raise SchemaError(f"unknown type {s!r}")
        return
    if isinstance(s, list):
        for branch in s:
            _collect(branch, names, namespace)
        return
    if not isinstance(s, dict) or "type" not in s:
        raise SchemaError(f"a schema must be a type name, a union or an object with a type: {s!r}")
    kind = s["type"]
    if kind in ("record", "error", "enum", "fixed"):
        if not isinstance(s.get("name"), str):
            raise SchemaError(f"a {kind} needs a name")
        if not isinstance(s.get("namespace", ""), (str, type(None))) or not _names(s.get("aliases", [])):
            raise SchemaError(f"{kind} {s['name']}: a namespace is a string, aliases a list of strings")
        full = _fullname(s, namespace)
        names[full] = s
        inner_ns = full.rsplit(".", 1)[0] if "." in full else None
        if kind in ("record", "error"):
            if not isinstance(s.get("fields"), list):
                raise SchemaError(f"record {full} needs a list of fields")
            for f in s["fields"]:
                if not isinstance(f, dict) or not isinstance(f.get("name"), str) or "type" not in f \
                        or not _names(f.get("aliases", [])):  # names are compared and hashed as strings
                    raise SchemaError(f"record {full}: a field needs a string name, a type and any "
                                      "aliases as a list of strings")
                _collect(f["type"], names, inner_ns)
        elif kind == "enum" and not (isinstance(s.get("symbols"), list) and _names(s["symbols"])):
            raise SchemaError(f"enum {full} needs symbols")
        elif kind == "fixed" and (not isinstance(s.get("size"), int) or isinstance(s["size"], bool)):
            raise SchemaError(f"fixed {full} needs a size")
    elif kind == "array":
        _collect(s.get("items"), names, namespace)
    elif kind == "map":
        _collect(s.get("values"), names, namespace)
    else:
        _collect(kind, names, namespace)


def _names(value) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _resolve(s, names: dict, suffixes: dict):
    if isinstance(s, str) and s not in _PRIMITIVES:
        key = s if s in names else suffixes.get(s)  # a short name: the first full name it ends
        if key is not None:
            return names[key]
    if isinstance(s, dict) and isinstance(s.get("type"), str) and s["type"] in _PRIMITIVES and len(s) == 1:
        return s["type"]
    if isinstance(s, dict) and isinstance(s.get("type"), (str, list, dict)) and \
            s["type"] not in ("record", "error", "enum", "fixed", "array", "map"):
        return _resolve(s["type"], names, suffixes)  # a primitive with attributes (a logical type)
    return s


def _suffixes(names: dict) -> dict:
    """Each dotted tail of each full name -> the first full name (in definition order) with
    that tail: one lookup instead of a scan of every name at each reference."""
    out: dict[str, str] = {}
    for full in names:
        parts = full.split(".")
        for i in range(1, len(parts)):
            out.setdefault(".".join(parts[i:]), full)
    return out


def _kind(s) -> str:
    if isinstance(s, str):
        return s
    if isinstance(s, list):
        return "union"
    return "record" if s["type"] == "error" else s["type"]


# Comparisons one check may make. Each pair of named types is compared once (memoized), so
# real schemas need a few per field: 100,000 is ~0.2 s of the broker's loop, far past any
# schema a person writes, and the bound on what a crafted pair of schemas (unions of many
# records against many) can cost.
MAX_STEPS = 100_000


class CheckTooLong(ValueError):
    """The check would take more than its budget of comparisons."""


def incompatibility(reader_text: str, writer_text: str, max_steps: int = MAX_STEPS) -> str | None:
    """Why data written with ``writer_text`` cannot be read with ``reader_text``, or None.
    Raises :class:`CheckTooLong` past ``max_steps`` comparisons."""
    reader, rnames = parse(reader_text)
    writer, wnames = parse(writer_text)
    return _Check(rnames, wnames, max_steps).check(reader, writer, "")


class _Check:
    """One check: the named-type pairs already compared (or being compared) and the
    comparisons left. A pair in progress counts as compatible (a recursive type, or one
    met again further down): as in Avro's own SchemaCompatibility, which memoizes the
    same way. Without the memo a record used twice by its parent, at each of 30 levels,
    would be compared 2**30 times."""

    def __init__(self, rn: dict, wn: dict, max_steps: int) -> None:
        self.rn, self.wn = rn, wn
        self.rs, self.ws = _suffixes(rn), _suffixes(wn)
        self.memo: dict[tuple[int, int], str | None] = {}
        self.left = max_steps
        self.max_steps = max_steps

    def check(self, r, w, path: str) -> str | None:
        self.left -= 1
        if self.left < 0:
            raise CheckTooLong(f"comparing the schemas takes more than {self.max_steps} steps")
        r, w = _resolve(r, self.rn, self.rs), _resolve(w, self.wn, self.ws)
        rk, wk = _kind(r), _kind(w)
        where = path or "the schema"
        if wk == "union":
            for branch in w:
                why = self.check(r, branch, path)
                if why:
                    return why
            return None
        if rk == "union":
            if any(self.check(branch, w, path) is None for branch in r):
                return None
            return f"{where}: no branch of the reader's union reads the writer's {wk}"
        if rk in _PRIMITIVES or wk in _PRIMITIVES:
            if rk == wk or (wk, rk) in _PROMOTIONS:
                return None
            return f"{where}: the writer's {wk} cannot be read as {rk}"
        if rk != wk:
            return f"{where}: the writer's {wk} cannot be read as {rk}"
        if rk == "array":
            return self.check(r["items"], w["items"], f"{path}[]")
        if rk == "map":
            return self.check(r["values"], w["values"], f"{path}{{}}")
        key = (id(r), id(w))
        if key in self.memo:  # compared already, or being compared (recursion)
            return self.memo[key]
        self.memo[key] = None
        why = self.memo[key] = self._named(rk, r, w, path)
        return why

    def _named(self, kind: str, r: dict, w: dict, path: str) -> str | None:
        where = path or "the schema"
        # names, aliases and symbols are compared in time of their number: charge for it
        self.left -= len(r.get("aliases", ())) + len(w.get("symbols", ()))
        if r["name"].rsplit(".", 1)[-1] != w["name"].rsplit(".", 1)[-1] and \
                w["name"] not in r.get("aliases", []):
            return f"{where}: named types differ ({w['name']} written, {r['name']} read)"
        if kind == "fixed":
            return None if r["size"] == w["size"] else f"{where}: fixed sizes differ"
        if kind == "enum":
            symbols = set(r["symbols"])
            missing = [s for s in w["symbols"] if s not in symbols]
            if missing and "default" not in r:
                more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
                return f"{where}: the reader's enum lacks {', '.join(missing[:10])}{more} and has no default"
            return None
        return self._fields(r, w, path)

    def _fields(self, r: dict, w: dict, path: str) -> str | None:
        written = {f["name"]: f for f in w["fields"]}
        for f in r["fields"]:
            source = written.get(f["name"]) or next(
                (written[a] for a in f.get("aliases", []) if a in written), None)
            name = f"{path}.{f['name']}" if path else f["name"]
            if source is None:
                if "default" not in f:
                    return f"field {name} was added without a default"
                continue
            why = self.check(f["type"], source["type"], name)
            if why:
                return why
        return None
