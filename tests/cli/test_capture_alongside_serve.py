"""`serve` with a capture-enabled hub says, once, that it starts a Spark JVM and where
Spark's log goes; Spark's own lines (WARN, stage progress bars, shutdown noise) stay
out of the broker's log, and its scratch files in the data directory."""
from __future__ import annotations

import re

import pytest

from tests.cli.helpers import READY, Serve

TOML = """
[namespaces.capture-ns.eventhubs.orders]
partitions = 1
[namespaces.capture-ns.eventhubs.orders.capture]
enabled = true
destination = "{out}"
interval_seconds = 60
"""

SPARK_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (WARN|INFO|ERROR) ")  # log4j's console format


@pytest.mark.slow
def test_spark_beside_the_broker_is_announced_and_quiet(tmp_path):
    config = tmp_path / "capture.toml"
    config.write_text(TOML.format(out=tmp_path / "capture"))
    data = tmp_path / "data"
    serve = Serve("--config", str(config), "--data-dir", str(data), "--listen", "127.0.0.1:0",
                  "--no-http", log=tmp_path / "serve.log")
    try:
        serve.wait_for(READY)
        serve.wait_for("Spark ready in", timeout=180)  # the JVM is up and the query starts
        # Spark's scratch (block manager, Python and artifact files, the JVM's temporary
        # files) is in the data directory, not in /tmp, where a killed JVM leaves it.
        scratch = sorted(p.name.split("-")[0] for p in (data / "capture-spark-tmp").iterdir())
        assert {"blockmgr", "spark"} <= set(scratch), scratch
    finally:
        assert serve.stop(timeout=90) == 0
    out = serve.output()
    announced = [ln for ln in out.splitlines() if "starts a Spark JVM" in ln]
    assert len(announced) == 1, out
    spark_log = data / "capture-spark.log"
    assert str(spark_log) in announced[0]
    assert [ln for ln in out.splitlines() if SPARK_LINE.match(ln)] == [], out
    assert "[Stage" not in out and "Traceback" not in out, out
    assert spark_log.stat().st_size > 0
