"""The python blocks: each runs as its own process (tests/docs/doc_run.py) against a
broker started for it; ``PYTHON_BLOCKS`` says, per block (doc, first line), the broker it
needs, a prelude for fragments, and what it must have done. A block not listed runs
with the default: a broker with HTTP, TLS and AMQP, and it must exit 0."""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from kafka_wire.testing import EmulatedBroker

from .doc_blocks import Block, blocks_of
from .doc_run import CONFIG_JSON, http, run_python, start_azurite, substitute, write_config


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
