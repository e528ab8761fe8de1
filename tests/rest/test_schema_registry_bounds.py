"""What one register may cost the broker: the Schema Registry's compatibility check
compares each pair of named types once and gives up, with a 400, past its budget
(a schema that reuses its records is not exponential work on the broker's loop)."""
from __future__ import annotations

import io
import json
import time

import fastavro
import requests
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.eventhubs import sas
from kafka_wire.eventhubs.avro_compat import incompatibility
from kafka_wire.testing import EmulatedBroker
from tests.amqp.conftest import MULTI_TOML, ROOT

HOST = "contoso.servicebus.windows.net"
GROUPS = "/subscriptions/s/resourceGroups/g/providers/Microsoft.EventHub/namespaces/contoso/schemagroups"
SENDER = ("sender", "c2VuZC1rZXk=")
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
    return call(broker, "PUT", f"/$schemaGroups/{group}/schemas/{name}?api-version=2023-07-01",
                policy=SENDER, headers=AVRO, data=json.dumps(schema), timeout=timeout)


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
