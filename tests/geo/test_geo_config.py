"""[namespaces.X.geo_replication] in the TOML config: valid tables load, every
malformed one is refused with a ValueError naming the key (never another
exception), and only Premium and Dedicated namespaces may have replicas."""
from __future__ import annotations

import tomllib

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafka_wire.eventhubs.config_file import load_toml
from kafka_wire.eventhubs.geo import (
    MAX_LAG_S, MAX_REPLICAS, MIN_ASYNC_LAG_S, GeoSettings, location_error, max_lag_error, parse_table,
)


def load(table: dict, tier: str = "Premium"):
    return load_toml({"namespaces": {"geonamespace1": {"tier": tier, "geo_replication": table}}})


def test_a_premium_namespace_loads_its_replicas():
    model, _ = load({"replicas": ["westus", "East US 2"], "max_replication_lag_seconds": 300})
    geo = model.namespaces["geonamespace1"].geo_replication
    assert (geo.primary, geo.locations, geo.max_lag_seconds) == ("westus", ["westus", "eastus2"], 300)
    assert geo.secondaries == ["eastus2"]


def test_primary_may_name_another_replica_and_lag_defaults_to_synchronous():
    model, _ = load({"replicas": ["westus", "eastus"], "primary": "eastus"}, tier="Dedicated")
    geo = model.namespaces["geonamespace1"].geo_replication
    assert (geo.primary, geo.max_lag_seconds) == ("eastus", 0)


@pytest.mark.parametrize("tier", ["Basic", "Standard"])
def test_other_tiers_are_refused_with_the_service_words(tier):
    with pytest.raises(ValueError, match="only on the Premium and Dedicated tiers"):
        load({"replicas": ["westus", "eastus"]}, tier=tier)


@pytest.mark.parametrize("table, words", [
    ({"replicas": ["westus"], "max_replication_lag_seconds": 60}, "5 minutes to 1 day"),
    ({"replicas": ["westus"], "max_replication_lag_seconds": 86401}, "out of range"),
    ({"replicas": ["westus"], "max_replication_lag_seconds": "300"}, "whole number"),
    ({"replicas": ["westus"], "max_replication_lag_seconds": True}, "whole number"),
    ({"replicas": []}, "replicas must list"),
    ({"replicas": "westus"}, "replicas must list"),
    ({"replicas": ["westus", "westus"]}, "listed twice"),
    ({"replicas": ["westus", "../etc"]}, "Azure region name"),
    ({"replicas": ["westus", "a" * 500]}, "Azure region name"),
    ({"replicas": ["westus", "x\u0000"]}, "Azure region name"),
    ({"replicas": ["westus"], "primary": "eastus"}, "not among the replicas"),
    ({"replicas": [f"r{i}x" for i in range(MAX_REPLICAS + 1)]}, f"at most {MAX_REPLICAS}"),
    ({"replicas": ["westus"], "lag": 5}, "unknown key"),
])
def test_malformed_tables_are_named(table, words):
    with pytest.raises(ValueError, match=words) as info:
        load(table)
    assert "geo_replication" in str(info.value)


def test_the_toml_text_form_loads():
    text = """
[namespaces.geonamespace1]
tier = "Premium"
[namespaces.geonamespace1.geo_replication]
replicas = ["westus", "eastus"]
max_replication_lag_seconds = 86400
"""
    model, _ = load_toml(tomllib.loads(text))
    assert model.namespaces["geonamespace1"].geo_replication.max_lag_seconds == MAX_LAG_S


toml_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False)
    | st.text(max_size=60),
    lambda inner: st.lists(inner, max_size=10) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=20)
tables = st.one_of(
    toml_values,
    st.fixed_dictionaries({}, optional={
        "replicas": st.lists(st.one_of(st.sampled_from(["westus", "eastus", "West US 2", "x", "1a", ""]),
                                       st.text(max_size=50), toml_values), max_size=10) | toml_values,
        "primary": st.sampled_from(["westus", "eastus"]) | toml_values,
        "max_replication_lag_seconds": st.sampled_from([0, 299, 300, 86400, 86401, -1]) | toml_values,
        "other": toml_values}))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables)
def test_any_table_loads_valid_or_is_refused_with_a_value_error(table):
    try:
        geo = parse_table(table, "[namespaces.n.geo_replication]")
    except ValueError as exc:
        assert "[namespaces.n.geo_replication]" in str(exc)
        return
    assert isinstance(geo, GeoSettings)
    assert geo.primary in geo.locations and len(set(geo.locations)) == len(geo.locations)
    assert 1 <= len(geo.locations) <= MAX_REPLICAS
    assert all(location_error(loc) is None for loc in geo.locations)
    assert max_lag_error(geo.max_lag_seconds) is None
    assert geo.max_lag_seconds == 0 or MIN_ASYNC_LAG_S <= geo.max_lag_seconds <= MAX_LAG_S
