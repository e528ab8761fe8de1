"""Run `kafka-wire` as a person does: a subprocess, its stderr read back."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

READY = "kafka-wire ready"


def kafka_wire(*args: str, env: dict | None = None, cwd=None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kafka_wire.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=cwd)


def without_capture_extra(tmp_path: Path) -> dict:
    """An environment where pyspark, pyarrow and fastavro cannot be imported, as on
    the `make run` install: stub packages first on the path raise ModuleNotFoundError."""
    blocker = tmp_path / "no-capture-extra"
    for name in ("pyspark", "pyarrow", "fastavro"):
        (blocker / name).mkdir(parents=True)
        (blocker / name / "__init__.py").write_text(
            f"raise ModuleNotFoundError(\"No module named '{name}'\", name={name!r})\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(blocker), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


class Serve:
    """`kafka-wire serve` in the background until its ready line; stopped by PID."""

    def __init__(self, *args: str, env: dict | None = None, log: Path) -> None:
        self.log_path = log
        self._log = open(log, "w")
        if not any(a.startswith(("--amqp-listen", "--no-amqp")) for a in args):
            args = (*args, "--no-amqp")  # never the fixed port 5672 in tests
        self.proc = subprocess.Popen([sys.executable, "-m", "kafka_wire.cli", "serve", *args],
                                     stdout=self._log, stderr=subprocess.STDOUT, env=env)

    def output(self) -> str:
        return self.log_path.read_text()

    def wait_for(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.output()
            if text in out:
                return out
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited ({self.proc.returncode}) before {text!r}:\n{out}")
            time.sleep(0.05)
        raise AssertionError(f"no {text!r} within {timeout} s:\n{self.output()}")

    def stop(self, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()
        return self.proc.returncode
