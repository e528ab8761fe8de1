"""Stopping the processes tests and benchmarks start (brokers, Azurite, Spark
daemons): by PID, politely first."""
from __future__ import annotations

import subprocess
from typing import Iterable


def stop_processes(procs: Iterable[subprocess.Popen], timeout: float = 30) -> None:
    """SIGTERM to each that still runs, then wait; SIGKILL what outlives ``timeout``."""
    procs = [p for p in procs if p.poll() is None]
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)
