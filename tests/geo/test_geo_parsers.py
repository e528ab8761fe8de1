"""The parsers of outside input that geo management adds, under hypothesis: a
geoDataReplication body, a Geo-DR partner namespace (ARM id or name) and the
TOML ``[geo_dr.<alias>]`` tables either give a valid value or refuse with their
own error (ARM's BadRequest, the config's ValueError), never anything else."""
from __future__ import annotations

import tomllib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.eventhubs.config_file import load_toml
from kafka_wire.eventhubs.geo import location_error, max_lag_error
from kafka_wire.eventhubs.names import namespace_name_error
from kafka_wire.rest.management.common import BadRequest
from kafka_wire.rest.management.disaster_recovery import _partner_name
from kafka_wire.rest.management.geo_replication import wanted

VERSION = "2026-01-01"
json_scalars = st.none() | st.booleans() | st.integers(-10**12, 10**12) | st.floats(allow_nan=False) | \
    st.text(max_size=60)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4) |
                           st.dictionaries(st.text(max_size=12), inner, max_size=4), max_leaves=12)
regions = st.sampled_from(["westus", "eastus", "West US 2", "northeurope", "", "a", "x" * 41, "../etc",
                           "west/us", "WESTUS"])
location_entries = st.fixed_dictionaries({}, optional={
    "locationName": regions | json_scalars, "roleType": st.sampled_from(["Primary", "Secondary", "primary",
                                                                          "Tertiary", ""]) | json_scalars,
    "clusterArmId": json_scalars})
bodies = st.fixed_dictionaries({}, optional={
    "maxReplicationLagDurationInSeconds": st.sampled_from([0, 1, 299, 300, 86400, 86401, -1]) | json_scalars,
    "locations": st.lists(location_entries, max_size=10) | json_values})


@settings(max_examples=400, derandomize=True, deadline=None)
@given(st.one_of(bodies, json_values))
def test_geo_data_replication_body_is_valid_or_a_bad_request(g):
    try:
        want = wanted({"properties": {"geoDataReplication": g}}, VERSION)
    except BadRequest:
        return
    if want is None:
        assert not g  # absent or empty: no change asked
        return
    names = [want.primary, *want.secondaries]
    assert all(location_error(n) is None for n in names) and len(set(names)) == len(names)
    assert want.max_lag is None or max_lag_error(want.max_lag) is None


@settings(max_examples=400, derandomize=True, deadline=None)
@given(st.one_of(st.text(max_size=300), st.builds(
    lambda sub, rg, ns, tail: f"/subscriptions/{sub}/resourceGroups/{rg}/providers/Microsoft.EventHub/"
                              f"namespaces/{ns}{tail}",
    st.text(max_size=20), st.text(max_size=20), st.text(max_size=60), st.sampled_from(["", "/", "/x", "/.."]))))
def test_partner_namespace_is_a_namespace_name_or_a_bad_request(value):
    try:
        name = _partner_name(value)
    except BadRequest:
        return
    assert namespace_name_error(name) is None and "/" not in name


NAMESPACES = """
[namespaces.contoso-east]
tier = "Standard"
[namespaces.contoso-east.eventhubs.orders]
partitions = 1
[namespaces.contoso-west]
tier = "Standard"
[namespaces.contoso-basic]
tier = "Basic"
"""


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.dictionaries(st.sampled_from(["contoso-alias", "x", "contoso-east", "bad/alias", "a" * 60]),
                       st.fixed_dictionaries({}, optional={
                           "primary": st.sampled_from(["contoso-east", "contoso-west", "contoso-basic",
                                                       "nowhere-ns"]) | json_scalars,
                           "secondary": st.sampled_from(["contoso-east", "contoso-west", "contoso-basic",
                                                         "nowhere-ns"]) | json_scalars,
                           "extra": json_scalars}) | json_scalars, max_size=3))
def test_geo_dr_tables_pair_or_say_why(table):
    data = tomllib.loads(NAMESPACES)
    data["geo_dr"] = table
    try:
        model, _ = load_toml(data)
    except ValueError as exc:
        assert "geo_dr" in str(exc)
        return
    for pairing in model.geo_dr.values():
        assert pairing.secondary in model.namespaces and pairing.primary in model.namespaces
        assert not model.namespaces[pairing.secondary].hubs


def test_a_toml_pair_names_the_alias_in_its_refusal():
    data = tomllib.loads(NAMESPACES + '[geo_dr.contoso-alias]\nprimary = "contoso-east"\nsecondary = "contoso-basic"\n')
    with pytest.raises(ValueError, match=r"\[geo_dr.contoso-alias\]: namespace 'contoso-basic' is Basic"):
        load_toml(data)
