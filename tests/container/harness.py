"""What the container tests share: free ports, the official settings as environment, a TCP
forwarder that stands in for `docker run -p HOST:CONTAINER`, the waits of the Testcontainers
modules (log line, /health, ports), and the docker daemon (or the loud reason it is missing).

Every server here listens on 127.0.0.1: containers run with `--network host` and
KAFKA_WIRE_LISTEN_HOST=127.0.0.1, on free ports (this machine runs other brokers at once)."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
IMAGE = os.environ.get("KAFKA_WIRE_IMAGE", "kafka-wire:dev")
READY_LINE = "Emulator Service is Successfully Up!"
EMULATOR_CS = ("Endpoint=sb://localhost:{amqp};SharedAccessKeyName=RootManageSharedAccessKey;"
               "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;")
# The official emulator's compose file's environment (docker-compose.yml here keeps it).
OFFICIAL_ENV = {"ACCEPT_EULA": "Y", "BLOB_SERVER": "azurite", "METADATA_SERVER": "azurite"}
# The official sample Config.json, with a second hub.
CONFIG_JSON = {"UserConfig": {
    "NamespaceConfig": [{"Type": "EventHub", "Name": "emulatorNs1", "Entities": [
        {"Name": "eh1", "PartitionCount": "2", "ConsumerGroups": [{"Name": "cg1"}]},
        {"Name": "orders", "PartitionCount": 4, "ConsumerGroups": [{"Name": "billing"}]}]}],
    "LoggingConfig": {"Type": "File"}}}


def free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class Ports:
    """One container's ports, as environment variables of the image."""

    def __init__(self) -> None:
        (self.kafka, self.kafka_tls, self.amqp, self.amqps, self.health,
         self.https) = free_ports(6)

    def env(self) -> dict[str, str]:
        return {"KAFKA_WIRE_LISTEN_HOST": "127.0.0.1", "KAFKA_PORT": str(self.kafka),
                "KAFKA_TLS_PORT": str(self.kafka_tls), "AMQP_PORT": str(self.amqp),
                "AMQPS_PORT": str(self.amqps), "HEALTH_PORT": str(self.health),
                "HTTPS_PORT": str(self.https)}

    @property
    def connection_string(self) -> str:
        return EMULATOR_CS.format(amqp=self.amqp)


class Forwarder:
    """127.0.0.1:<port> → 127.0.0.1:<target>, byte for byte: what a mapped port is."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            self.connections += 1
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._closed = True
        self.listener.close()


# -- the waits of the Testcontainers modules ----------------------------------------------------
def wait_for(what: str, check: Callable[[], bool], timeout: float = 60.0) -> float:
    """Seconds until check() holds; AssertionError naming `what` after `timeout`."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if check():
            return time.monotonic() - start
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {timeout:.0f} s")


def health(port: int, timeout: float = 2.0) -> int | None:
    """The status of GET /health, None when nothing answers (never waits past `timeout`)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return None


def port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def write_config(directory: Path, config: dict = CONFIG_JSON) -> Path:
    path = directory / "Config.json"
    path.write_text(json.dumps(config, indent=2))
    path.chmod(0o644)
    return path


def kafka_round_trip_through(bootstrap: str, password: str, topic: str = "eh1",
                             ca: Path | None = None) -> dict:
    """Produce and consume on `topic` through `bootstrap` only (SASL_SSL trusting `ca` if
    given); what Metadata advertised."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient

    conf = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL" if ca else "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": "$ConnectionString",
            "sasl.password": password}
    if ca:
        conf["ssl.ca.location"] = str(ca)
    metadata = AdminClient(conf).list_topics(timeout=20)
    brokers = [f"{b.host}:{b.port}" for b in metadata.brokers.values()]
    producer = Producer(conf)
    for i in range(10):
        producer.produce(topic, key=b"k%d" % i, value=b"through the mapped port %d" % i, partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({**conf, "group.id": "cg1", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values = []
    deadline = time.monotonic() + 30
    while len(values) < 10 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            values.append(msg.value())
    consumer.commit(asynchronous=False)
    committed = consumer.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
    consumer.close()
    return {"brokers": brokers, "values": values, "committed": committed}


# -- docker ---------------------------------------------------------------------------------------
def docker_unavailable() -> str | None:
    """Why no container can run here, or None."""
    if shutil.which("docker") is None:
        return "no `docker` command (as root, `make docker` installs docker.io and starts dockerd)"
    try:
        info = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"],
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"`docker info` failed: {exc}"
    if info.returncode != 0:
        return ("no docker daemon answers (`docker info`: "
                + (info.stderr.strip().splitlines() or ["?"])[-1]
                + "); as root, `make docker` starts one")
    return None


def build_image() -> str | None:
    """`make image` (cached layers make a rebuild quick); the reason it failed, or None."""
    proc = subprocess.run(["make", "-s", "-C", str(ROOT), "image", f"IMAGE={IMAGE}"],
                          capture_output=True, text=True, timeout=1200)
    if proc.returncode != 0:
        return f"`make image` failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return None


def docker(*args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout,
                          check=check)


class Container:
    """`docker run -d --network host` of the image, with the official settings and a Config.json."""

    def __init__(self, ports: Ports, config: Path | None, env: dict[str, str] | None = None,
                 image: str = IMAGE) -> None:
        self.ports = ports
        args = ["run", "-d", "--network", "host"]
        for k, v in {**OFFICIAL_ENV, **ports.env(), **(env or {})}.items():
            args += ["-e", f"{k}={v}"]
        if config is not None:
            args += ["-v", f"{config}:/Eventhubs_Emulator/ConfigFiles/Config.json:ro"]
        self.ready_lines = 0
        self.started = time.monotonic()
        self.id = docker(*args, image).stdout.strip()

    def logs(self) -> str:
        proc = docker("logs", self.id, check=False)
        return proc.stdout + proc.stderr

    def wait_ready(self, timeout: float = 60) -> dict[str, float]:
        """The Testcontainers waits: Java's log line; .NET's and Go's /health and ports. Seconds
        from `docker run` (or `docker start`) to the line and to /health 200."""
        lines = self.ready_lines  # `docker logs` keeps the lines of earlier runs
        wait_for("the readiness line", lambda: self.logs().count(READY_LINE) > lines, timeout)
        times = {"ready_line": time.monotonic() - self.started}
        wait_for("/health 200", lambda: health(self.ports.health) == 200, timeout)
        times["health_200"] = time.monotonic() - self.started
        for port in (self.ports.amqp, self.ports.health, self.ports.kafka):
            wait_for(f"port {port}", lambda: port_open(port), timeout)
        self.ready_lines = lines + 1
        return times

    def stop(self, timeout: int = 10) -> float:
        start = time.monotonic()
        docker("stop", "-t", str(timeout), self.id, timeout=timeout + 30)
        return time.monotonic() - start

    def start(self) -> None:
        self.started = time.monotonic()
        docker("start", self.id)

    def exit_code(self) -> int:
        return int(docker("inspect", "-f", "{{.State.ExitCode}}", self.id).stdout.strip())

    def remove(self) -> None:
        docker("rm", "-f", "-v", self.id, check=False)
