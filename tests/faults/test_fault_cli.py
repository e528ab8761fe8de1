"""``kafka-wire fault add|list|clear`` drives a running broker's /$faults: a fault
set from the command line reaches the Python SDK, and the CLI says plainly when
the broker refuses it or cannot be reached."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from azure.eventhub import EventData, EventHubProducerClient
from azure.eventhub.exceptions import EventDataSendError

from tests.amqp.conftest import sdk_cs
from tests.faults.harness import contoso_broker


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with contoso_broker(tmp_path_factory.mktemp("faultcli")) as b:
        yield b


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafka_wire.cli", "fault", *args],
                          capture_output=True, text=True, timeout=60, env=env)


def test_a_fault_set_from_the_cli_reaches_the_python_sdk(broker):
    broker.create_hub("cli-faults", 1)
    where = ["--url", broker.http_url, "--data-dir", str(broker.data_dir)]
    added = cli("add", "server-busy", "--hub", "cli-faults", "--count", "1",
                "--param", "description=busy from the CLI", *where)
    assert added.returncode == 0, added.stderr
    fault = json.loads(added.stdout)
    assert fault["kind"] == "server-busy" and fault["scope"] == {"hub": "cli-faults"}
    producer = EventHubProducerClient.from_connection_string(sdk_cs(broker), eventhub_name="cli-faults")
    with producer:
        with pytest.raises(EventDataSendError, match="busy from the CLI"):
            producer.send_event(EventData(b"x"), partition_id="0")
        producer.send_event(EventData(b"y"), partition_id="0")
    listed = cli("list", *where)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert len([line for line in lines if "server-busy" in line and "hub=cli-faults" in line]) == 1
    assert not any(line.startswith("#") for line in lines)  # fired once: gone
    as_json = json.loads(cli("list", "--json", *where).stdout)
    assert [f["kind"] for f in as_json["fired"]] == ["server-busy"]
    assert cli("add", "link-stolen", "--hub", "x", *where).returncode == 0
    assert cli("clear", *where).returncode == 0
    assert json.loads(cli("list", "--json", *where).stdout) ["faults"] == []


def test_the_cli_reports_refusals_and_an_unreachable_broker(broker):
    wrong = cli("add", "server-busy", "--url", broker.http_url, "--token", "wrong")
    assert wrong.returncode == 1 and "refused (401)" in wrong.stderr and "subscription" in wrong.stderr
    bad = cli("add", "no-such-kind", "--url", broker.http_url, "--token", broker.subscription_token)
    assert bad.returncode == 1 and "refused (400)" in bad.stderr and "server-busy" in bad.stderr
    gone = cli("clear", "424242", "--url", broker.http_url, "--token", broker.subscription_token)
    assert gone.returncode == 1 and "404" in gone.stderr
    token = ["--url", broker.http_url, "--token", broker.subscription_token]
    for hostile in (["--hub", "../../etc/passwd"], ["--partition", "0\x01"], ["--count", "0"],
                    ["--probability", "7"], ["--param", "status=200"], ["--param", "nope=1"],
                    ["--consumer-group", "x" * 300]):
        refused = cli("add", "server-busy", *hostile, *token)
        assert refused.returncode == 1 and "refused (400)" in refused.stderr, (hostile, refused.stderr)
    malformed = cli("add", "server-busy", "--param", "novalue", *token)
    assert malformed.returncode == 2 and "KEY=VALUE" in malformed.stderr
    away = cli("list", "--url", "http://127.0.0.1:1", "--token", "x")
    assert away.returncode == 2 and "cannot reach" in away.stderr
    assert broker.faults.fired == []


def test_the_synopsis_in_the_docs_lists_exactly_the_cli_flags():
    """docs/faults.md's block marked faults-cli-synopsis is the CLI's synopsis."""
    import re

    from kafka_wire.cli import build_parser
    from tests.docs.doc_blocks import ROOT, blocks_of

    text = (ROOT / "docs/faults.md").read_text()
    at = text.count("\n", 0, text.index("faults-cli-synopsis"))
    block = next(b for b in blocks_of("docs/faults.md") if b.line > at)
    listed: dict[str, set[str]] = {}
    verb = None
    for line in block.text.splitlines():
        m = re.match(r"kafka-wire fault (\w+)", line)
        verb = m.group(1) if m else verb
        listed.setdefault(verb, set()).update(re.findall(r"(--[a-z][a-z0-9-]*)", line))
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    fault = sub.choices["fault"]
    verbs = next(a for a in fault._actions if a.__class__.__name__ == "_SubParsersAction")
    real = {name: {o for a in p._actions for o in a.option_strings if o.startswith("--") and o != "--help"}
            for name, p in verbs.choices.items()}
    assert listed == real
