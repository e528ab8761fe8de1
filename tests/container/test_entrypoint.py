"""The image's entry point (kafka_wire.container) without docker: the official emulator's
environment becomes `serve` flags, the readiness line comes once every listener is up, /health
answers as the official one, SIGTERM ends it, and a Kafka client that reaches the broker only
through another port (what `docker run -p` makes) keeps working after Metadata when
KAFKA_ADVERTISED_ADDRESS names that port."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_wire.container import DEFAULT_CONFIG, config_file, official_settings_line, serve_arguments
from tests.container.harness import (
    OFFICIAL_ENV, READY_LINE, Forwarder, Ports, health, kafka_round_trip_through, wait_for,
    write_config,
)


def test_official_environment_becomes_serve_flags(tmp_path):
    args = serve_arguments({"KAFKA_ADVERTISED_ADDRESS": "localhost:29092", "AMQP_PORT": "5673",
                            "KAFKA_WIRE_ARGS": "--num-partitions 3"}, ["--no-auto-create"],
                           tmp_path / "Config.json")
    flags = dict(zip(args[1::2], args[2::2]))
    assert args[0] == "serve" and flags["--config"] == str(tmp_path / "Config.json")
    assert flags["--listen"] == "0.0.0.0:9092" and flags["--advertise"] == "localhost:29092"
    assert flags["--tls-listen"] == "0.0.0.0:9093" and flags["--tls-advertise"] == "localhost:9093"
    assert flags["--amqp-listen"] == "0.0.0.0:5673" and flags["--amqps-listen"] == "0.0.0.0:5671"
    assert flags["--http-listen"] == "0.0.0.0:5300" and flags["--https-listen"] == "0.0.0.0:5443"
    assert flags["--data-dir"] == "/data"
    assert args[-3:] == ["--num-partitions", "3", "--no-auto-create"]
    # A listener on one address advertises that address unless told otherwise.
    args = serve_arguments({"KAFKA_WIRE_LISTEN_HOST": "127.0.0.1"}, [], tmp_path / "c.json")
    assert "127.0.0.1:9092" == args[args.index("--advertise") + 1]
    with pytest.raises(ValueError, match="AMQP_PORT='x' is not a port"):
        serve_arguments({"AMQP_PORT": "x"}, [], tmp_path / "c.json")


def test_config_json_then_toml_then_the_official_sample(tmp_path):
    official, toml = tmp_path / "Config.json", tmp_path / "kafka-wire.toml"
    path, origin = config_file({}, official, toml)
    assert "eh1" in path.read_text() and "official sample" in origin
    path.unlink()
    official.write_text("{}")
    assert config_file({}, official, toml)[0] == official
    toml.write_text("")
    assert config_file({}, official, toml) == (toml, f"kafka-wire TOML ({official} is not read)")
    assert config_file({"KAFKA_WIRE_CONFIG": "/x.toml"}, official, toml)[0] == Path("/x.toml")
    assert DEFAULT_CONFIG["UserConfig"]["NamespaceConfig"][0]["Name"] == "emulatorNs1"


def test_eula_and_azurite_settings_are_one_line_never_an_error():
    line = official_settings_line(OFFICIAL_ENV, "/data")
    assert "ACCEPT_EULA=Y" in line and "BLOB_SERVER=azurite and METADATA_SERVER=azurite not contacted" in line
    assert "ACCEPT_EULA not set" in official_settings_line({}, "/data")
    assert "\n" not in line


def _start(tmp_path: Path, ports: Ports, **env: str) -> subprocess.Popen:
    config = write_config(tmp_path)
    full = {**os.environ, **OFFICIAL_ENV, **ports.env(), "KAFKA_WIRE_CONFIG": str(config),
            "KAFKA_WIRE_DATA_DIR": str(tmp_path / "data"), **env}
    return subprocess.Popen([sys.executable, "-m", "kafka_wire.container"], env=full,
                            stdout=subprocess.PIPE, stderr=(tmp_path / "stderr").open("w"), text=True)


def _stop(proc: subprocess.Popen) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()


def test_ready_line_after_every_listener_and_health_as_the_official(tmp_path):
    ports = Ports()
    proc = _start(tmp_path, ports)
    try:
        assert proc.stdout.readline().strip() == READY_LINE
        # The line comes after the last listener: everything answers at once.
        assert health(ports.health) == 200
        for port in (ports.kafka, ports.kafka_tls, ports.amqp, ports.amqps, ports.https):
            wait_for(f"port {port}", lambda: _connects(port), timeout=1)
        stderr = (tmp_path / "stderr").read_text()
        assert "BLOB_SERVER=azurite and METADATA_SERVER=azurite not contacted" in stderr
        start = time.monotonic()
        assert _stop(proc) == 0
        assert time.monotonic() - start < 10
        assert health(ports.health, timeout=1) is None  # gone, and asking does not hang
    finally:
        if proc.poll() is None:
            proc.kill()


def _connects(port: int) -> bool:
    import socket
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def test_kafka_through_a_mapped_port_with_the_advertised_address(tmp_path):
    ports = Ports()
    forwarder = Forwarder(ports.kafka)  # the host's port; the broker's own stays unused by the client
    proc = _start(tmp_path, ports, KAFKA_ADVERTISED_ADDRESS=f"127.0.0.1:{forwarder.port}")
    try:
        assert proc.stdout.readline().strip() == READY_LINE
        seen = kafka_round_trip_through(f"127.0.0.1:{forwarder.port}", ports.connection_string)
        assert seen["brokers"] == [f"127.0.0.1:{forwarder.port}"]
        assert seen["values"] == [b"through the mapped port %d" % i for i in range(10)]
        assert seen["committed"] == 10
        assert forwarder.connections >= 2  # bootstrap, then the advertised broker: both mapped
        assert _stop(proc) == 0
    finally:
        forwarder.close()
        if proc.poll() is None:
            proc.kill()


def test_kafka_tls_through_a_mapped_port_with_the_tls_advertised_address(tmp_path):
    ports = Ports()
    forwarder = Forwarder(ports.kafka_tls)
    proc = _start(tmp_path, ports, KAFKA_TLS_ADVERTISED_ADDRESS=f"127.0.0.1:{forwarder.port}")
    try:
        assert proc.stdout.readline().strip() == READY_LINE
        seen = kafka_round_trip_through(f"127.0.0.1:{forwarder.port}", ports.connection_string,
                                        ca=tmp_path / "data" / "tls" / "ca.pem")
        assert seen["brokers"] == [f"127.0.0.1:{forwarder.port}"]
        assert len(seen["values"]) == 10 and seen["committed"] == 10
        assert _stop(proc) == 0
    finally:
        forwarder.close()
        if proc.poll() is None:
            proc.kill()
