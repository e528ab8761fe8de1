"""Running doc blocks as a user would: the virtualenv on PATH, the documented
addresses (``make run``'s) swapped for a test broker's, Azurite started by the doc's
own command line."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kafka_wire.testing import EmulatedBroker
from kafka_wire.testing.ports import free_port

from .doc_blocks import ROOT, blocks_of

VENV_BIN = Path(sys.executable).parent
CONFIG_JSON = ROOT / "tests" / "eventhubs" / "data" / "Config.json"
TIMEOUT_S = 120


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
