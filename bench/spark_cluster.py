"""A Spark standalone cluster on this machine for benchmarks: a master and
``workers`` workers of ``cores`` cores each, from the installed pyspark, on
127.0.0.1 and free ports; stopped by PID."""
from __future__ import annotations

import os
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from kafka_wire.testing.ports import free_port
from kafka_wire.testing.processes import stop_processes


@contextmanager
def local_cluster(workers: int, cores: int = 1, memory: str = "2g"):
    """Yields the master URL once every worker has registered."""
    import pyspark

    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    work = Path(tempfile.mkdtemp(prefix="kafka-wire-spark-cluster-"))
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    commands = [["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                 "--webui-port", str(free_port())]]
    commands += [["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", str(cores),
                  "--memory", memory, "--webui-port", str(free_port()), "--work-dir", str(work / f"w{i}")]
                 for i in range(workers)]
    procs, logs = [], []
    try:
        for i, args in enumerate(commands):
            log = open(work / f"daemon-{i}.log", "wb")
            logs.append(log)
            procs.append(subprocess.Popen([str(spark_class), *args], stdout=log, stderr=subprocess.STDOUT,
                                          env=dict(os.environ, SPARK_HOME=str(spark_class.parent.parent),
                                                   SPARK_LOCAL_IP="127.0.0.1")))
        deadline = time.monotonic() + 120
        while not all(b"Successfully registered with master" in (work / f"daemon-{i}.log").read_bytes()
                      for i in range(1, workers + 1)):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise RuntimeError(f"the Spark cluster did not start: see {work}")
            time.sleep(0.2)
        yield url
    finally:
        stop_processes(procs)
        for log in logs:
            log.close()
