"""The container's entry point: the official Event Hubs emulator's settings → ``kafka-wire serve``.

The image (``Dockerfile``) runs ``python -m kafka_wire.container``. It reads what the official
image reads and a few settings of kafka-wire's own, all from the environment, and runs the broker
in this process (no shell in between, so ``docker stop``'s SIGTERM reaches it):

======================================  ================================================================
``/Eventhubs_Emulator/ConfigFiles/``    the official ``Config.json``, read as is (namespace
``Config.json``                         ``emulatorNs1``); without one, the official sample's hub
                                        ``eh1`` (2 partitions, group ``cg1``)
``/kafka-wire/kafka-wire.toml``         kafka-wire's TOML, used instead of Config.json when mounted
``KAFKA_WIRE_CONFIG``                   any other config file (JSON or TOML)
``ACCEPT_EULA``, ``BLOB_SERVER``,       accepted and never an error: kafka-wire has no EULA and no
``METADATA_SERVER``                     Azurite; one log line says so
``KAFKA_ADVERTISED_ADDRESS``            HOST:PORT put in Kafka Metadata/FindCoordinator for the
                                        SASL_PLAINTEXT listener (default ``localhost:KAFKA_PORT``):
                                        the address a client outside reaches, e.g. a mapped port
``KAFKA_TLS_ADVERTISED_ADDRESS``        the same for the SASL_SSL listener (default
                                        ``localhost:KAFKA_TLS_PORT``)
``KAFKA_PORT`` 9092,                    listener ports; ``HEALTH_PORT`` serves ``/health``, the
``KAFKA_TLS_PORT`` 9093,                management and REST APIs and the console
``AMQP_PORT`` 5672, ``AMQPS_PORT``
5671, ``HEALTH_PORT`` 5300,
``HTTPS_PORT`` 5443
``KAFKA_WIRE_LISTEN_HOST``              the address every listener binds (default ``0.0.0.0``, as a
                                        container needs for ``-p``; ``127.0.0.1`` with
                                        ``--network host``)
``KAFKA_WIRE_DATA_DIR``                 events, checkpoints, management changes (default ``/data``)
``KAFKA_WIRE_LOG_LEVEL``               DEBUG, INFO (default), WARNING or ERROR
``KAFKA_WIRE_ARGS``                     more ``serve`` flags; arguments after the image name too
======================================  ================================================================

Once every listener is up it prints the official readiness line, ``Emulator Service is
Successfully Up!`` (Testcontainers for Java waits for it); ``/health`` on ``HEALTH_PORT`` answers
200 from then on and 503 while starting or stopping.

As PID 1 it forks: the child is the broker, the parent forwards signals to it and reaps orphans
(what tini does), so ``docker stop`` ends the broker cleanly and no zombie stays.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shlex
import signal
import sys
import tempfile
import traceback
from collections.abc import Mapping
from pathlib import Path

from kafka_wire.log_lines import shortened
from kafka_wire.whole_numbers import whole_number

OFFICIAL_CONFIG = Path("/Eventhubs_Emulator/ConfigFiles/Config.json")
KAFKA_WIRE_TOML = Path("/kafka-wire/kafka-wire.toml")
READY_LINE = "Emulator Service is Successfully Up!"
# The official sample Config.json's shape, for a container started without one.
DEFAULT_CONFIG = {"UserConfig": {
    "NamespaceConfig": [{"Type": "EventHub", "Name": "emulatorNs1", "Entities": [
        {"Name": "eh1", "PartitionCount": 2, "ConsumerGroups": [{"Name": "cg1"}]}]}],
    "LoggingConfig": {"Type": "Console"}}}
PORTS = {"KAFKA_PORT": 9092, "KAFKA_TLS_PORT": 9093, "AMQP_PORT": 5672, "AMQPS_PORT": 5671,
         "HEALTH_PORT": 5300, "HTTPS_PORT": 5443}
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
              signal.SIGUSR2)

log = logging.getLogger(__name__)


def _port(env: Mapping[str, str], name: str) -> int:
    text = env.get(name, "").strip() or str(PORTS[name])
    port = whole_number(text, most=5)
    if port is None or not 0 < port < 65536:
        raise ValueError(f"{name}={shortened(repr(text))} is not a port: use a number from 1 to 65535")
    return port


def _hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def config_file(env: Mapping[str, str], official: Path = OFFICIAL_CONFIG,
                toml: Path = KAFKA_WIRE_TOML) -> tuple[Path, str]:
    """The config file to serve, and where it came from (for the log)."""
    if env.get("KAFKA_WIRE_CONFIG"):
        return Path(env["KAFKA_WIRE_CONFIG"]), "KAFKA_WIRE_CONFIG"
    if toml.is_file():
        note = f" ({official} is not read)" if official.is_file() else ""
        return toml, "kafka-wire TOML" + note
    if official.is_file():
        return official, "the official emulator's Config.json"
    fd, name = tempfile.mkstemp(prefix="kafka-wire-default-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(DEFAULT_CONFIG, f)
    return Path(name), f"no {official} mounted: the official sample's hub eh1 (2 partitions, group cg1)"


def serve_arguments(env: Mapping[str, str], extra: list[str], config: Path) -> list[str]:
    """``kafka-wire serve`` arguments for the container's environment."""
    host = env.get("KAFKA_WIRE_LISTEN_HOST", "").strip() or "0.0.0.0"
    ports = {name: _port(env, name) for name in PORTS}
    # A wildcard is no address to give clients: advertise localhost, as the official image does.
    reachable = "localhost" if host in ("0.0.0.0", "::", "") else host
    advertise = env.get("KAFKA_ADVERTISED_ADDRESS", "").strip() or _hostport(reachable, ports["KAFKA_PORT"])
    tls_advertise = (env.get("KAFKA_TLS_ADVERTISED_ADDRESS", "").strip()
                     or _hostport(reachable, ports["KAFKA_TLS_PORT"]))
    args = ["serve", "--config", str(config),
            "--data-dir", env.get("KAFKA_WIRE_DATA_DIR", "").strip() or "/data",
            "--listen", _hostport(host, ports["KAFKA_PORT"]), "--advertise", advertise,
            "--tls-listen", _hostport(host, ports["KAFKA_TLS_PORT"]), "--tls-advertise", tls_advertise,
            "--amqp-listen", _hostport(host, ports["AMQP_PORT"]),
            "--amqps-listen", _hostport(host, ports["AMQPS_PORT"]),
            "--http-listen", _hostport(host, ports["HEALTH_PORT"]),
            "--https-listen", _hostport(host, ports["HTTPS_PORT"])]
    return args + shlex.split(env.get("KAFKA_WIRE_ARGS", "")) + list(extra)


def official_settings_line(env: Mapping[str, str], data_dir: str) -> str:
    """One line on what became of the official image's ACCEPT_EULA, BLOB_SERVER, METADATA_SERVER."""
    eula = env.get("ACCEPT_EULA")
    eula_text = (f"ACCEPT_EULA={eula}" if eula is not None else "ACCEPT_EULA not set") + \
        " (kafka-wire is Apache-2.0: no EULA to accept)"
    servers = [f"{k}={env[k]}" for k in ("BLOB_SERVER", "METADATA_SERVER") if env.get(k)]
    store = (" and ".join(servers) + " not contacted" if servers else "no BLOB_SERVER/METADATA_SERVER")
    return (f"official emulator settings: {eula_text}; {store}: events, checkpoints and metadata "
            f"stay in {data_dir} (kafka-wire needs no Azurite)")


class _ReadyLine(logging.Handler):
    """Prints READY_LINE when the broker logs that it serves (after every listener is up)."""

    def emit(self, record: logging.LogRecord) -> None:
        if isinstance(record.msg, str) and record.msg.startswith("kafka-wire ready"):
            print(READY_LINE, flush=True)


def serve(argv: list[str], env: Mapping[str, str]) -> int:
    from kafka_wire import cli

    try:
        level = cli._log_level(env.get("KAFKA_WIRE_LOG_LEVEL", "").strip() or "INFO")
        config, origin = config_file(env)
        args = serve_arguments(env, argv, config)
    except (ValueError, argparse.ArgumentTypeError) as exc:
        print(f"kafka-wire: {exc}", file=sys.stderr)
        return 2
    # The broker logs at INFO at least (the ready line hangs on its "kafka-wire ready"), the
    # console shows KAFKA_WIRE_LOG_LEVEL and up; serve's own basicConfig then changes nothing.
    shown = logging.StreamHandler(sys.stderr)
    shown.setLevel(level)
    shown.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=min(logging.INFO, logging.getLevelName(level)), handlers=[shown])
    log.info("config: %s (%s)", config, origin)
    log.info("%s", official_settings_line(env, args[args.index("--data-dir") + 1]))
    log.info("kafka-wire %s", shlex.join(args))
    logging.getLogger("kafka_wire.broker").addHandler(_ReadyLine())
    return cli.main(args)


def _init(argv: list[str], env: Mapping[str, str]) -> int:
    """PID 1: run the broker as a child, forward signals to it, reap every orphan."""
    child = os.fork()
    if child == 0:
        code = 1
        try:
            code = serve(argv, env)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    for sig in _FORWARDED:
        signal.signal(sig, lambda signum, _frame: os.kill(child, signum))
    while True:
        try:
            pid, status = os.wait()
        except ChildProcessError:
            return 1
        if pid == child:
            code = os.waitstatus_to_exitcode(status)
            return code if code >= 0 else 128 - code


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if os.getpid() == 1:
        return _init(argv, os.environ)
    return serve(argv, os.environ)


if __name__ == "__main__":
    sys.exit(main())
