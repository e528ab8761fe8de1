"""What one register may cost the broker: the Schema Registry's compatibility check
compares each pair of named types once and gives up, with a 400, past its budget
(a schema that reuses its records is not exponential work on the broker's loop); the
registry holds no more versions and bytes than the service's quotas, refused with 403
before anything is stored; a register appends its own version to the registry's
journal and parses only its own content."""
from __future__ import annotations

import dataclasses

import io
import json
import time

import fastavro
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.eventhubs import sas, schema_registry
from kafka_wire.eventhubs.avro_compat import incompatibility
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import MULTI_TOML, ROOT

HOST = "contoso.servicebus.windows.net"
GROUPS = "/subscriptions/s/resourceGroups/g/providers/Microsoft.EventHub/namespaces/contoso/schemagroups"
AVRO = {"Content-Type": "application/json;serialization=Avro"}


def call(broker, method: str, path: str, policy=ROOT, timeout: float = 10, **kw) -> requests.Response:
    token = sas.generate(sas.resource_uri(HOST), *policy, int(time.time()) + 600)
    headers = {"Host": HOST, "Authorization": token, **kw.pop("headers", {})}
    return requests.request(method, broker.http_url + path, headers=headers, timeout=timeout, **kw)


def make_group(broker, name: str, compatibility: str) -> None:
    answer = call(broker, "PUT", f"{GROUPS}/{name}?api-version=2024-01-01",
                  json={"properties": {"schemaType": "Avro", "schemaCompatibility": compatibility}})
    assert answer.status_code == 200, answer.text


def register(broker, group: str, name: str, schema, timeout: float = 10) -> requests.Response:
    """Registered with the namespace's Manage policy (Send alone does not reach the registry)."""
    return call(broker, "PUT", f"/$schemaGroups/{group}/schemas/{name}?api-version=2023-07-01",
                headers=AVRO, data=json.dumps(schema), timeout=timeout)


def doubled(depth: int, level: int = 0) -> dict:
    """Records R0..R{depth}, each using the next one twice (inline, then by name)."""
    if level == depth:
        return {"type": "record", "name": f"R{level}", "fields": []}
    return {"type": "record", "name": f"R{level}",
            "fields": [{"name": "a", "type": doubled(depth, level + 1)},
                       {"name": "b", "type": f"R{level + 1}"}]}


def test_a_schema_reusing_its_records_is_checked_once_per_pair_of_records(tmp_path):
    # Compared once per path, depth 22 was 2**22 record comparisons: ~30 s of the broker's loop.
    with EmulatedBroker(tmp_path, config_file=MULTI_TOML, http=True) as broker:
        make_group(broker, "g", "Backward")
        v1 = doubled(22)
        assert register(broker, "g", "s", v1).status_code == 204
        second = register(broker, "g", "s", dict(v1, doc="v2"), timeout=5)
        assert (second.status_code, second.headers["Schema-Version"]) == (204, "2")
        assert requests.get(broker.http_url + "/health", timeout=5).status_code == 200
        # A real incompatibility deep in the shared records is still found.
        v3 = json.loads(json.dumps(dict(v1, doc="v3")).replace(
            '"fields": []', '"fields": [{"name": "x", "type": "int"}]'))
        third = register(broker, "g", "s", v3, timeout=5)
        assert third.status_code == 400
        assert "field " + "a." * 22 + "x was added without a default" in third.json()["error"]["message"]


def test_a_check_past_its_budget_is_refused_with_400(tmp_path):
    # Two unions of 1,200 records, the new one reading the old (Backward): each written
    # record is tried against the reader's in turn, ~720,000 comparisons (budget: 100,000).
    union = [{"type": "record", "name": f"R{i}", "fields": [{"name": "f", "type": "int"}]}
             for i in range(1200)]
    with EmulatedBroker(tmp_path, config_file=MULTI_TOML, http=True) as broker:
        make_group(broker, "g", "Backward")
        assert register(broker, "g", "s", union).status_code == 204
        answer = register(broker, "g", "s", union + ["null"])
        assert answer.status_code == 400, answer.text
        error = answer.json()["error"]
        assert error["code"] == "InvalidSchema" and "100000 steps" in error["message"]
        assert call(broker, "GET", "/$schemaGroups/g/schemas/s/versions?api-version=2023-07-01").json() \
            == {"Value": [1]}  # nothing stored
        # The same change in a group without a compatibility mode is not checked at all.
        make_group(broker, "free", "None")
        assert register(broker, "free", "s", union).status_code == 204
        assert register(broker, "free", "s", union + ["null"]).status_code == 204


# -- the memoized check against fastavro, on records that share records ------------------------

PRIMS = ["int", "long", "float", "double", "string", "bytes", "boolean"]
VALUES = {"int": 7, "long": 2**40, "float": 1.5, "double": 2.5, "string": "s", "bytes": b"b",
          "boolean": True}


@st.composite
def dags(draw):
    """Records R0..Rn-1 where a field of Ri is a primitive or a later Rj (used any number of
    times): as (writer fields, reader fields) per record, the reader's a changed copy."""
    n = draw(st.integers(1, 5))
    writer, reader = [], []
    for i in range(n):
        types = draw(st.lists(st.one_of(st.sampled_from(PRIMS),
                                        st.integers(i + 1, n - 1).map(lambda j: f"R{j}") if i + 1 < n
                                        else st.sampled_from(PRIMS)), min_size=1, max_size=3))
        w = [(f"f{k}", t, False) for k, t in enumerate(types)]
        r = []
        for name, t, _ in w:
            change = draw(st.sampled_from(["keep", "keep", "keep", "retype", "drop"]))
            if change == "retype" and t in PRIMS:
                t = draw(st.sampled_from(PRIMS))
            if change != "drop":
                r.append((name, t, False))
        if draw(st.booleans()):
            r.append(("extra", "int", draw(st.booleans())))  # added, with or without a default
        writer.append(w)
        reader.append(r)
    return writer, reader


def emit(records: list, i: int = 0, defined: set | None = None) -> dict | str:
    """Ri as Avro JSON: defined the first time it is met, then referred to by name."""
    defined = set() if defined is None else defined
    if i in defined:
        return f"R{i}"
    defined.add(i)
    fields = []
    for name, t, has_default in records[i]:
        field = {"name": name, "type": emit(records, int(t[1:]), defined) if t.startswith("R") else t}
        if has_default:
            field["default"] = 0
        fields.append(field)
    return {"type": "record", "name": f"R{i}", "fields": fields}


def datum(records: list, i: int = 0) -> dict:
    return {name: datum(records, int(t[1:])) if t.startswith("R") else VALUES[t]
            for name, t, _ in records[i]}


@settings(max_examples=300, deadline=None, derandomize=True)
@given(dags())
def test_the_check_agrees_with_fastavro_and_compares_each_pair_of_records_once(pair):
    writer_records, reader_records = pair
    writer, reader = emit(writer_records), emit(reader_records)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(writer), datum(writer_records))
    buf.seek(0)
    try:
        fastavro.schemaless_reader(buf, fastavro.parse_schema(writer), fastavro.parse_schema(reader))
        read = True
    except Exception:  # fastavro's SchemaResolutionError (and kin)
        read = False
    # Each pair of records is compared once: a step for the pair, one per reader field.
    budget = 1 + sum(1 + len(fields) for fields in reader_records)
    verdict = incompatibility(json.dumps(reader), json.dumps(writer), max_steps=budget)
    assert (verdict is None) == read, verdict


# -- the registry's quotas, and what a register writes -----------------------------------------

def versions(broker, group: str, name: str) -> list[int]:
    answer = call(broker, "GET", f"/$schemaGroups/{group}/schemas/{name}/versions?api-version=2023-07-01")
    return answer.json()["Value"] if answer.status_code == 200 else []


def padded(tag: str, size: int = 0) -> dict:
    return {"type": "record", "name": "R", "doc": tag + "x" * size, "fields": [{"name": "a", "type": "int"}]}


def test_versions_and_size_past_the_namespaces_quota_are_refused_before_anything_is_stored(
        tmp_path, monkeypatch):
    with EmulatedBroker(tmp_path, config_file=MULTI_TOML, http=True) as broker:
        # Small quotas, as [limits] sets them: 6 versions, 3 MB in all (read when the
        # namespace's registry is first used).
        policy = broker.broker.services.namespaces["contoso"].policy
        policy.bounds = dataclasses.replace(policy.bounds, schema_versions_per_namespace=6,
                                            schema_registry_megabytes=3)
        make_group(broker, "g", "None")
        make_group(broker, "h", "None")
        big = 1000 * 1024  # under the service's 1 MB a schema
        for i in range(3):
            assert register(broker, "g", "big", padded(str(i), big)).status_code == 204
        refused = register(broker, "g", "big", padded("3", big))  # a 4th MB
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["code"] == "QuotaExceeded" and "3 MB" in refused.json()["error"]["message"]
        assert versions(broker, "g", "big") == [1, 2, 3]
        for i in range(3):
            assert register(broker, "h", "small", padded(str(i))).status_code == 204
        refused = register(broker, "h", "small", padded("7"))  # a 7th version in the namespace
        assert refused.status_code == 403 and "no more than 6 schemas" in refused.json()["error"]["message"]
        assert versions(broker, "h", "small") == [1, 2, 3]
        again = register(broker, "h", "small", padded("1"))  # a content it has is not a new version
        assert (again.status_code, again.headers["Schema-Version"]) == (204, "2")
        # Deleting a group frees its share, on disk too.
        size = (broker.data_dir / "_schemas" / "contoso.json").stat().st_size
        assert size > 3 * big
        assert call(broker, "DELETE", f"{GROUPS}/g?api-version=2024-01-01").status_code == 200
        assert (broker.data_dir / "_schemas" / "contoso.json").stat().st_size < 10_000
        assert register(broker, "h", "small", padded("7")).status_code == 204


def test_a_register_appends_its_version_and_parses_only_its_own_content(tmp_path, monkeypatch):
    parsed = []
    canonical = schema_registry._canonical
    monkeypatch.setattr(schema_registry, "_canonical", lambda text: parsed.append(1) or canonical(text))
    data_dir = tmp_path / "data"
    with EmulatedBroker(data_dir, config_file=MULTI_TOML, http=True) as broker:
        make_group(broker, "g", "None")
        journal = broker.data_dir / "_schemas" / "contoso.json"
        assert register(broker, "g", "s", padded("0")).status_code == 204
        inode, size = journal.stat().st_ino, journal.stat().st_size
        parsed.clear()
        for i in range(1, 40):
            schema = json.dumps(padded(str(i), 2000))
            assert register(broker, "g", "s", json.loads(schema)).status_code == 204
            # the file is not rewritten: it grows by this version's line
            assert journal.stat().st_ino == inode
            assert 0 < journal.stat().st_size - size - len(schema) < 300
            size = journal.stat().st_size
        assert len(parsed) == 39  # each register parsed its own content, not every version before it
        assert call(broker, "POST", "/$schemaGroups/g/schemas/s:get-id?api-version=2023-07-01",
                    headers=AVRO, data=json.dumps(padded("5", 2000))).headers["Schema-Version"] == "6"
    # A crash cut the last append short: that version (never acknowledged) is dropped, the rest kept.
    journal.write_bytes(journal.read_bytes()[:-50])
    with EmulatedBroker(data_dir, config_file=MULTI_TOML, http=True) as broker:
        assert versions(broker, "g", "s") == list(range(1, 40))
        assert register(broker, "g", "s", padded("last")).status_code == 204
        assert versions(broker, "g", "s") == list(range(1, 41))


# -- the journal, as a parser: what was written is what is read back ---------------------------

operations = st.lists(st.one_of(
    st.tuples(st.just("group"), st.sampled_from(["a", "b"]), st.sampled_from(["None", "Backward"])),
    st.tuples(st.just("register"), st.sampled_from(["a", "b"]), st.sampled_from(["s", "t"]),
              st.integers(0, 5)),
    st.tuples(st.just("delete"), st.sampled_from(["a", "b"]))), max_size=12)


def state(registry) -> tuple:
    return ({n: (g.format, g.compatibility, dict(g.properties), {k: list(v) for k, v in g.versions.items()})
             for n, g in registry.groups.items()},
            {i: (s.group, s.name, s.version, s.content) for i, s in registry.schemas.items()})


@settings(max_examples=150, deadline=None, derandomize=True)
@given(operations, st.integers(1, 40))
def test_the_journal_reads_back_what_was_written_and_drops_a_torn_last_change(tmp_path_factory, ops, cut):
    path = tmp_path_factory.mktemp("journal") / "ns.json"
    registry = schema_registry.SchemaRegistry(path)
    before_last = None
    for op in ops:
        before_last = state(registry)
        try:
            if op[0] == "group":
                registry.put_group(op[1], "Avro", op[2], {"k": op[1]})
            elif op[0] == "register":
                registry.register(op[1], op[2], "Avro", json.dumps(
                    {"type": "record", "name": "R", "fields": [{"name": f"f{op[3]}", "type": "int",
                                                                "default": 0}]}))
            else:
                registry.delete_group(op[1])
        except schema_registry.RegistryError:
            pass
    assert state(schema_registry.SchemaRegistry(path)) == state(registry)
    if not path.exists() or before_last is None:
        return
    data = path.read_bytes()
    lines = data.rstrip(b"\n").split(b"\n")
    # The last operation appended a line (a deleted group rewrites the file, atomically: a
    # crash leaves the file before or after it, never torn).
    if len(lines) > 1 and state(registry) != before_last and ops[-1][0] != "delete":
        path.write_bytes(data[:len(data) - 1 - min(cut, len(lines[-1]))])
        assert state(schema_registry.SchemaRegistry(path)) == before_last


def test_a_registry_kept_in_the_older_one_object_file_is_read_and_carried_on(tmp_path):
    path = tmp_path / "ns.json"
    schema = json.dumps({"type": "record", "name": "R", "fields": []})
    path.write_text(json.dumps({  # as the registry wrote it before it was a journal
        "groups": {"g": {"format": "Avro", "compatibility": "None", "properties": {},
                         "versions": {"s": ["id1"]}}},
        "schemas": {"id1": {"group": "g", "name": "s", "version": 1, "format": "Avro",
                            "content": schema}}}, indent=1))
    registry = schema_registry.SchemaRegistry(path)
    assert registry.find("g", "s", "Avro", schema).id == "id1"
    second = registry.register("g", "s", "Avro", json.dumps({"type": "record", "name": "R", "doc": "2",
                                                            "fields": []}))
    again = schema_registry.SchemaRegistry(path)
    assert state(again) == state(registry) and again.version("g", "s", 2).id == second.id


def test_an_unreadable_registry_is_kept_aside_not_overwritten_by_the_next_change(tmp_path, caplog):
    # It started empty and its next change overwrote the file: every version was lost.
    path = tmp_path / "ns.json"
    registry = schema_registry.SchemaRegistry(path)
    schema = json.dumps({"type": "record", "name": "R", "fields": []})
    registry.put_group("g", "Avro", "None", {})
    registry.register("g", "s", "Avro", schema)
    registry.register("g", "s", "Avro", json.dumps({"type": "record", "name": "R", "doc": "2", "fields": []}))
    lines = path.read_bytes().split(b"\n")
    damaged = b"\n".join([lines[0], b"{not json", *lines[1:]])  # a line unread, with lines after it
    path.write_bytes(damaged)
    with caplog.at_level("ERROR"):
        fresh = schema_registry.SchemaRegistry(path)
    assert fresh.groups == {} and not path.exists()
    [aside] = tmp_path.glob("ns.json.unreadable-*")
    assert aside.read_bytes() == damaged and str(aside) in caplog.text
    fresh.put_group("h", "Avro", "None", {})
    fresh.register("h", "t", "Avro", schema)
    assert aside.read_bytes() == damaged
    assert list(schema_registry.SchemaRegistry(path).groups) == ["h"]
