"""kafka_wire.testing.config_toml writes TOML that reads back as the values it was given."""
from __future__ import annotations

import string
import tomllib

from hypothesis import example, given, settings, strategies as st

from kafka_wire.testing.config_toml import namespace_config, sas_policy, toml_text

# (no lone surrogates: they have no UTF-8, so no TOML file holds them)
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
KEYS = st.text(string.ascii_letters + string.digits + "_-", min_size=1, max_size=8) | TEXT
SCALARS = (st.booleans() | st.integers(-(2**63), 2**63 - 1) | TEXT
           | st.floats(allow_nan=False))  # (NaN is never equal to itself: checked apart)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4), max_leaves=8)
TABLES = st.recursive(st.dictionaries(KEYS, VALUES, max_size=4),
                      lambda inner: st.dictionaries(KEYS, inner | VALUES, max_size=4), max_leaves=12)


@settings(max_examples=400)
@example(doc={"a": {}, "b": {"c": {"d": 1}}, "": {"\x7f.\"'": "\x00\n\x7f\u212a"}})
@example(doc={"x": [[1, "2"], [], [1.5, True]], "y": -0.0})
@given(doc=TABLES)
def test_what_toml_text_writes_reads_back_as_it_was(doc):
    assert tomllib.loads(toml_text(doc)) == doc


def test_nan_and_infinities_read_back():
    back = tomllib.loads(toml_text({"t": {"n": float("nan"), "i": float("inf"), "m": float("-inf")}}))
    assert back["t"]["n"] != back["t"]["n"] and back["t"]["i"] == float("inf") == -back["t"]["m"]


def test_a_namespace_config_is_the_tables_the_loader_reads():
    doc = tomllib.loads(toml_text(namespace_config(
        "contoso", throughput_units=1, oauth={"hs256_keys": ["s"]},
        policies={"RootManageSharedAccessKey": sas_policy("cm9v"), "listen": sas_policy("bGk=", "Listen")},
        hubs={"orders": {"partitions": 2, "policies": {"owner": sas_policy("b3c=", "Manage", "Send")}}})))
    assert doc == {"default_namespace": "contoso", "namespaces": {"contoso": {
        "tier": "Standard", "throughput_units": 1, "oauth": {"hs256_keys": ["s"]},
        "policies": {"RootManageSharedAccessKey": {"primary_key": "cm9v"},
                     "listen": {"primary_key": "bGk=", "rights": ["Listen"]}},
        "eventhubs": {"orders": {"partitions": 2, "policies": {
            "owner": {"primary_key": "b3c=", "rights": ["Manage", "Send"]}}}}}}}
