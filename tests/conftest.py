"""Shared fixtures: an in-process broker on 127.0.0.1:0 with a temporary data
directory, and a helper to run the broker as a real subprocess."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import settings

from kafka_wire.testing import EmulatedBroker

# Property tests draw the same examples in every run of `make test` (seeded from each test),
# so CI cannot fail by chance; `make soak` (KAFKA_WIRE_SOAK=1) explores fresh examples.
settings.register_profile("make-test", derandomize=True)
settings.register_profile("soak", derandomize=False)
settings.load_profile("soak" if os.environ.get("KAFKA_WIRE_SOAK", "") not in ("", "0") else "make-test")

# What an EmulatedBroker sets while it runs (kafka_wire/testing/broker.py), for the whole run:
# the sync SDK's spinning EventProcessor also starves its own I/O threads when the broker is
# a subprocess (`kafka-wire serve`), 5 ms at each hand-over.
sys.setswitchinterval(0.0005)

ROOT = Path(__file__).resolve().parent.parent
# tests/js: its scripts beside node_modules with package.json's packages (make test installs
# them); KAFKA_WIRE_JS_DIR names another such folder (make compat's pinned SDK versions).
JS = Path(os.environ.get("KAFKA_WIRE_JS_DIR") or ROOT / "tests" / "js")


def node_with(package: str, label: str) -> str:
    """The node executable when ``package`` is installed in tests/js, else a loud skip
    naming the tests (``label``) that need it."""
    import shutil

    exe = shutil.which("node")
    if exe is None:
        pytest.skip(f"{label} SKIPPED: `node` is not installed")
    if not (JS / "node_modules" / package / "package.json").is_file():
        pytest.skip(f"{label} SKIPPED: {package} is not installed; run "
                    "`npm install --prefix tests/js` (make test does it when npm exists)")
    return exe


@pytest.fixture
def broker(tmp_path):
    with EmulatedBroker(tmp_path / "data") as b:
        yield b


@pytest.fixture
def no_faults(broker):
    """No injected fault on the (module's) broker before or after the test: a module
    sharing one broker uses it with ``pytestmark = pytest.mark.usefixtures("no_faults")``."""
    broker.faults.clear()
    yield
    broker.faults.clear()


@pytest.fixture(scope="session")
def azurite(tmp_path_factory):
    """Azurite's blob service (tests/azurite.py), one for the session; yields its
    connection string. Tests use containers of their own."""
    from tests.azurite import running_azurite

    with running_azurite(tmp_path_factory.mktemp("azurite")) as connection_string:
        yield connection_string


@pytest.fixture
def metered(tmp_path):
    """(broker, clock): a namespace of 1 throughput unit on a virtual clock that stands
    still, with Kafka, AMQP and HTTP, and a hub of one partition named ``hub``."""
    from kafka_wire.coordinator.clock import VirtualClock
    from kafka_wire.eventhubs.model import EventHubsModel, Namespace

    clock = VirtualClock(start_ms=time.time_ns() // 1_000_000)
    model = EventHubsModel({"metered-ns": Namespace("metered-ns", units=1)}, "metered-ns")
    with EmulatedBroker(tmp_path / "data", clock=clock, eventhubs=model, amqp=True, http=True) as b:
        b.create_hub("hub", 1)
        yield b, clock


@pytest.fixture
def broker_factory(tmp_path):
    """Start (and restart) brokers on one data directory; all stopped at the end."""
    started: list[EmulatedBroker] = []

    def make(**settings) -> EmulatedBroker:
        b = EmulatedBroker(tmp_path / "data", **settings).start()
        started.append(b)
        return b

    yield make
    for b in started:
        b.stop()


class BrokerProcess:
    """``kafka-wire serve`` as a child process; stopped by PID."""

    READY = re.compile(r"bootstrap\.servers=(\S+)")

    def __init__(self, data_dir: Path, port: int = 0, extra: list[str] | None = None) -> None:
        self.data_dir = data_dir
        self.port = port
        self.extra = extra or []
        self.proc: subprocess.Popen | None = None
        self.bootstrap_servers: str | None = None
        self.log_path = data_dir.parent / f"broker-{os.getpid()}-{time.monotonic_ns()}.log"

    def launcher(self) -> list[str]:
        """What runs the CLI (a subclass may wrap it)."""
        return [sys.executable, "-m", "kafka_wire.cli"]

    def start(self, timeout: float = 30) -> "BrokerProcess":
        cmd = [*self.launcher(), "serve", "--data-dir", str(self.data_dir),
               "--listen", f"127.0.0.1:{self.port}", *self.extra]
        if not any(a.startswith("--http-listen") for a in self.extra):
            cmd.append("--no-http")  # never the fixed port 5300 unless a test asks for HTTP
        if not any(a.startswith(("--amqp-listen", "--amqps-listen", "--no-amqp")) for a in self.extra):
            cmd.append("--no-amqp")  # nor 5672/5671
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, cwd=ROOT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log_path.read_text(errors="replace")
            m = self.READY.search(text)
            if m:
                self.bootstrap_servers = m.group(1)
                self.port = int(self.bootstrap_servers.rsplit(":", 1)[1])
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"broker exited early:\n{text}")
            time.sleep(0.02)
        self.kill()
        raise RuntimeError("broker did not become ready in time")

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        self._close_log()

    def terminate(self, timeout: float = 20) -> int:
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                raise
        self._close_log()
        return self.proc.returncode if self.proc else 0

    def _close_log(self) -> None:
        log = getattr(self, "_log", None)
        if log is not None and not log.closed:
            log.close()

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture
def broker_process(tmp_path):
    procs: list[BrokerProcess] = []

    def make(port: int = 0, extra: list[str] | None = None) -> BrokerProcess:
        p = BrokerProcess(tmp_path / "data", port, extra).start()
        procs.append(p)
        return p

    yield make
    for p in procs:
        p.kill()
