"""Capture on a real Spark standalone cluster: the README's commands (a master
and two workers from the installed pyspark, then spark-submit of the capture
job reading through the Kafka protocol), run as written with this test's ports
and paths; one worker's executor is killed mid-run, and the files hold every
produced event exactly once."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from kafka_wire.spark.sink import TASK_DELAY
from kafka_wire.testing.ports import free_port
from kafka_wire.testing.processes import stop_processes

from .conftest import produce
from .helpers import check_capture

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
MARK = "<!-- cluster-commands"
TASK_DELAY_S = 6


def readme_commands() -> list[str]:
    """The shell lines of the README's cluster block."""
    text = (ROOT / "README.md").read_text()
    block = text[text.index(MARK):]
    block = block[block.index("```sh\n") + 6:]
    return [line for line in block[:block.index("```")].splitlines() if line.strip()]


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the processes whose parent is ``pid``."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):
            continue
        if ppid == pid:
            out.append((int(entry.name), cmd))
    return out


def _mid_task(work_dir: Path) -> bool:
    """Has an executor under this worker's work dir started a (delayed) write task?"""
    return any(TASK_DELAY in p.read_text(errors="replace") for p in work_dir.glob("app-*/*/stderr"))


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}")


def test_readme_cluster_commands_capture_everything_once_despite_a_lost_executor(broker, tmp_path):
    broker.create_hub("orders", 4)
    expected = produce(broker.bootstrap_servers, "orders", 120_000, compression="snappy", partitions=4)
    master, ui = free_port(), [free_port() for _ in range(3)]
    out = tmp_path / "capture"
    swap = {"7077": str(master), "8080": str(ui[0]), "8081": str(ui[1]), "8082": str(ui[2]),
            "/tmp/spark-worker-1": str(tmp_path / "w1"), "/tmp/spark-worker-2": str(tmp_path / "w2"),
            "127.0.0.1:9092": broker.bootstrap_servers, "$PWD/capture": str(out), "$PWD": str(ROOT)}
    pattern = re.compile("|".join(re.escape(k) for k in sorted(swap, key=len, reverse=True)))
    lines = [pattern.sub(lambda m: swap[m.group(0)], line) for line in readme_commands()]
    assert lines[0].startswith("SPARK_HOME=$(") and len(lines) == 5, lines
    spark_home = subprocess.run(["bash", "-c", lines[0] + ' && echo "$SPARK_HOME"'], cwd=ROOT, text=True,
                                capture_output=True, check=True).stdout.strip()
    # Every port on loopback; each write task waits a few seconds first, so the executor
    # killed below is mid-task however fast or loaded the machine is (the executors
    # inherit the workers' environment).
    env = dict(os.environ, SPARK_HOME=spark_home, SPARK_LOCAL_IP="127.0.0.1",
               **{TASK_DELAY: str(TASK_DELAY_S)})
    daemons: list[subprocess.Popen] = []
    logs = []
    try:
        for i, line in enumerate(lines[1:4]):
            assert line.endswith(" &"), line
            log = open(tmp_path / f"daemon-{i}.log", "wb")
            logs.append(log)
            # exec: the Popen's pid becomes spark-class's, then the JVM's (spark-class execs java)
            daemons.append(subprocess.Popen(["bash", "-c", "exec " + line[:-2]], cwd=ROOT, env=env,
                                            stdout=log, stderr=subprocess.STDOUT))
        _wait(lambda: all(b"Successfully registered with master" in (tmp_path / f"daemon-{i}.log").read_bytes()
                          for i in (1, 2)), 120, "both workers to register")
        driver_log = open(tmp_path / "driver.log", "wb")
        logs.append(driver_log)
        job = subprocess.Popen(["bash", "-c", lines[4]], cwd=ROOT, env=env, stdout=driver_log,
                               stderr=subprocess.STDOUT, start_new_session=True)
        try:
            worker = daemons[1].pid
            # Mid-task: the first worker's executor logged that a write task is waiting (its
            # stderr is in the worker's work dir), so the task has TASK_DELAY_S left to run.
            executor = _wait(lambda: _mid_task(tmp_path / "w1") and next(
                (pid for pid, cmd in _children(worker) if "CoarseGrainedExecutorBackend" in cmd), None),
                180, "an executor running a task on the first worker")
            assert job.poll() is None, "the capture job ended before the executor could be killed"
            os.kill(executor, signal.SIGKILL)
            assert job.wait(300) == 0, (tmp_path / "driver.log").read_text()[-4000:]
        finally:
            if job.poll() is None:
                os.killpg(job.pid, signal.SIGKILL)
                job.wait(30)
    finally:
        stop_processes(daemons)
        for log in logs:
            log.close()
    driver = (tmp_path / "driver.log").read_text()
    assert re.search(r"Lost executor|Executor .* (lost|exited)|ExecutorLostFailure", driver), driver[-4000:]
    check_capture(out, expected, namespace="emulatorNs1", hub="orders", encoding="avro")
