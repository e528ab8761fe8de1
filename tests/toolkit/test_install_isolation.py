"""Installing kafka-wire never shadows, nor is shadowed by, a user's own modules.

pytest loads kafka-wire's plugin (entry point pytest11) in every run of an
environment where it is installed. A user project with its own ``log.py``,
``spark.py`` and ``capture/`` package must collect and pass, and the plugin's
fixture must still work there. The run is a real pytest subprocess in a scratch
project outside the repository, against the installed kafka-wire.
"""
from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

CONFIG_JSON = Path(__file__).parents[1] / "eventhubs" / "data" / "Config.json"

USER_TESTS = '''
import log, spark, capture
import pytest

from kafka_wire.testing import EmulatedBroker


def test_own_modules_win():
    assert log.info("x") == "user log: x"
    assert spark.NAME == "user spark" and capture.WHAT == "user capture"


def test_plugin_fixture_works(kafka_wire):
    from confluent_kafka import Consumer, Producer, TopicPartition

    kafka_wire.create_hub("orders", partitions=2)
    producer = Producer({"bootstrap.servers": kafka_wire.bootstrap_servers})
    producer.produce("orders", b"v", key=b"k", partition=1)
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": kafka_wire.bootstrap_servers, "group.id": "g"})
    consumer.assign([TopicPartition("orders", 1, 0)])
    msg = consumer.poll(10)
    consumer.close()
    assert (msg.key(), msg.value()) == (b"k", b"v")


@pytest.mark.kafka_wire(config_file="Config.json")  # relative to this file, not the cwd
def test_marker_config_file_is_relative_to_the_test_file(kafka_wire):
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": kafka_wire.bootstrap_servers,
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                         "sasl.username": "$ConnectionString",
                         "sasl.password": kafka_wire.connection_string()})
    hubs = admin.list_topics(timeout=10).topics
    assert len(hubs["eh1"].partitions) == 2  # the hub Config.json declares


def test_create_hub_before_start_says_so():
    with pytest.raises(RuntimeError, match="not running"):
        EmulatedBroker().create_hub("early")
'''


def _scratch_project(root: Path) -> Path:
    project = root / "userproject"
    (project / "capture").mkdir(parents=True)
    (project / "log.py").write_text('def info(msg):\n    return f"user log: {msg}"\n')
    (project / "spark.py").write_text('NAME = "user spark"\n')
    (project / "capture" / "__init__.py").write_text('WHAT = "user capture"\n')
    tests = project / "tests"
    tests.mkdir()
    (tests / "test_user.py").write_text(textwrap.dedent(USER_TESTS))
    shutil.copy(CONFIG_JSON, tests / "Config.json")
    return project


def test_installed_distribution_has_one_top_level_name():
    top_level = importlib.metadata.distribution("kafka-wire").read_text("top_level.txt")
    assert top_level.split() == ["kafka_wire"]


def test_user_project_with_log_spark_capture_modules_runs_with_the_plugin(tmp_path):
    project = _scratch_project(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    # The working directory is the user's project (a different folder from the
    # tests), as a user runs it: the config file is found next to the test.
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "tests"],
                          cwd=project, env=env, capture_output=True, text=True, timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "4 passed" in out, out
    # kafka-python's legacy importlib.resources calls must not flood the user's run.
    assert "DeprecationWarning" not in out, out
