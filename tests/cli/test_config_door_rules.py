"""A config file makes nothing the management API's door would refuse: `kafka-wire serve`
with a config (kafka-wire's TOML or the official Config.json) naming case-twin hubs, more
partitions or consumer groups than [limits] allow, a retention past the bound, a Capture
name format leaving its destination, or bytes no parser foresaw, stops before anything is
made: one line naming the file, the entry and the rule, exit 2, no traceback, and the data
directory not even created."""
from __future__ import annotations

import json
import re

import pytest

from tests.cli.helpers import Serve, kafka_wire


def _config_json(*entities: dict) -> str:
    return json.dumps({"UserConfig": {
        "NamespaceConfig": [{"Type": "EventHub", "Name": "emulatorNs1", "Entities": list(entities)}],
        "LoggingConfig": {"Type": "Console"}}})


# (file name, contents, what the error line must hold besides the file's path)
BAD = [
    ("twins.json", _config_json({"Name": "orders", "PartitionCount": 1},
                                {"Name": "ORDERS", "PartitionCount": 2}),
     ["event hub 'ORDERS'", "case-insensitive", "use 'orders'", "rule hub-name"]),
    ("twins.toml", '[namespaces.contoso-ns.eventhubs.payments]\npartitions = 1\n'
                   '[namespaces.contoso-ns.eventhubs.Payments]\npartitions = 1\n',
     ["namespace 'contoso-ns'", "event hub 'Payments'", "case-insensitive", "rule hub-name"]),
    ("partitions.toml", '[limits]\npartitions_per_hub = 4\n\n'
                        '[namespaces.contoso-ns.eventhubs.orders]\npartitions = 5\n',
     ["event hub 'orders'", "5 partitions", "[limits] partitions_per_hub", "rule partitions-per-hub"]),
    ("namespace-partitions.toml", '[limits]\npartitions_per_namespace = 6\n\n'
                                  '[namespaces.contoso-ns.eventhubs.a]\npartitions = 4\n'
                                  '[namespaces.contoso-ns.eventhubs.b]\npartitions = 4\n',
     ["namespace 'contoso-ns'", "8 partitions", "rule namespace-partitions"]),
    ("groups.toml", '[limits]\nconsumer_groups_per_hub = 2\n\n'
                    '[namespaces.contoso-ns.eventhubs.orders]\nconsumer_groups = ["a", "b"]\n',
     ["event hub 'orders'", "3 consumer groups", "[limits] consumer_groups_per_hub"]),
    ("strict.toml", '[namespaces.contoso-ns]\nmode = "strict"\ntier = "Premium"\n\n'
                    '[namespaces.contoso-ns.eventhubs.a]\npartitions = 100\n'
                    '[namespaces.contoso-ns.eventhubs.b]\npartitions = 100\n'
                    '[namespaces.contoso-ns.eventhubs.c]\npartitions = 1\n',
     ["namespace 'contoso-ns'", "201 partitions", "Premium limit is 200", "rule namespace-partitions"]),
    ("retention.toml", '[namespaces.contoso-ns.eventhubs.orders]\nretention_hours = 2000000\n',
     ["event hub 'orders'", "retention_hours=2000000", "1,000,000"]),
    ("escape.toml", '[namespaces.contoso-ns.eventhubs.orders.capture]\nenabled = true\n'
                    'destination = "out"\nname_format = "../../{Namespace}/{EventHub}/{PartitionId}/'
                    '{Year}/{Month}/{Day}/{Hour}/{Minute}/{Second}"\n',
     ["event hub 'orders'", "name_format", "'..'"]),
    ("group-type.toml", '[namespaces.contoso-ns.eventhubs.orders]\nconsumer_groups = "../g"\n',
     ["event hub 'orders'", "consumer_groups", "array of strings"]),
    ("cleanup.toml", '[namespaces.contoso-ns.eventhubs.orders]\ncleanup_policy = 1\n',
     ["event hub 'orders'", "cleanup_policy = 1", "text"]),
    ("hubs-type.toml", '[namespaces.contoso-ns]\neventhubs = ["orders"]\n',
     ["namespace 'contoso-ns'", "eventhubs", "must be a table"]),
    ("infinite.json", _config_json({"Name": "eh1", "PartitionCount": 1}).replace('"PartitionCount": 1',
                                                                               '"PartitionCount": 1e999'),
     ["Entities[0].PartitionCount", "use 1-32"]),
    ("name-array.json", _config_json({"Name": ["../x"], "PartitionCount": 1}),
     ["Entities[0].Name", "must be text"]),
    ("deep.json", "[" * 50_000 + "]" * 50_000, ["nested too deeply"]),
    ("deep.toml", "a = " + "[" * 50_000 + "]" * 50_000 + "\n", ["nested too deeply"]),
]


def _one_line(res) -> str:
    err = res.stderr.strip()
    assert "Traceback" not in err, err
    problems = [ln for ln in err.splitlines() if ln.startswith("kafka-wire:")]
    assert len(problems) == 1 and problems[0] == err.splitlines()[-1], err
    return problems[0]


@pytest.mark.parametrize("name,text,wanted", BAD, ids=[b[0] for b in BAD])
def test_a_config_the_door_would_refuse_stops_start_up_before_anything_is_made(tmp_path, name, text, wanted):
    config = tmp_path / name
    config.write_text(text)
    data = tmp_path / "data"
    res = kafka_wire("serve", "--config", str(config), "--data-dir", str(data), "--listen", "127.0.0.1:0",
                     "--no-http", "--no-amqp")
    assert res.returncode == 2, res.stderr
    line = _one_line(res)
    assert line.startswith(f"kafka-wire: {config}: "), line
    for part in wanted:
        assert part in line, (part, line)
    assert not data.exists(), sorted(p.name for p in data.rglob("*"))


def test_a_config_that_is_not_utf8_names_the_file_and_the_byte(tmp_path):
    config = tmp_path / "Config.json"
    config.write_bytes(b'{"UserConfig": {"NamespaceConfig": [{"Name": "\xff\xfe"}]}}')
    data = tmp_path / "data"
    res = kafka_wire("serve", "--config", str(config), "--data-dir", str(data), "--listen", "127.0.0.1:0",
                     "--no-http", "--no-amqp")
    assert res.returncode == 2, res.stderr
    line = _one_line(res)
    assert line.startswith(f"kafka-wire: {config}: not UTF-8") and "0xff" in line, line
    assert not data.exists()


def test_a_configured_hub_named_like_one_in_the_data_directory_is_refused(tmp_path):
    """A hub made over Kafka ('orders', by auto-creation) and, after a restart, a config
    naming 'ORDERS': the broker stops before making any hub, as the door refuses the twin."""
    data = tmp_path / "data"
    first = tmp_path / "first.toml"
    first.write_text('[namespaces.contoso-ns]\n\n[namespaces.contoso-ns.eventhubs.payments]\npartitions = 1\n')
    serve = Serve("--config", str(first), "--data-dir", str(data), "--listen", "127.0.0.1:0", "--no-http",
                  log=tmp_path / "serve.log")
    try:
        out = serve.wait_for("kafka-wire ready")
        from confluent_kafka.admin import AdminClient, NewTopic

        bootstrap = re.search(r"bootstrap\.servers=(\S+)", out).group(1)
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("orders", 1)])["orders"].result(timeout=20)
    finally:
        assert serve.stop() == 0, serve.output()
    assert (data / "contoso-ns" / "orders-0").is_dir()
    second = tmp_path / "second.toml"
    second.write_text(first.read_text() + '\n[namespaces.contoso-ns.eventhubs.ORDERS]\npartitions = 1\n'
                      '[namespaces.contoso-ns.eventhubs.refunds]\npartitions = 1\n')
    res = kafka_wire("serve", "--config", str(second), "--data-dir", str(data), "--listen", "127.0.0.1:0",
                     "--no-http", "--no-amqp")
    assert res.returncode == 1, res.stderr
    line = _one_line(res)
    assert "event hub 'ORDERS'" in line and "use 'orders'" in line and "rule hub-name" in line, line
    made = sorted(p.name for p in (data / "contoso-ns").iterdir() if not p.name.startswith("__"))
    assert made == ["orders-0", "payments-0"], made  # neither ORDERS nor refunds
