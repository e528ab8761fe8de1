"""Avro schema resolution (the Schema Registry's compatibility check) against
fastavro's own reader: when the check says a reader schema reads a writer's data,
fastavro reads a record written with the writer; when it says no, fastavro fails."""
from __future__ import annotations

import io
import json

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.eventhubs.avro_compat import SchemaError, incompatibility, parse

PRIMITIVES = ["int", "long", "float", "double", "string", "bytes", "boolean"]
VALUES = {"int": st.integers(-2**31, 2**31 - 1), "long": st.integers(-2**63, 2**63 - 1),
          "float": st.just(1.5), "double": st.floats(allow_nan=False, width=64),
          "string": st.text(max_size=10), "boolean": st.booleans(),
          # UTF-8, so that bytes promoted to string decode (the schemas cannot promise that)
          "bytes": st.text(max_size=10).map(str.encode)}
DEFAULTS = {"int": 0, "long": 0, "float": 0.0, "double": 0.0, "string": "", "bytes": "", "boolean": False}


def record(fields: list[tuple[str, str, bool]]) -> dict:
    """A record schema from (name, type, has a default)."""
    return {"type": "record", "name": "R", "namespace": "t",
            "fields": [dict(name=n, type=t, **({"default": DEFAULTS[t]} if d else {}))
                       for n, t, d in fields]}


field_lists = st.lists(st.tuples(st.sampled_from(PRIMITIVES), st.booleans()), min_size=1, max_size=5)


@settings(max_examples=300, deadline=None)
@given(st.data(), field_lists, field_lists)
def test_the_check_agrees_with_fastavro(data, writer_fields, reader_fields):
    # Field names overlap by position, so readers share, drop, add and retype fields.
    writer = record([(f"f{i}", t, d) for i, (t, d) in enumerate(writer_fields)])
    reader = record([(f"f{i}", t, d) for i, (t, d) in enumerate(reader_fields)])
    datum = {f["name"]: data.draw(VALUES[f["type"]]) for f in writer["fields"]}
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(writer), datum)
    verdict = incompatibility(json.dumps(reader), json.dumps(writer))
    buf.seek(0)
    try:
        fastavro.schemaless_reader(buf, fastavro.parse_schema(writer), fastavro.parse_schema(reader))
        read = True
    except Exception:  # fastavro's SchemaResolutionError (and kin)
        read = False
    assert (verdict is None) == read, verdict


def test_a_schema_reads_its_own_data_and_bad_schemas_are_refused():
    nested = {"type": "record", "name": "Node", "fields": [
        {"name": "value", "type": "int"},
        {"name": "next", "type": ["null", "Node"], "default": None},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B"]}}]}
    text = json.dumps(nested)
    assert incompatibility(text, text) is None
    for bad in ("{not json", json.dumps({"type": "record", "name": "X"}), json.dumps({"type": "Nope"})):
        with pytest.raises(SchemaError):
            parse(bad)
