"""kafka_wire defers kafka-python's package __init__ (its clients: ~150 ms of every
start) until a name of the package itself is asked for; then the package is the
real one. Each case runs in a fresh interpreter: this one imported both long ago."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def run(code: str) -> None:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_broker_imports_none_of_kafka_pythons_clients():
    run("""
        import sys
        import kafka_wire.broker, kafka_wire.cli
        clients = sorted(m for m in sys.modules if m.split(".")[:2] in (
            ["kafka", "admin"], ["kafka", "consumer"], ["kafka", "producer"], ["kafka", "net"]))
        assert clients == [], clients
        import kafka.errors
        assert kafka.errors.UnknownTopicOrPartitionError.errno == 3
        """)


@pytest.mark.parametrize("use", [
    "from kafka import KafkaConsumer, KafkaProducer, KafkaAdminClient, TopicPartition, __version__\n"
    "assert KafkaConsumer.__module__ == 'kafka.consumer.group' and __version__",
    "import kafka\nassert kafka.KafkaProducer.__name__ == 'KafkaProducer' and kafka.__title__ == 'kafka'",
    "from kafka import *\nassert KafkaAdminClient and OffsetAndMetadata",
    "import kafka.errors as E\nimport kafka\nassert kafka.errors is E and kafka.ConsumerRebalanceListener",
])
def test_the_package_is_the_real_one_when_asked(use):
    run("import kafka_wire.broker\n" + use + "\n"
        "import kafka, logging\n"
        "assert 'kafka.admin' in __import__('sys').modules\n"
        "assert not hasattr(type(kafka), '__getattr__') and '__getattr__' not in vars(kafka)\n"
        "assert any(isinstance(h, logging.NullHandler) for h in logging.getLogger('kafka').handlers)\n")


def test_a_package_imported_before_us_is_left_as_it_is():
    run("""
        import kafka
        before = kafka
        import kafka_wire.broker, sys
        assert sys.modules["kafka"] is before and "KafkaConsumer" in vars(before)
        """)


def test_an_unknown_name_is_an_attribute_error_after_the_real_init():
    run("""
        import kafka_wire.broker, kafka
        try:
            kafka.NoSuchThing
        except AttributeError:
            pass
        else:
            raise SystemExit("no AttributeError")
        assert "KafkaConsumer" in vars(kafka)
        """)
