"""Config.json of the official emulator and kafka-wire's TOML file."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire.cli import main
from kafka_wire.config import BrokerConfig
from kafka_wire.eventhubs.config_file import apply_config_file, load, load_config_json, load_toml
from kafka_wire.eventhubs.model import ROOT_POLICY, Tier
from kafka_wire.testing import EmulatedBroker

from .conftest import CONFIG_JSON, EMULATOR_CS, MULTI_TOML, confluent_conf, produce_one

ROOT = Path(__file__).resolve().parents[2]


def official(entities=None, **ns) -> dict:
    namespace = {"Type": "EventHub", "Name": "emulatorNs1",
                 "Entities": entities or [{"Name": "eh1", "PartitionCount": "2"}], **ns}
    return {"UserConfig": {"NamespaceConfig": [namespace], "LoggingConfig": {"Type": "File"}}}


def test_official_config_json_loads_as_the_emulator_reads_it():
    model, _ = load(CONFIG_JSON)
    ns = model.namespaces["emulatorNs1"]
    assert model.default_namespace == "emulatorNs1"
    assert (ns.tier, ns.mode, ns.requires_auth, ns.emulator) == (Tier.STANDARD, "relaxed", True, True)
    assert ns.policies[ROOT_POLICY].primary_key == "SAS_KEY_VALUE"
    hub = ns.hubs["eh1"]
    assert (hub.partitions, hub.all_consumer_groups(), hub.retention_hours) == (2, ["$Default", "cg1"], 1)
    assert model.namespace_for_host("localhost") == "emulatorNs1"
    assert model.namespace_for_host("host.docker.internal") == "emulatorNs1"
    assert model.namespace_for_host("192.168.1.20") == "emulatorNs1"


@pytest.mark.parametrize("count", [4, 4.0, "4"], ids=repr)
def test_partition_count_may_be_a_number_and_names_are_optional(count):
    data = official([{"Name": "a", "PartitionCount": count}])
    del data["UserConfig"]["NamespaceConfig"][0]["Name"]
    model = load_config_json(data)
    assert model.namespaces["emulatorNs1"].hubs["a"].partitions == 4


@pytest.mark.parametrize("count", [2.7, 1.5, "2.7", "2_0", " 2", "2 ", "\u0661", "\u00b2", "0x2", True,
                                   float("inf"), float("nan"), [2], {"n": 2}, None],
                         ids=repr)
def test_a_partition_count_that_is_not_a_whole_number_is_refused_not_truncated(count):
    with pytest.raises(ValueError, match=r"Entities\[0\]\.PartitionCount .* (is not a whole number|is missing)"):
        load_config_json(official([{"Name": "a", "PartitionCount": count}]))


@settings(max_examples=300, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(count=st.one_of(st.integers(-5, 40), st.floats(allow_nan=True), st.floats(0, 40), st.text(max_size=4),
                       st.integers(1, 32).map(float), st.integers(1, 32).map(str), st.booleans()))
def test_a_partition_count_is_taken_only_as_the_number_it_writes(count):
    try:
        model = load_config_json(official([{"Name": "a", "PartitionCount": count}]))
    except ValueError as exc:
        assert "PartitionCount" in str(exc), exc
        return
    taken = model.namespaces["emulatorNs1"].hubs["a"].partitions
    assert 1 <= taken <= 32 and not isinstance(count, bool), (count, taken)
    assert (str(taken) == count) if isinstance(count, str) else (taken == count), (count, taken)


@pytest.mark.parametrize("data, why", [
    (official([{"Name": "a", "PartitionCount": "33"}]), "out of range: use 1-32"),
    (official([{"Name": f"h{i}", "PartitionCount": 1} for i in range(11)]), "1-10 event hubs"),
    (official([{"Name": "a", "PartitionCount": 1, "ConsumerGroups": [{"Name": "$default"}]}]),
     "always exists"),
    (official([{"Name": "-a", "PartitionCount": 1}]), "event hub name '-a' is invalid"),
    ({"UserConfig": {"NamespaceConfig": []}}, "LoggingConfig"),
    (official(Type="Queue"), "use EventHub"),
])
def test_invalid_config_json_says_what_is_wrong(data, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        load_config_json(data)


def test_emulator_connection_string_works_against_config_json():
    with EmulatedBroker(config_file=CONFIG_JSON) as broker:
        assert broker.connection_string() == EMULATOR_CS
        conf = confluent_conf(broker.bootstrap_servers, EMULATOR_CS)
        assert produce_one(conf, "eh1", b"from-the-emulator-sample") is None
        consumer = Consumer(dict(conf, **{"group.id": "cg1", "enable.auto.commit": False}))
        consumer.assign([TopicPartition("eh1", p, 0) for p in (0, 1)])
        got, deadline = [], time.monotonic() + 15
        while not got and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and not msg.error():
                got.append(msg.value())
        consumer.close()
        assert got == [b"from-the-emulator-sample"]
        topics = AdminClient(conf).list_topics(timeout=10).topics
        assert len(topics["eh1"].partitions) == 2


# -- TOML ----------------------------------------------------------------------------------
def test_toml_with_several_namespaces():
    model, settings = load(MULTI_TOML)
    assert set(model.namespaces) == {"contoso", "fabrikam"}
    contoso, fabrikam = model.namespaces["contoso"], model.namespaces["fabrikam"]
    assert contoso.requires_auth and contoso.policies["sender"].rights == {"Send"}
    assert contoso.hubs["orders"].policies["orders-writer"].hub == "orders"
    assert (fabrikam.tier, fabrikam.units) == (Tier.PREMIUM, 1)
    assert model.namespace_for_host("FABRIKAM.servicebus.windows.net") == "fabrikam"
    assert model.namespace_for_host("northwind.servicebus.windows.net") is None


@pytest.mark.parametrize("data, why", [
    ({"namespaces": {"contoso": {"teir": "Basic"}}}, "unknown key(s) 'teir'"),
    ({"namespaces": {"contoso": {"tier": "Gold"}}}, "tier 'Gold' is unknown"),
    ({"namespaces": {"ab": {}}}, "namespace name 'ab' is invalid"),
    ({"namespaces": {"contoso": {"throughput_units": 41}}}, "out of range for Standard: use 1-40"),
    ({"namespaces": {"contoso": {"tier": "Premium", "auto_inflate_max": 4}}}, "only on the Standard"),
    ({"namespaces": {"contoso": {"mode": "strict", "eventhubs": {"big": {"partitions": 40}}}}},
     "40 partitions exceed the Standard limit of 32"),
    ({"namespaces": {"contoso": {"eventhubs": {"h": {"capture": {"interval_seconds": 30}}}}}},
     "use 60-900"),
    ({"namespaces": {"contoso": {"policies": {"p": {"rights": ["Send"]}}}}}, "needs a primary_key"),
    ({"namespaces": {"contoso": {"policies": {"p": {"primary_key": "k", "rights": ["Own"]}}}}},
     "right 'Own' is unknown"),
])
def test_invalid_toml_says_what_is_wrong(data, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        load_toml(data)


def _documented_example() -> str:
    text = (ROOT / "docs" / "eventhubs.md").read_text()
    m = re.search(r"<!-- eventhubs-toml-example -->\s*```toml\n(.*?)```", text, re.S)
    assert m, "docs/eventhubs.md lacks the Event Hubs TOML example"
    return m.group(1)


def test_documented_example_is_a_valid_config(tmp_path):
    path = tmp_path / "kafka-wire.toml"
    path.write_text(_documented_example())
    config = BrokerConfig()
    apply_config_file(config, path)
    model = config.eventhubs
    assert len(model.namespaces) >= 2
    assert config.tls_listen_host is not None
    assert any(ns.mode == "strict" for ns in model.namespaces.values())
    assert any(h.capture.enabled for ns in model.namespaces.values() for h in ns.hubs.values())


# -- command line ------------------------------------------------------------------------------
def test_sas_command_prints_a_token_the_broker_accepts(capsys):
    assert main(["sas", "--config", str(MULTI_TOML), "--namespace", "contoso", "--policy", "sender",
                 "--hub", "orders", "--ttl", "600"]) == 0
    token, password = capsys.readouterr().out.strip().splitlines()
    assert token.startswith("SharedAccessSignature sr=https%3A%2F%2Fcontoso.servicebus.windows.net")
    assert password.startswith("Endpoint=sb://contoso.servicebus.windows.net/;SharedAccessSignature=")
    with EmulatedBroker(config_file=MULTI_TOML) as broker:
        conf = confluent_conf(broker.bootstrap_servers, password)
        assert produce_one(conf, "orders") is None
        assert set(AdminClient(conf).list_topics(timeout=10).topics) == {"orders"}


def test_sas_command_refuses_unknown_policies(capsys):
    assert main(["sas", "--config", str(MULTI_TOML), "--policy", "nobody"]) == 2
    assert "SAS policy 'nobody' is not defined" in capsys.readouterr().err


def test_serve_with_config_json_accepts_the_emulator_connection_string(broker_process):
    proc = broker_process(extra=["--config", str(CONFIG_JSON)])
    conf = confluent_conf(proc.bootstrap_servers, EMULATOR_CS)
    err = produce_one(conf, "eh1")
    assert err is None, (err, proc.output()[-3000:])
    assert "authentication required" in proc.output()


def test_report_command_prints_the_report(tmp_path, capsys):
    (tmp_path / "compatibility-report.json").write_text(json.dumps({"entries": [{
        "namespace": "ns1", "rule": "compression", "event_hub": "orders", "enforced": True,
        "kind": "violation", "count": 3, "first": "a", "last": "b", "error_code": 43,
        "message": "lz4 compression is not supported on the Standard tier"}]}))
    assert main(["report", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "Namespace ns1" in out and "compression [orders]: REFUSED, error 43, 3x" in out
