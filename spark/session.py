"""The SparkSession capture runs in, and registration of our data sources."""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path

logger = logging.getLogger(__name__)

_start_lock = threading.Lock()  # several capture jobs of one broker share one JVM


def get_session(master: str | None = None, app_name: str = "kafka-wire-capture", conf: dict | None = None,
                log_file: str | os.PathLike | None = None, scratch_dir: str | os.PathLike | None = None):
    """The active SparkSession, or a new one for ``master`` with the UI off
    and few shuffle partitions (capture never shuffles). Our data sources
    are registered on it. Without ``master``: spark-submit's when it started
    us, else ``local[*]``. ``log_file``: where the JVM's own output goes (its
    log lines, warnings and shutdown messages) when this call starts it;
    without it they share our stderr. ``scratch_dir``: where the JVM this call starts
    keeps its block manager, shuffle, Python and artifact files (``spark.local.dir``
    and ``java.io.tmpdir``; Spark's default is /tmp, where a killed JVM leaves them):
    the broker's capture jobs keep them in its data directory."""
    # Python workers must run this interpreter (the venv with capture's dependencies);
    # otherwise they fail with "Python worker failed to connect back".
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit
        master = "local[*]"
    settings = {
        "spark.app.name": app_name,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",  # no "[Stage 3:>" bars among our logs
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.streaming.stopGracefullyOnShutdown": "true",
        **(conf or {}),
    }
    scratch = None
    if scratch_dir is not None:
        scratch = Path(scratch_dir).resolve()
        settings.setdefault("spark.local.dir", str(scratch))
        java_options = settings.get("spark.driver.extraJavaOptions", "")
        settings["spark.driver.extraJavaOptions"] = f"{java_options} -Djava.io.tmpdir={scratch}".strip()
    if master is not None:
        settings["spark.master"] = master
        if master.startswith(("local", "spark://127.0.0.1:", "spark://localhost:")):
            # the driver's ports stay on loopback, like the broker's (and the cluster's)
            settings.setdefault("spark.driver.bindAddress", "127.0.0.1")
            settings.setdefault("spark.driver.host", "127.0.0.1")
    with _start_lock:
        from pyspark import SparkContext

        if scratch is not None and SparkContext._active_spark_context is None:
            scratch.mkdir(parents=True, exist_ok=True)  # (a running JVM keeps its own: made only to start one)
        if log_file is not None:
            _start_context_logging_to(log_file, settings)
        builder = SparkSession.builder
        for key, value in settings.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    register(spark)
    return spark


def _start_context_logging_to(log_file, settings: dict) -> None:
    """Start the SparkContext with the JVM's stdout and stderr going to ``log_file``
    (unless one runs already): a broker's log stays the broker's."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._active_spark_context is not None:
        return
    conf = SparkConf().setAll(list(settings.items()))
    Path(log_file).parent.mkdir(parents=True, exist_ok=True)
    out = open(log_file, "ab")  # the JVM keeps it; closed when the process ends
    gateway = launch_gateway(conf, popen_kwargs={"stdout": out, "stderr": out})
    SparkContext(conf=conf, gateway=gateway)
    # py4j logs each gateway connection it opens and closes at INFO.
    logging.getLogger("py4j").setLevel(logging.WARNING)


def register(spark) -> None:
    from .sink import EventHubsCaptureSink
    from .source import EventHubsSource

    spark.dataSource.register(EventHubsSource)
    spark.dataSource.register(EventHubsCaptureSink)
