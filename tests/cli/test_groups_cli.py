"""`kafka-wire groups` against a `kafka-wire serve` subprocess, as a person runs both:
a wrong key is reported with the broker's own reason at once (not a bootstrap
timeout), and the consumer groups the config file gives a hub are listed whether
or not anyone committed in them."""
from __future__ import annotations

import json
import time
from pathlib import Path

from kafka_wire.eventhubs import connection_string

from .helpers import kafka_wire

DATA = Path(__file__).resolve().parents[1] / "eventhubs" / "data"
MULTI = DATA / "multi.toml"
CONFIG_JSON = DATA / "Config.json"
ROOT_KEY = "cm9vdC1rZXktMQ=="


def test_a_wrong_key_fails_at_once_with_the_brokers_reason(broker_process):
    broker = broker_process(extra=["--config", str(MULTI)])
    cs = connection_string.build(broker.bootstrap_servers, key_name="RootManageSharedAccessKey",
                                 key="d3Jvbmcta2V5")
    started = time.monotonic()
    res = kafka_wire("groups", "--bootstrap", broker.bootstrap_servers, "--connection-string", cs,
                     "--timeout", "30")
    took = time.monotonic() - started
    assert res.returncode == 1, res
    assert "SaslAuthenticationFailedError" in res.stderr and "is wrong" in res.stderr, res.stderr
    assert "Unable to bootstrap" not in res.stderr
    assert took < 10, f"{took:.1f} s: the reason should come at once, not after --timeout 30"


def test_the_right_key_lists_the_configured_groups_online(broker_process):
    broker = broker_process(extra=["--config", str(MULTI)])
    cs = connection_string.build(broker.bootstrap_servers, key_name="RootManageSharedAccessKey",
                                 key=ROOT_KEY)
    res = kafka_wire("groups", "--bootstrap", broker.bootstrap_servers, "--connection-string", cs,
                     "--config", str(MULTI), "--json")
    assert res.returncode == 0, res.stderr
    hubs = {h["event_hub"]: h for h in json.loads(res.stdout)["event_hubs"]}
    assert [g["name"] for g in hubs["orders"]["consumer_groups"]] == ["$Default", "billing"]
    assert [g["name"] for g in hubs["payments"]["consumer_groups"]] == ["$Default"]
    billing = hubs["orders"]["consumer_groups"][1]
    assert not billing["kafka_group"] and all(p["sequence_number"] is None
                                              for p in billing["partitions"])


def test_config_json_groups_without_commits_are_listed_offline_and_online(broker_process, tmp_path):
    broker = broker_process(extra=["--config", str(CONFIG_JSON)])
    # The official emulator's key, as its documentation's connection string has it.
    cs = connection_string.build(broker.bootstrap_servers, key_name="RootManageSharedAccessKey",
                                 key="SAS_KEY_VALUE", emulator=True)
    online = kafka_wire("groups", "--bootstrap", broker.bootstrap_servers, "--connection-string",
                        cs, "--config", str(CONFIG_JSON))
    assert online.returncode == 0, online.stderr
    assert "eh1" in online.stdout and "consumer group cg1" in online.stdout, online.stdout
    broker.kill()
    offline = kafka_wire("groups", "--data-dir", str(broker.data_dir), "--config", str(CONFIG_JSON),
                         "--json")
    assert offline.returncode == 0, offline.stderr
    hubs = {h["event_hub"]: h for h in json.loads(offline.stdout)["event_hubs"]}
    assert [g["name"] for g in hubs["eh1"]["consumer_groups"]] == ["$Default", "cg1"]
    # Without --config only what Kafka clients used shows: cg1 is the file's.
    bare = kafka_wire("groups", "--data-dir", str(broker.data_dir))
    assert bare.returncode == 0 and "cg1" not in bare.stdout, bare
