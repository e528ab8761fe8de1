"""Every fenced code block of README.md and docs/*.md runs or is checked here, so a
doc example cannot drift from the product.

- ``python``: run as its own process (the virtualenv's Python) in a temporary
  directory whose ``data`` is a real broker's data directory, with the broker's
  ports put in for the documented ones (``PYTHON_BLOCKS`` declares, per block,
  the broker it needs, a prelude for fragments and what it must have done).
- ``toml``: loaded into a ``BrokerConfig``; ``json``: parsed, and the console's
  and REST API's bodies sent to (or compared with) a real broker's.
- shell and plain blocks: command synopses against ``kafka-wire``'s parser (every
  flag listed exists, every flag that exists is listed), commands run or parsed,
  connection strings authenticated, the ready line compared with a real ``serve``.
- Anything else needs ``<!-- doc-test: skip (why) -->`` or ``<!-- doc-test:
  elsewhere tests/PATH.py [KEY] -->`` right above it (see doc_blocks.py): an
  unmarked block the harness cannot run fails.

The tally (ran / checked / skipped / elsewhere) is printed at the end of the run."""
from __future__ import annotations

import json
import re
import shlex
import tomllib
from collections import Counter
from pathlib import Path
from typing import Callable

import pytest

from kafka_wire.testing import EmulatedBroker

from .doc_blocks import ROOT, Block, all_blocks, blocks_of
from .doc_run import CONFIG_JSON, http, kafka_wire, start_azurite, substitute, write_config
from .python_blocks import PYTHON_BLOCKS, check_python

BLOCKS = all_blocks()
OUTCOMES: dict[str, tuple[str, str]] = {}   # where -> (ran | checked | skipped | elsewhere, detail)


def outcome(block: Block, kind: str, detail: str = "") -> None:
    OUTCOMES[block.where] = (kind, detail)


def tally() -> str:
    counts = Counter(kind for kind, _ in OUTCOMES.values())
    lines = [f"doc blocks: {len(OUTCOMES)} of {len(BLOCKS)}: " + ", ".join(
        f"{counts[k]} {k}" for k in ("ran", "checked", "elsewhere", "skipped"))]
    lines += [f"  {where} {kind}: {detail}" for where, (kind, detail) in sorted(OUTCOMES.items())
              if kind in ("checked", "skipped", "elsewhere")]
    return "\n".join(lines)


# -- toml and json -------------------------------------------------------------------------------
def check_toml(block: Block, tmp: Path) -> str:
    from kafka_wire.config import BrokerConfig
    from kafka_wire.eventhubs.config_file import apply_config_file

    table = tomllib.loads(block.text)
    path = tmp / "kafka-wire.toml"
    # A fragment (say [limits]) loads beside the smallest whole config: one namespace.
    path.write_text(block.text if "namespaces" in table else block.text + "\n[namespaces.emulatorNs1]\n")
    config = BrokerConfig(data_dir=tmp / "data")
    apply_config_file(config, path)
    if "limits" in table:
        from kafka_wire.eventhubs.bounds import Bounds
        assert config.bounds == Bounds.from_table(table["limits"])
    if "[namespaces." in block.text:  # a whole config: the broker starts on it
        with EmulatedBroker(tmp / "data", config_file=path) as broker:
            model = broker.broker.services.eventhubs
            assert set(model.namespaces) == set(tomllib.loads(block.text)["namespaces"])
        return "ran"
    return "checked"


def keys(value):
    """The shape of a JSON value: its keys, nested (lists by their first item)."""
    if isinstance(value, dict):
        return {k: keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [keys(value[0])] if value else []
    return None


def check_json(block: Block, tmp: Path) -> str:
    value = json.loads(block.text.replace("…", ""))
    if block.doc == "docs/rest.md" and isinstance(value, list) and "Body" in value[0]:
        with EmulatedBroker(tmp / "data", http=True) as broker:
            broker.create_hub("orders", 4)
            status, body = http("POST", f"{broker.http_url}/orders/messages", block.text.encode(),
                                {"Content-Type": "application/vnd.microsoft.servicebus.json"})
            assert status == 201, body
        return "ran"
    if block.doc == "docs/console-api.md" and "body" in value and "events" not in value:
        with EmulatedBroker(tmp / "data", http=True) as broker:
            broker.create_hub("orders", 4)
            status, body = http("POST", f"{broker.http_url}/api/namespaces/emulatorNs1/hubs/orders/events",
                                block.text.encode(), {"Content-Type": "application/json"})
            assert status == 201, body
            answer = json.loads(body)
            assert answer["partition"] == value["partition"]
            # The answer's keys, as the doc's status table gives them under the block.
            text = (ROOT / block.doc).read_text()
            row = re.search(r"^\| 201 \| `\{([^}]*)\}`", text[text.index(block.text):], re.M)
            assert row, f"{block.where}: no 201 row with the answer's keys below the block"
            assert set(answer) == set(re.findall(r'"(\w+)"', row.group(1))), (row.group(1), answer)
        return "ran"
    if block.doc == "docs/console-api.md" and "events" in value:
        import confluent_kafka

        with EmulatedBroker(tmp / "data", http=True) as broker:
            broker.create_hub("orders", 1)
            producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers})
            producer.produce("orders", key=b"customer-0", value=b'{"order": 0}',
                             headers=[("source", b"web-shop")])
            assert producer.flush(30) == 0
            status, body = http("GET", f"{broker.http_url}/api/namespaces/emulatorNs1/hubs/orders/"
                                "partitions/0/events?from=earliest&count=3")
            assert status == 200, body
            real = json.loads(body)
        assert keys(value) == keys(real), f"documented {keys(value)}\nreal {keys(real)}"
        return "ran"
    if "UserConfig" in value:
        from kafka_wire.eventhubs.config_file import load_config_json

        load_config_json(value)
        return "checked"
    return "checked"


# -- shell and plain blocks -----------------------------------------------------------------------
def parser_flags(command: str) -> set[str]:
    from kafka_wire.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return {opt for action in sub.choices[command]._actions for opt in action.option_strings
            if opt.startswith("--") and opt != "--help"}


def check_synopsis(block: Block, tmp: Path) -> str:
    """``kafka-wire CMD [--flag ...]`` lines: each command's flags are exactly its parser's."""
    commands: dict[str, set[str]] = {}
    current = None
    for line in block.text.splitlines():
        m = re.match(r"\s*(?:\.venv/bin/)?kafka-wire\s+(\S+)", line)
        if m:
            current = m.group(1)
            if current.startswith("--"):  # kafka-wire --version
                from kafka_wire.cli import build_parser
                assert current in {o for a in build_parser()._actions for o in a.option_strings}
                current = None
                continue
            rest = line[m.end():]
            if rest.strip().startswith("...") or "(docs/" in rest:
                pointed = re.search(r"\((docs/\S+?\.md)\)", rest)
                assert pointed and (ROOT / pointed.group(1)).exists(), line
                current = None
                continue
            commands.setdefault(current, set())
        elif current is None:
            continue
        else:
            rest = line
        commands[current] |= set(re.findall(r"(--[a-z][a-z0-9-]*)", rest))
    assert commands, f"{block.where}: no kafka-wire command in the synopsis"
    wrong = []
    for command, listed in commands.items():
        real = parser_flags(command)
        if listed != real:
            wrong.append(f"`kafka-wire {command}` lists {sorted(listed - real)} that do not exist "
                         f"and leaves out {sorted(real - listed)}")
    assert not wrong, f"{block.where}: " + "; ".join(wrong)
    ran = run_commands(set(commands) | ({"--version"} if "kafka-wire --version" in block.text else set()), tmp)
    return "ran" if ran else "checked"


def run_commands(commands: set[str], tmp: Path) -> bool:
    """The synopsis's commands, run once each with what they need (``serve`` is run by the
    ready-line block below it; ``capture`` needs Spark: tests/capture)."""
    import confluent_kafka

    if "--version" in commands:
        assert re.fullmatch(r"kafka-wire \S+\n", kafka_wire(tmp, "--version"))
    if "sas" in commands:
        toml = write_config("eventhubs-toml", tmp)
        out = kafka_wire(tmp, "sas", "--config", str(toml), "--namespace", "contoso",
                         "--policy", "send-only", "--hub", "orders", "--ttl", "600")
        assert "SharedAccessSignature sr=" in out and "Endpoint=sb://" in out, out
    if not commands & {"token", "report", "groups"}:
        return bool(commands & {"--version", "sas"})
    with EmulatedBroker(tmp / "data") as broker:
        broker.create_hub("orders", 2)
        conf = {"bootstrap.servers": broker.bootstrap_servers, "group.id": "billing",
                "auto.offset.reset": "earliest"}
        producer = confluent_kafka.Producer(conf)
        producer.produce("orders", b"event", partition=0)
        assert producer.flush(30) == 0
        consumer = confluent_kafka.Consumer(conf)
        consumer.assign([confluent_kafka.TopicPartition("orders", 0, 1)])
        consumer.commit(offsets=[confluent_kafka.TopicPartition("orders", 0, 1)], asynchronous=False)
        consumer.close()
        data = str(broker.data_dir)
        if "token" in commands:
            assert kafka_wire(tmp, "token", "--management", "--data-dir", data).strip() == \
                broker.subscription_token
        if "report" in commands:
            json.loads(kafka_wire(tmp, "report", "--data-dir", data, "--json"))
        if "groups" in commands:
            online = kafka_wire(tmp, "groups", "--bootstrap", broker.bootstrap_servers, "--hub", "orders")
            assert "billing" in online, online
            json.loads(kafka_wire(tmp, "groups", "--bootstrap", broker.bootstrap_servers, "--json"))
    offline = kafka_wire(tmp, "groups", "--data-dir", data, "--hub", "orders") if "groups" in commands else ""
    assert "groups" not in commands or "billing" in offline, offline
    return True


def check_connection_string(block: Block, tmp: Path) -> str:
    """The official emulator's connection string: a Config.json broker takes it from a
    Kafka client (SASL PLAIN) and, with its AMQP port put in, from the Azure SDK."""
    from azure.eventhub import EventHubProducerClient
    from confluent_kafka.admin import AdminClient

    text = block.text.strip()
    with EmulatedBroker(tmp / "data", config_file=CONFIG_JSON, amqp=True) as broker:
        admin = AdminClient({
            "bootstrap.servers": broker.bootstrap_servers, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": "$ConnectionString", "sasl.password": text})
        topics = admin.list_topics(timeout=20).topics
        assert "eh1" in topics, topics
        with EventHubProducerClient.from_connection_string(substitute(text, broker), eventhub_name="eh1") as sdk:
            assert sdk.get_partition_ids() == ["0", "1"]
    return "ran"


def check_ready_line(block: Block, tmp: Path) -> str:
    """The line ``serve`` logs when ready, as a real ``kafka-wire serve`` prints it."""
    from tests.conftest import BrokerProcess

    documented = block.text.strip()
    pattern = re.escape(documented)
    pattern = pattern.replace(re.escape("..."), ".+").replace(re.escape("127.0.0.1:9092"), r"127\.0\.0\.1:\d+")
    pattern = pattern.replace(re.escape("/…/data"), r"/\S+/data")
    proc = BrokerProcess(tmp / "data").start()
    try:
        line = next(l for l in proc.output().splitlines() if "kafka-wire ready" in l)
    finally:
        proc.terminate()
    assert re.fullmatch(pattern, line), f"documented: {documented}\nprinted:    {line}"
    return "ran"


def check_make(block: Block, tmp: Path) -> str:
    """``make TARGET`` lines: the target exists; ``make run``'s broker flags parse and give
    the ports the comment names."""
    from kafka_wire.cli import build_parser

    makefile = (ROOT / "Makefile").read_text()
    for line in block.text.splitlines():
        m = re.match(r"make (\S+)", line)
        if not m:
            continue
        target = m.group(1)
        recipe = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", makefile, re.M)
        assert recipe, f"{block.where}: the Makefile has no target {target!r}"
        if target == "run":
            cmd = next(l for l in recipe.group(1).splitlines() if "kafka-wire serve" in l)
            args = build_parser().parse_args(shlex.split(cmd.split("kafka-wire", 1)[1]))
            comment = block.text
            assert args.data_dir == "./data" and "./data" in comment, args.data_dir
            ports = {"9092": args.listen, "9093": args.tls_listen}
            for port, address in ports.items():
                assert address and address[1] == int(port) and port in comment, (port, address)
            defaults = {a.dest: a for a in build_parser()._subparsers._group_actions[0]
                        .choices["serve"]._actions}
            for dest, port in (("amqp_listen", 5672), ("amqps_listen", 5671),
                               ("http_listen", 5300), ("https_listen", 5443)):
                assert str(port) in comment and f"{port}" in defaults[dest].help, (dest, port)
    return "checked"


def check_shell_commands(block: Block, tmp: Path) -> str:
    """Commands that need a cluster or a network we do not have: paths exist, and
    kafka-wire's arguments parse."""
    from kafka_wire.cli import build_parser

    text = block.text.replace("\\\n", " ")
    for line in text.splitlines():
        argv = shlex.split(line)
        if not argv:
            continue
        if argv[0] == "zip":
            for path in argv[3:]:
                assert (ROOT / path).exists(), f"{block.where}: {path} does not exist"
        elif "kafka_wire/cli.py" in argv:
            assert (ROOT / "kafka_wire" / "cli.py").exists()
            build_parser().parse_args(argv[argv.index("kafka_wire/cli.py") + 1:])
        else:
            raise AssertionError(f"{block.where}: the harness does not know `{argv[0]}`: "
                                 "run it here or mark the block <!-- doc-test: skip (why) -->")
    return "checked"


def check_azurite_commands(block: Block, tmp: Path) -> str:
    """``npm install azurite`` is tests/js's; the ``npx azurite-blob`` line starts Azurite."""
    package = json.loads((ROOT / "tests" / "js" / "package.json").read_text())
    assert "azurite" in {**package.get("dependencies", {}), **package.get("devDependencies", {})}
    proc, connection, port = start_azurite(block.doc, block.line + 1, tmp)
    try:
        from azure.storage.blob import BlobServiceClient
        BlobServiceClient.from_connection_string(connection).create_container("doc-test")
    finally:
        proc.kill()
        proc.wait(10)
    return "ran"


def check_elsewhere(block: Block, detail: str) -> str:
    parts = re.sub(r"\(.*\)", "", detail).split()   # a parenthesised note is prose
    assert parts, f"{block.where}: `doc-test: elsewhere` names no test file"
    path, key = parts[0], (parts[1] if len(parts) > 1 else parts[0])
    test_file = ROOT / path
    assert test_file.is_file(), f"{block.where}: {path} does not exist"
    source = test_file.read_text()
    assert key in source, f"{block.where}: {path} does not mention {key!r}"
    assert block.doc.rsplit("/", 1)[-1] in source, f"{block.where}: {path} does not read {block.doc}"
    text = (ROOT / block.doc).read_text()
    at = text.index(key)
    first_after = next(b for b in blocks_of(block.doc) if text.count("\n", 0, at) + 1 < b.line)
    assert first_after.line == block.line, (f"{block.where}: {key!r} first leads to the block at "
                                            f"line {first_after.line}, not to this one")
    return "elsewhere"


def classify(block: Block) -> Callable[[Block, Path], str] | None:
    text = block.text
    if block.lang == "python":
        return check_python
    if block.lang == "toml":
        return check_toml
    if block.lang == "json":
        return check_json
    if block.lang not in ("", "sh", "bash", "shell", "console"):
        return None
    if text.startswith("Endpoint=sb://"):
        return check_connection_string
    if "kafka-wire ready:" in text:
        return check_ready_line
    if re.search(r"kafka-wire \S+ .*\[--", text):
        return check_synopsis
    if re.match(r"make \w", text):
        return check_make
    if "azurite-blob" in text:
        return check_azurite_commands
    if re.match(r"(zip|spark-submit) ", text):
        return check_shell_commands
    return None


@pytest.mark.timeout(180)
@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_doc_block(block: Block, tmp_path):
    marker = block.marker
    if marker and marker[0] == "skip":
        reason = re.fullmatch(r"\((.+)\)", marker[1])
        assert reason, f"{block.where}: say why: <!-- doc-test: skip (reason) -->"
        outcome(block, "skipped", reason.group(1))
        pytest.skip(f"{block.where}: {reason.group(1)}")
    if marker and marker[0] == "elsewhere":
        outcome(block, check_elsewhere(block, marker[1]), marker[1])
        return
    check = classify(block)
    assert check is not None, (f"{block.where}: the harness cannot run this {block.lang or 'plain'} "
                               "block: make it runnable, or mark it <!-- doc-test: skip (why) --> "
                               "or <!-- doc-test: elsewhere tests/PATH.py [KEY] -->")
    outcome(block, check(block, tmp_path), check.__name__)


def test_only_the_marked_blocks_are_skipped():
    """No block is passed over quietly: a skip is a marker in the doc, with its reason."""
    marked = {b.where for b in BLOCKS if b.marker and b.marker[0] == "skip"}
    unhandled = {b.where for b in BLOCKS if not b.marker and classify(b) is None}
    assert not unhandled, f"blocks the harness cannot run and nobody marked: {sorted(unhandled)}"
    skipped = {where for where, (kind, _) in OUTCOMES.items() if kind == "skipped"}
    if len(OUTCOMES) == len(BLOCKS):  # the whole harness ran in this session
        assert skipped == marked


def test_every_python_block_declared_here_is_still_in_the_docs():
    """A PYTHON_BLOCKS entry whose block was edited away would silently fall back to the
    default run: it must match a block."""
    present = {(b.doc, b.first_line) for b in BLOCKS if b.lang == "python"}
    assert not set(PYTHON_BLOCKS) - present, sorted(set(PYTHON_BLOCKS) - present)


# -- the harness itself --------------------------------------------------------------------------
def test_an_unmarked_block_the_harness_cannot_run_fails():
    doc = "x.md"
    yaml, = blocks_of(doc, "text\n\n```yaml\na: 1\n```\n")
    assert yaml.marker is None and classify(yaml) is None
    marked, = blocks_of(doc, "<!-- doc-test: skip (no Prometheus) -->\n```yaml\na: 1\n```\n")
    assert marked.marker == ("skip", "(no Prometheus)")


def test_a_synopsis_that_drifted_from_the_parser_fails(tmp_path):
    wrong, = blocks_of("x.md", "```\n.venv/bin/kafka-wire report [--data-dir DIR] [--jsn]\n```\n")
    with pytest.raises(AssertionError, match=r"lists \['--jsn'\] that do not exist and leaves out \['--json'\]"):
        check_synopsis(wrong, tmp_path)


def test_an_elsewhere_marker_must_lead_to_its_block():
    text = "<!-- doc-test: elsewhere tests/docs/test_readme_management.py -->\n```sh\na\n```\n"
    block, = blocks_of("README.md", text)
    with pytest.raises(AssertionError, match="does not exist"):
        check_elsewhere(block, "tests/docs/test_no_such_file.py")
    with pytest.raises(AssertionError, match="does not mention"):
        check_elsewhere(block, "tests/docs/test_readme_management.py some-other-key")
