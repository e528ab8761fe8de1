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
import os
import re
import shlex
import subprocess
import sys
import threading
import tomllib
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.ports import free_port

from .doc_blocks import ROOT, Block, all_blocks, blocks_of

BLOCKS = all_blocks()
VENV_BIN = Path(sys.executable).parent
OUTCOMES: dict[str, tuple[str, str]] = {}   # where -> (ran | checked | skipped | elsewhere, detail)
CONFIG_JSON = ROOT / "tests" / "eventhubs" / "data" / "Config.json"
TIMEOUT_S = 120


def outcome(block: Block, kind: str, detail: str = "") -> None:
    OUTCOMES[block.where] = (kind, detail)


def tally() -> str:
    counts = Counter(kind for kind, _ in OUTCOMES.values())
    lines = [f"doc blocks: {len(OUTCOMES)} of {len(BLOCKS)}: " + ", ".join(
        f"{counts[k]} {k}" for k in ("ran", "checked", "elsewhere", "skipped"))]
    lines += [f"  {where} {kind}: {detail}" for where, (kind, detail) in sorted(OUTCOMES.items())
              if kind in ("checked", "skipped", "elsewhere")]
    return "\n".join(lines)


# -- running things ------------------------------------------------------------------------------
def user_env() -> dict[str, str]:
    """A user's shell with the virtualenv active: its bin first on PATH, no PYTHON* of ours,
    hash randomization seeded."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONHASHSEED"] = "0"
    return env


def run_python(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, env={**user_env(), **(env or {})},
                          capture_output=True, text=True, timeout=TIMEOUT_S)


def kafka_wire(cwd: Path, *args: str) -> str:
    """``kafka-wire ARGS`` as a user runs it; its stdout, after it exits 0."""
    run = subprocess.run([str(VENV_BIN / "kafka-wire"), *args], cwd=cwd, env=user_env(),
                         capture_output=True, text=True, timeout=TIMEOUT_S)
    assert run.returncode == 0, f"kafka-wire {' '.join(args)}: {run.returncode}\n{run.stderr}"
    return run.stdout


def http(method: str, url: str, body: bytes | None = None, headers: dict | None = None):
    request = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def substitute(code: str, broker: EmulatedBroker | None) -> str:
    """The documented addresses (``make run``'s) replaced by this broker's."""
    if broker is None:
        return code
    pairs = {"127.0.0.1:9092": broker.bootstrap_servers}
    if broker.broker.http_address:
        pairs["127.0.0.1:5300"] = f"127.0.0.1:{broker.http_port}"
        pairs["localhost:5300"] = f"localhost:{broker.http_port}"
    if broker.broker.https_address:
        pairs["localhost:5443"] = broker.https_url.removeprefix("https://")
    if broker.broker.amqp_address:
        pairs["Endpoint=sb://localhost;"] = f"Endpoint=sb://localhost:{broker.amqp_port};"
        pairs["sb://localhost;"] = f"sb://localhost:{broker.amqp_port};"
    for old, new in pairs.items():
        code = code.replace(old, new)
    return code


# -- python blocks -------------------------------------------------------------------------------
@dataclass
class PythonBlock:
    """How one python block runs. ``broker``: EmulatedBroker settings (None: the block
    needs none); ``config``: "eventhubs-toml" (docs/eventhubs.md's example) or
    "Config.json" for the broker; ``hubs`` made first; ``prelude``/``epilogue`` around
    the block (for fragments); ``replace`` further text substitutions; ``check`` looks
    at the broker, the working directory and the finished process."""
    broker: dict | None = field(default_factory=lambda: {"http": True, "tls": True, "amqp": True})
    config: str | None = None
    hubs: dict[str, int] = field(default_factory=dict)
    prelude: str = ""
    epilogue: str = ""
    replace: dict[str, str] = field(default_factory=dict)
    pytest_file: bool = False
    setup: Callable | None = None
    check: Callable | None = None
    azurite: bool = False
    stubbed: bool = False   # parts replaced by stand-ins: it counts as checked, not ran


def _hub_made(namespace: str, hub: str, partitions: int):
    def check(broker, work, run):
        view = broker.call(lambda: broker.broker.services.namespaces[namespace].topics.get(hub))
        assert view is not None and view.partitions == partitions, (namespace, hub, view)
    return check


def _schema_group(group: str):
    def setup(broker, work):
        url = (f"{broker.http_url}/subscriptions/s/resourceGroups/g/providers/Microsoft.EventHub/"
               f"namespaces/emulatorNs1/schemagroups/{group}?api-version=2024-01-01")
        status, body = http("PUT", url, json.dumps({"properties": {"schemaType": "Avro",
                            "schemaCompatibility": "None"}}).encode(),
                            {"Content-Type": "application/json",
                             "Authorization": f"Bearer {broker.subscription_token}"})
        assert status in (200, 201), body
    return setup


ORDER_SCHEMA = """{"type": "record", "name": "Order", "namespace": "example",
 "fields": [{"name": "id", "type": "string"}]}"""

PYTHON_BLOCKS: dict[tuple[str, str], PythonBlock] = {
    # The README's management example: tests/docs/test_readme_management.py (marked elsewhere).
    ("docs/amqp.md", "from azure.eventhub import EventHubConsumerClient"): PythonBlock(
        hubs={"orders": 2}, azurite=True,
        # Before: the container (as the doc says), one event to checkpoint. After the first
        # checkpoint lands in Azurite, the process ends: the SDK's receive never returns.
        prelude=f"""
import os, sys
from azure.eventhub import EventHubProducerClient, EventData
from azure.storage.blob import BlobServiceClient
from azure.eventhub.extensions.checkpointstoreblob import BlobCheckpointStore as _Store
_AZ = os.environ["DOC_AZURITE"]
BlobServiceClient.from_connection_string(_AZ).create_container("checkpoints")
with EventHubProducerClient.from_connection_string(os.environ["DOC_AMQP"], eventhub_name="orders") as _p:
    _p.send_batch([EventData(b"doc-test")])
_update = _Store.update_checkpoint
def _checkpointed(self, checkpoint, **kwargs):
    _update(self, checkpoint, **kwargs)
    names = [b.name for b in BlobServiceClient.from_connection_string(_AZ)
             .get_container_client("checkpoints").list_blobs()]
    print("checkpoint", checkpoint["sequence_number"], names, flush=True)
    os._exit(0)
_Store.update_checkpoint = _checkpointed
""", check=lambda broker, work, run: re.match(r"checkpoint 0 \[.*/orders/\$default/checkpoint/0'", run.stdout)
        or pytest.fail(run.stdout)),
    ("docs/capture.md", "from kafka_wire.spark.capture_job import CaptureJobSettings, run, run_in_background"):
    PythonBlock(
        broker={}, hubs={"orders": 1}, stubbed=True,
        # Spark itself is exercised by tests/capture; here the names and settings the doc uses.
        prelude="""
import kafka_wire.spark.capture_job as _job
class _Handle:
    def stop(self): print("stopped")
_job.run = lambda settings: print("run", settings.namespace, settings.hubs, settings.encoding)
_job.run_in_background = lambda settings: _Handle()
""", epilogue="handle.stop()\n",
        check=lambda broker, work, run: (run.stdout.split()[:1] == ["run"]
                                         and run.stdout.strip().endswith("stopped")) or
        pytest.fail(run.stdout)),
    ("docs/capture.md", "from kafka_wire.spark.session import get_session"): PythonBlock(
        broker={}, hubs={"orders": 1},
        epilogue="print(json.dumps(df.columns))\nspark.stop()\n", prelude="import json\n",
        check=lambda broker, work, run: _columns_as_documented(run)),
    ("docs/rest.md", "import subprocess, time"): PythonBlock(
        config="eventhubs-toml", check=_hub_made("contoso", "telemetry", 4)),
    ("docs/rest.md", "from azure.schemaregistry import SchemaRegistryClient"): PythonBlock(
        setup=_schema_group("contracts"),
        prelude=f"""
import time
from azure.core.credentials import AccessToken
ORDER_SCHEMA = '''{ORDER_SCHEMA}'''
class SasCredential:  # a TokenCredential whose token is a SAS token (any key: an open namespace)
    def get_token(self, *scopes, **kwargs):
        from kafka_wire.eventhubs import sas
        expiry = int(time.time()) + 3600
        return AccessToken(sas.generate(sas.resource_uri("localhost"), "RootManageSharedAccessKey",
                                        "any-key", expiry), expiry)
""", epilogue="print(event.content_type)\n",
        check=lambda broker, work, run: re.fullmatch(r"avro/binary\+\S+\n", run.stdout) or
        pytest.fail(run.stdout)),
    ("docs/testing.md", "import confluent_kafka"): PythonBlock(broker=None),
    ("docs/testing.md", '@pytest.mark.kafka_wire(config_file="Config.json", virtual_clock=True)'): PythonBlock(
        broker=None, pytest_file=True, prelude="import pytest\n"),
    ("docs/testing.md", 'broker.faults.fail("Produce", "NOT_LEADER_OR_FOLLOWER", count=3, topic="orders")  # or partition=, client_id='):
    PythonBlock(broker=None, prelude="""
from kafka_wire.testing import EmulatedBroker
broker = EmulatedBroker().start()
broker.create_hub("orders", 1)
""", epilogue="broker.stop()\nprint('faults ok')\n"),
}


def _columns_as_documented(run):
    block = next(b for b in blocks_of("docs/capture.md") if "get_session" in b.text)
    comment = " ".join(line.strip().lstrip("#") for line in block.text.splitlines()
                       if line.strip().startswith("#"))
    documented = [re.sub(r"\s*\(.*", "", part).strip() for part in
                  re.sub(r"\([^)]*\)", "", comment).split(",")]
    columns = json.loads(run.stdout.strip().splitlines()[-1])
    assert documented == columns, f"documented {documented}, the source gives {columns}"


def write_config(kind: str | None, work: Path) -> Path | None:
    if kind is None:
        return None
    if kind == "Config.json":
        path = work / "Config.json"
        path.write_text(CONFIG_JSON.read_text())
        return path
    assert kind == "eventhubs-toml", kind
    block = next(b for b in blocks_of("docs/eventhubs.md") if b.lang == "toml" and "[namespaces." in b.text)
    path = work / "kafka-wire.toml"
    path.write_text(block.text)
    return path


def start_azurite(doc: str, before_line: int, tmp: Path):
    """The doc's own ``npx azurite-blob`` line (the last one above ``before_line``), on a
    free port, from tests/js; returns (process, connection string)."""
    shell = [b for b in blocks_of(doc) if "azurite-blob" in b.text and b.line < before_line][-1]
    line = next(l for l in shell.text.splitlines() if "azurite-blob" in l)
    npx_bin = ROOT / "tests" / "js" / "node_modules" / ".bin" / "azurite-blob"
    if not npx_bin.exists():
        pytest.skip("tests/js/node_modules has no azurite (make test installs it with npm)")
    port = free_port()
    argv = shlex.split(line.rstrip("& "))
    assert argv[:2] == ["npx", "azurite-blob"], line
    argv = [str(npx_bin), *argv[2:]]
    argv[argv.index("--blobPort") + 1] = str(port)
    argv[argv.index("--location") + 1] = str(tmp / "azurite")
    argv += ["--skipApiVersionCheck", "--disableTelemetry"]
    proc = subprocess.Popen(argv, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    said = []
    try:
        for out in proc.stdout:  # Azurite says when it listens (the test's timeout bounds the wait)
            said.append(out)
            if "successfully listens" in out:
                break
        else:
            raise AssertionError(f"azurite ended ({proc.wait()}): {''.join(said)}")
    except BaseException:  # the timeout included: no Azurite left behind
        proc.kill()
        proc.wait(10)
        raise
    threading.Thread(target=proc.stdout.read, daemon=True).start()  # its request log, unread
    return proc, (f"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey="
                  "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;"
                  f"BlobEndpoint=http://127.0.0.1:{port}/devstoreaccount1;"), port


def check_python(block: Block, tmp: Path) -> str:
    spec = PYTHON_BLOCKS.get((block.doc, block.first_line), PythonBlock())
    work = tmp / "user"
    work.mkdir()
    config = write_config(spec.config, tmp)
    code = block.text
    for old, new in spec.replace.items():
        assert old in code, f"{block.where}: {old!r} is no longer in the block"
        code = code.replace(old, new)
    broker = None
    azurite = None
    env_extra = {}
    try:
        if spec.broker is not None:
            broker = EmulatedBroker(tmp / "data", config_file=config, **spec.broker).start()
            os.symlink(broker.data_dir, work / "data")
            for hub, partitions in spec.hubs.items():
                broker.create_hub(hub, partitions)
            if spec.setup:
                spec.setup(broker, work)
            code = substitute(code, broker)
            if broker.broker.amqp_address:
                env_extra["DOC_AMQP"] = broker.amqp_connection_string()
        if spec.azurite:
            azurite, connection, port = start_azurite(block.doc, block.line, tmp)
            env_extra["DOC_AZURITE"] = connection
            code = code.replace("127.0.0.1:10000", f"127.0.0.1:{port}")
        program = spec.prelude + code + spec.epilogue
        if spec.pytest_file:
            if "Config.json" in program:
                (work / "Config.json").write_text(CONFIG_JSON.read_text())
            (work / "test_doc_block.py").write_text(program)
            args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "test_doc_block.py"]
        else:
            (work / "doc_block.py").write_text(program)
            args = ["doc_block.py"]
        run = run_python(work, *args, env=env_extra)  # env_extra: read by the preludes only
        assert run.returncode == 0, f"{block.where} failed:\n{run.stdout}\n{run.stderr}"
        if spec.check:
            spec.check(broker, work, run)
    finally:
        if azurite is not None:
            azurite.kill()
            azurite.wait(10)
        if broker is not None:
            broker.stop()
    return "checked" if spec.stubbed else "ran"


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
