"""get_session's scratch directory is made only for the JVM the call starts: a call that
finds a session running (a job beside the broker's own, in one process) makes no
directory it will not use."""
from __future__ import annotations

from pathlib import Path

from kafka_wire.spark.session import get_session


def test_a_running_session_makes_no_scratch_directory(spark, tmp_path):
    unused = tmp_path / "not-made"
    again = get_session("local[2]", scratch_dir=unused)
    assert again.sparkContext is spark.sparkContext  # the running one, not a new JVM
    assert not unused.exists()
    # The one the running JVM uses exists (made when it started).
    assert Path(spark.sparkContext.getConf().get("spark.local.dir")).is_dir()
