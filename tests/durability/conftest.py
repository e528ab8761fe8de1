"""A broker subprocess whose fsyncs are journaled, so a test can SIGKILL it and
then drop every write it did not fsync (fsync_journal.power_loss)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


class JournaledBroker:
    READY = re.compile(r"bootstrap\.servers=(\S+)")

    def __init__(self, data_dir: Path, journal_dir: Path, extra: list[str], port: int = 0) -> None:
        self.data_dir, self.journal_dir, self.extra, self.port = data_dir, journal_dir, extra, port
        self.proc: subprocess.Popen | None = None
        self.bootstrap_servers = ""
        self.log_path = data_dir.parent / f"broker-{time.monotonic_ns()}.log"

    def start(self, timeout: float = 30) -> "JournaledBroker":
        cmd = [sys.executable, str(HERE / "journaled_broker.py"), str(self.journal_dir), "serve",
               "--data-dir", str(self.data_dir), "--listen", f"127.0.0.1:{self.port}", "--no-http", "--no-amqp",
               *self.extra]
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
            time.sleep(0.02)  # polling the log for readiness, bounded by the deadline
        self.kill()
        raise RuntimeError("broker did not become ready in time")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        if getattr(self, "_log", None) is not None:
            self._log.close()

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")


@pytest.fixture
def journaled_broker(tmp_path):
    started: list[JournaledBroker] = []

    def make(extra: list[str], port: int = 0) -> JournaledBroker:
        b = JournaledBroker(tmp_path / "data", tmp_path / "journal", extra, port).start()
        started.append(b)
        return b

    yield make
    for b in started:
        b.kill()
