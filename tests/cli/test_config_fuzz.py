"""Whatever a config file holds, loading it either gives a model the door would accept or
fails with the config error (ValueError, one line naming the file): Config.json-shaped JSON
with any value in any slot, TOML of kafka-wire's shape with any value in any slot, and
arbitrary bytes under either name. A model that loads names nothing that could leave the
data directory (every namespace, hub and consumer group name passes the door's name rule)
and has no case twins."""
from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire.eventhubs.config_file import load
from kafka_wire.eventhubs.names import consumer_group_name_error, hub_name_error, namespace_name_error

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

scalars = (st.none() | st.booleans() | st.integers() | st.integers(-2**70, 2**70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)
def _maybe(strategy):
    """The expected shape most of the time, anything at all otherwise."""
    return _mostly(strategy, values, 9)


def _mostly(usual, other, times: int):
    """``usual`` ``times`` draws in ``times + 1`` (one_of would draw the two alike)."""
    return st.sampled_from([usual] * times + [other]).flatmap(lambda chosen: chosen)


hostile_names = (st.sampled_from(["../x", "/etc/passwd", "a\x00b", "..", ".", "$Default", "$default", "capture",
                                  "producer-ids", "x" * 300, "a/b", "a\\b", "\u202eevil", "", "CONTOSO-NS"])
                 | st.text(max_size=16))
good_names = st.sampled_from(["orders", "ORDERS", "Orders", "eh1", "payments", "a.b_c-d"])
names = _mostly(good_names, hostile_names, 3)
namespace_names = _mostly(st.sampled_from(["contoso-ns", "emulatorNs1", "tenant-two"]), names, 3)
hostile_counts = st.integers(-3, 40) | st.sampled_from([0, 33, 2**63, -2**63, 10**30]) | st.sampled_from(["2", "1e999"])
good_counts = st.integers(1, 8)
counts = _mostly(good_counts, hostile_counts, 3)


entity = st.fixed_dictionaries(
    {"Name": _maybe(names), "PartitionCount": _maybe(counts)},
    optional={"ConsumerGroups": _maybe(st.lists(_maybe(st.fixed_dictionaries({"Name": _maybe(names)})),
                                                max_size=4))})
config_json = st.fixed_dictionaries({"UserConfig": _maybe(st.fixed_dictionaries({
    "NamespaceConfig": _maybe(st.lists(_maybe(st.fixed_dictionaries(
        {"Type": _maybe(st.just("EventHub")), "Entities": _maybe(st.lists(entity, min_size=1, max_size=4))},
        optional={"Name": _maybe(namespace_names)})), min_size=1, max_size=2)),
    "LoggingConfig": _maybe(st.fixed_dictionaries({"Type": _maybe(st.sampled_from(["Console", "File"]))}))}))})

capture = st.fixed_dictionaries({}, optional={
    "enabled": _maybe(st.booleans()), "destination": _maybe(names),
    "name_format": _maybe(st.sampled_from(["{Namespace}/{EventHub}/{PartitionId}/{Year}/{Month}/{Day}/{Hour}/"
                                           "{Minute}/{Second}", "../{Namespace}/{EventHub}/{PartitionId}/{Year}/"
                                           "{Month}/{Day}/{Hour}/{Minute}/{Second}"])),
    "interval_seconds": _maybe(counts), "size_limit_bytes": _maybe(counts)})
hub = st.fixed_dictionaries({}, optional={
    "partitions": _maybe(counts), "retention_hours": _maybe(counts), "cleanup_policy": _maybe(names),
    "tombstone_retention_hours": _maybe(counts), "consumer_groups": _maybe(st.lists(names, max_size=4)),
    "capture": _maybe(capture), "durability": _maybe(st.sampled_from(["crash", "power-loss", "x"]))})
namespace = st.fixed_dictionaries({}, optional={
    "tier": _maybe(st.sampled_from(["Basic", "Standard", "Premium", "Dedicated"])),
    "mode": _maybe(st.sampled_from(["relaxed", "strict"])), "throughput_units": _maybe(counts),
    "default_partitions": _maybe(counts), "default_retention_hours": _maybe(counts),
    "hosts": _maybe(st.lists(names, max_size=2)), "eventhubs": _maybe(st.dictionaries(names, _maybe(hub), max_size=4))})
toml_doc = st.fixed_dictionaries({"namespaces": _maybe(st.dictionaries(namespace_names, _maybe(namespace), min_size=1,
                                                                       max_size=2))},
                                 optional={"default_namespace": _maybe(namespace_names),
                                           "limits": _maybe(st.dictionaries(st.sampled_from(
                                               ["partitions_per_hub", "hubs_per_namespace", "consumer_groups_per_hub",
                                                "partitions_per_namespace", "namespaces"]), _maybe(counts), max_size=3)),
                                           "server": _maybe(st.dictionaries(st.sampled_from(
                                               ["num_partitions", "data_dir", "durability"]), values, max_size=2))})


def _toml(value) -> str:
    """A TOML value (inline tables all the way down); None, which TOML lacks, as an empty table."""
    if value is None:
        return "{}"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"


def _toml_text(doc) -> str:
    if not isinstance(doc, dict):
        return f"x = {_toml(doc)}\n"
    return "".join(f"{json.dumps(k)} = {_toml(v)}\n" for k, v in doc.items())


@pytest.fixture(scope="module")
def place():
    with tempfile.TemporaryDirectory(prefix="kw-config-fuzz-") as d:
        yield Path(d)


def _loads_or_refuses(path: Path) -> None:
    try:
        model, _settings = load(path)
    except ValueError as exc:
        assert str(exc).startswith(str(path)) or str(exc).startswith(f"cannot read config file {path}"), exc
        assert "\n" not in str(exc).strip() or "Traceback" not in str(exc)
        return
    for ns in model.namespaces.values():
        assert namespace_name_error(ns.name) is None, ns.name
        lower = set()
        for hub in ns.hubs.values():
            assert hub_name_error(hub.name) is None, hub.name
            assert hub.name.lower() not in lower, hub.name
            lower.add(hub.name.lower())
            for group in hub.consumer_groups:
                assert consumer_group_name_error(group) is None, group


@SETTINGS
@given(doc=_maybe(config_json))
def test_any_config_json_loads_or_fails_with_the_config_error(place, doc):
    path = place / "Config.json"
    path.write_text(json.dumps(doc))
    _loads_or_refuses(path)


@SETTINGS
@given(doc=_maybe(toml_doc))
def test_any_toml_config_loads_or_fails_with_the_config_error(place, doc):
    path = place / "kafka-wire.toml"
    path.write_text(_toml_text(doc))
    _loads_or_refuses(path)


@SETTINGS
@given(data=st.binary(max_size=200), suffix=st.sampled_from([".json", ".toml"]))
def test_any_bytes_load_or_fail_with_the_config_error(place, data, suffix):
    path = place / f"any{suffix}"
    path.write_bytes(data)
    _loads_or_refuses(path)
