"""Every number and name is checked at the door: one clear line and exit 2. The
other commands' edges: sas, report, groups online with credentials, --version, help."""
from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_wire.cli import build_parser
from kafka_wire.config import BrokerConfig
from kafka_wire.eventhubs.config_file import apply_config_file
from kafka_wire.testing import EmulatedBroker
from tests.cli.helpers import kafka_wire

ROOT = Path(__file__).parents[2]
CONFIG_JSON = ROOT / "tests" / "eventhubs" / "data" / "Config.json"


def _usage_error(res, *words: str) -> str:
    assert res.returncode == 2, res.stderr
    err = res.stderr.strip()
    assert "Traceback" not in err
    assert len(err.splitlines()) == 1, err
    for word in words:
        assert word in err, err
    return err


@pytest.mark.parametrize("args, words", [
    (["--num-partitions", "0"], ["--num-partitions", "1 or more"]),
    (["--num-partitions", "-2"], ["--num-partitions", "1 or more"]),
    (["--max-request-bytes", "-1"], ["--max-request-bytes", "1,024 or more"]),
    (["--connections-max-idle-ms", "-5"], ["--connections-max-idle-ms"]),
    (["--failed-authentication-delay-ms", "x"], ["--failed-authentication-delay-ms", "whole number"]),
    (["--log-level", "LOUD"], ["--log-level", "LOUD", "DEBUG, INFO"]),
    (["--listen", "127.0.0.1:notaport"], ["--listen", "HOST:PORT"]),
    (["--listen", "127.0.0.1:70000"], ["--listen", "out of range"]),
    (["--http-listen", "127.0.0.1:5399", "--no-http"], ["--no-http", "--http-listen"]),
])
def test_bad_flag_is_one_line_and_exit_2(tmp_path, args, words):
    _usage_error(kafka_wire("serve", "--data-dir", str(tmp_path), *args), *words)


@pytest.mark.parametrize("server, words", [
    ("listen = 29000", ["[server] listen = 29000", "a string"]),
    ("num_partitions = 0", ["[server] num_partitions = 0", "1 or more"]),
    ("num_partitions = \"4\"", ["num_partitions", "a whole number"]),
    ("auto_create_topics = 1", ["auto_create_topics", "true or false"]),
    ("listen = \"127.0.0.1:x\"", ["[server]", "HOST:PORT"]),
    ("durability = \"fast\"", ["durability 'fast'", "power-loss"]),
    ("durability = true", ["[server] durability = True", "a string"]),
    ("transaction_max_timeout_ms = 0", ["transaction_max_timeout_ms = 0", "1 or more"]),
])
def test_bad_toml_server_key_names_file_and_key(tmp_path, server, words):
    config = tmp_path / "kw.toml"
    config.write_text(f"[server]\n{server}\n[namespaces.toml-ns]\n")
    err = _usage_error(kafka_wire("serve", "--config", str(config), "--data-dir", str(tmp_path)), *words)
    assert str(config) in err


@pytest.mark.parametrize("flag", ["--tls-cert", "--tls-key", "--tls-ca"])
def test_missing_certificate_file_is_named(tmp_path, flag):
    missing = tmp_path / "nowhere" / "x.pem"
    present = tmp_path / "present.pem"
    present.write_text("")
    args = {"--tls-cert": str(present), "--tls-key": str(present)}
    args[flag] = str(missing)
    flat = [x for kv in args.items() for x in kv]
    _usage_error(kafka_wire("serve", "--data-dir", str(tmp_path), "--tls-listen", "127.0.0.1:0", *flat),
                 str(missing), flag)


def test_config_json_unknown_keys_are_warned_not_fatal(tmp_path, caplog):
    data = json.loads(CONFIG_JSON.read_text())
    data["UserConfig"]["NamespaceConfig"][0]["Entities"][0]["PartitonCount"] = "4"  # a typo
    path = tmp_path / "Config.json"
    path.write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING):
        apply_config_file(BrokerConfig(), path)
    warned = [r.getMessage() for r in caplog.records if "unknown key" in r.getMessage()]
    assert len(warned) == 1 and "'PartitonCount'" in warned[0] and "Entities[0]" in warned[0]


def test_sas_for_an_unknown_hub_says_which_hubs_exist():
    err = _usage_error(kafka_wire("sas", "--config", str(CONFIG_JSON), "--policy",
                                  "RootManageSharedAccessKey", "--hub", "nope"), "'nope'", "eh1")
    assert "is not in namespace" in err


def test_version():
    res = kafka_wire("--version")
    assert res.returncode == 0 and re.fullmatch(r"kafka-wire \d+\.\d+\.\d+\n", res.stdout)


def _subparsers(parser):
    action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return action.choices


def test_every_serve_flag_the_docs_show_has_help_text():
    serve = _subparsers(build_parser())["serve"]
    helped = {opt: a.help for a in serve._actions for opt in a.option_strings}
    usage = (ROOT / "docs" / "running.md").read_text().split("```")[1]
    shown = set(re.findall(r"(--[a-z][a-z-]+)", usage.split("kafka-wire sas")[0]))
    assert shown, usage
    assert shown <= set(helped), shown - set(helped)
    no_help = [opt for opt, text in helped.items() if opt not in ("-h", "--help") and not text]
    assert not no_help


def test_no_rst_markup_in_any_help():
    parser = build_parser()
    texts = [parser.format_help()] + [p.format_help() for p in _subparsers(parser).values()]
    assert not [t for t in texts if "``" in t]


def test_report_on_a_missing_data_dir_says_so(tmp_path):
    res = kafka_wire("report", "--data-dir", str(tmp_path / "nothing-here"))
    assert res.returncode != 0
    assert "no data directory" in res.stderr and "No Event Hubs compatibility" not in res.stdout


def test_report_json_into_head_ends_without_a_traceback(tmp_path):
    entries = [{"rule": "compression", "namespace": "ns", "hub": f"hub-{i}", "message": "x" * 200,
                "enforced": False, "count": 1} for i in range(2000)]  # well past a pipe's buffer
    (tmp_path / "compatibility-report.json").write_text(json.dumps({"entries": entries}))
    res = subprocess.run(f"{sys.executable} -m kafka_wire.cli report --json --data-dir {tmp_path} | head -1",
                         shell=True, capture_output=True, text=True, timeout=60)
    assert res.stdout.strip() == "{"
    assert "Traceback" not in res.stderr and "BrokenPipe" not in res.stderr, res.stderr


def test_groups_online_authenticates_with_a_connection_string():
    with EmulatedBroker(config_file=CONFIG_JSON) as broker:
        cs = broker.connection_string()
        ok = kafka_wire("groups", "--bootstrap", broker.bootstrap_servers, "--connection-string", cs,
                        "--json", "--timeout", "5")
        assert ok.returncode == 0, ok.stderr
        hubs = {h["event_hub"] for h in json.loads(ok.stdout)["event_hubs"]}
        assert hubs == {"eh1"}
        refused = kafka_wire("groups", "--bootstrap", broker.bootstrap_servers, "--timeout", "3")
        assert refused.returncode == 1 and "cannot query" in refused.stderr
        assert "Traceback" not in refused.stderr


def test_toml_server_durability_sets_the_mode(tmp_path):
    from kafka_wire.config import BrokerConfig
    from kafka_wire.eventhubs.config_file import apply_config_file

    config_file = tmp_path / "kw.toml"
    config_file.write_text('[server]\ndurability = "power-loss"\ntransaction_max_timeout_ms = 60000\n'
                           "[namespaces.toml-ns]\n")
    config = BrokerConfig(data_dir=tmp_path)
    apply_config_file(config, config_file)
    assert (config.durability, config.transaction_max_timeout_ms) == ("power-loss", 60000)
    assert config.log_topic_defaults()["flush.messages"] == "1"
