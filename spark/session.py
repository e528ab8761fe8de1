"""The SparkSession capture runs in, and registration of our data sources."""

from __future__ import annotations

import logging
import os
import sys

logger = logging.getLogger(__name__)


def get_session(master: str | None = None, app_name: str = "kafka-wire-capture", conf: dict | None = None):
    """The active SparkSession, or a new one for ``master`` with the UI off
    and few shuffle partitions (capture never shuffles). Our data sources
    are registered on it. Without ``master``: spark-submit's when it started
    us, else ``local[*]``."""
    # Python workers must run this interpreter (the venv with capture's dependencies);
    # otherwise they fail with "Python worker failed to connect back".
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:  # not under spark-submit
        master = "local[*]"
    builder = SparkSession.builder
    if master is not None:
        builder = builder.master(master)
    builder = (
        builder.appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.stopGracefullyOnShutdown", "true")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    register(spark)
    return spark


def register(spark) -> None:
    from .sink import EventHubsCaptureSink
    from .source import EventHubsSource

    spark.dataSource.register(EventHubsSource)
    spark.dataSource.register(EventHubsCaptureSink)
