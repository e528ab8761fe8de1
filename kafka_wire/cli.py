"""The kafka-wire command line.

Errors a person can fix are one line on stderr, never a traceback. Exit
status: 2 for a bad flag, config file or argument (as argparse does), 1 when
the broker cannot start in this environment (an address in use, a data
directory it cannot write), 0 otherwise.
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

from kafka_wire.config import BrokerConfig, parse_durability, parse_host_port

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
DESCRIPTION = ("kafka-wire: a local Azure Event Hubs namespace that speaks the Kafka protocol. "
               "Run `kafka-wire COMMAND --help` for a command's flags.")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line: the usage block of `serve` is a
    screenful and hides the message."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _int_at_least(minimum: int, unit: str = ""):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is too small: use {minimum:,} or more{unit}")
        return value
    return parse


def _address(default_port: int):
    def parse(text: str) -> tuple[str, int]:
        try:
            return parse_host_port(text, default_port)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return parse


def _durability(text: str) -> str:
    try:
        return parse_durability(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _log_level(text: str) -> str:
    level = text.upper()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a log level: use one of "
                                         + ", ".join(LOG_LEVELS))
    return level


def _check_files(config: BrokerConfig) -> None:
    """Certificate files named by flags or the config must exist: say which one does not."""
    for attr, source in (("tls_cert_file", "--tls-cert / [tls] cert_file"),
                         ("tls_key_file", "--tls-key / [tls] key_file"),
                         ("tls_ca_file", "--tls-ca / [tls] ca_file")):
        path = getattr(config, attr)
        if path is not None and not Path(path).is_file():
            raise ValueError(f"{source}: no such file: {path}")


def _serve(args: argparse.Namespace) -> int:
    from kafka_wire.broker import serve_forever

    config = BrokerConfig()
    if args.config:  # first, so that flags given on the command line win
        from kafka_wire.eventhubs.config_file import apply_config_file
        apply_config_file(config, Path(args.config))
    if args.data_dir:
        config.data_dir = Path(args.data_dir)
    if args.listen:
        config.listen_host, config.listen_port = args.listen
    if args.advertise:
        config.advertise_host, config.advertise_port = parse_host_port(args.advertise,
                                                                       config.listen_port)
    if args.tls_listen:
        config.tls_listen_host, config.tls_listen_port = args.tls_listen
    if args.tls_advertise:
        config.tls_advertise_host, config.tls_advertise_port = parse_host_port(
            args.tls_advertise, config.tls_listen_port)
    if bool(args.tls_cert) != bool(args.tls_key):
        raise ValueError("give both --tls-cert and --tls-key, or neither (a certificate is then "
                         "generated into DATA_DIR/tls/)")
    if args.tls_cert:
        config.tls_cert_file, config.tls_key_file = Path(args.tls_cert), Path(args.tls_key)
    if args.tls_ca:
        config.tls_ca_file = Path(args.tls_ca)
    if args.node_id is not None:
        config.node_id = args.node_id
    if args.max_request_bytes is not None:
        config.max_request_bytes = args.max_request_bytes
    if args.connections_max_idle_ms is not None:
        config.connections_max_idle_ms = args.connections_max_idle_ms
    if args.failed_authentication_delay_ms is not None:
        config.failed_authentication_delay_ms = args.failed_authentication_delay_ms
    if args.no_auto_create:
        config.auto_create_topics = False
    if args.durability is not None:
        config.durability = args.durability
    if args.transaction_max_timeout_ms is not None:
        config.transaction_max_timeout_ms = args.transaction_max_timeout_ms
    if args.num_partitions is not None:
        config.num_partitions = args.num_partitions
    if args.log_max_open_files is not None:
        # A process-wide cap (the descriptor limit is per process), so not a BrokerConfig field.
        from kafka_wire.log.handles import shared_cache
        shared_cache().max_open_files = args.log_max_open_files
    if args.no_http:
        config.http_listen_host = None
    elif args.http_listen:
        config.http_listen_host, config.http_listen_port = args.http_listen
    else:  # the default address: if it is taken, serve Kafka anyway
        config.http_listen_host, config.http_listen_port = "127.0.0.1", 5300
        config.http_optional = True
    if args.https_listen:
        config.https_listen_host, config.https_listen_port = args.https_listen
    elif config.https_listen_host is None and config.tls_listen_host and config.http_listen_host:
        config.https_listen_host = config.tls_listen_host
        config.https_optional = True  # the default port: if taken, serve the rest anyway
    if args.no_amqp:
        config.amqp_listen_host = config.amqps_listen_host = None
    else:
        if args.amqp_listen:
            config.amqp_listen_host, config.amqp_listen_port = args.amqp_listen
        elif config.amqp_listen_host is None:  # the default address: if taken, serve Kafka anyway
            config.amqp_listen_host, config.amqp_listen_port = "127.0.0.1", 5672
            config.amqp_optional = True
        if args.amqps_listen:
            config.amqps_listen_host, config.amqps_listen_port = args.amqps_listen
        elif config.amqps_listen_host is None and config.tls_listen_host:
            config.amqps_listen_host = config.tls_listen_host
            config.amqps_optional = True  # the default port: if taken, serve the rest anyway
    if args.capture_dir:
        config.capture_dir = Path(args.capture_dir)
    if args.chaos is not None:
        config.chaos = args.chaos
    _check_files(config)
    config.capture_jobs = True  # capture-enabled hubs get their Spark job beside the broker
    run(serve_forever(config))
    return 0


def _sas(args: argparse.Namespace) -> int:
    import time

    from kafka_wire.eventhubs import connection_string, sas
    from kafka_wire.eventhubs.config_file import load

    model, _settings = load(Path(args.config))
    name = args.namespace or model.default_namespace
    ns = model.namespaces.get(name)
    if ns is None:
        raise ValueError(f"namespace {name!r} is not in {args.config} (it has: "
                         f"{', '.join(sorted(model.namespaces))})")
    if args.hub and ns.hub(args.hub) is None:
        raise ValueError(f"event hub {args.hub!r} is not in namespace {name!r} of {args.config} "
                         f"(it has: {', '.join(sorted(ns.hubs)) or 'no event hubs'})")
    policy = ns.policy(args.policy, hub=args.hub)
    if policy is None:
        raise ValueError(f"SAS policy {args.policy!r} is not defined on namespace {name!r}"
                         + (f" or event hub {args.hub!r}" if args.hub else ""))
    hub = args.hub or policy.hub
    if policy.hub is not None and hub.lower() != policy.hub.lower():
        raise ValueError(f"policy {policy.name!r} belongs to event hub {policy.hub!r}")
    if args.publisher and not hub:
        raise ValueError("--publisher needs --hub: publishers belong to an event hub")
    if args.ttl <= 0:
        raise ValueError("--ttl must be a positive number of seconds")
    host = model.endpoint_host(name)
    expiry = int(time.time()) + args.ttl
    key = policy.secondary_key if args.secondary else policy.primary_key
    if not key:
        raise ValueError(f"policy {policy.name!r} has no secondary key")
    token = sas.generate(sas.resource_uri(host, hub, args.publisher), policy.name, key, expiry)
    print(token)
    print(connection_string.build(host, signature=token, entity_path=hub))
    return 0


def _token(args: argparse.Namespace) -> int:
    from kafka_wire.eventhubs.subscription import KEY_FILE, read_key

    if args.config:
        from kafka_wire.config import BrokerConfig
        from kafka_wire.eventhubs.config_file import apply_config_file

        config = BrokerConfig()
        apply_config_file(config, Path(args.config))
        if config.subscription_key:
            print(config.subscription_key)
            return 0
    key = read_key(Path(args.data_dir))
    if key is None:
        print(f"kafka-wire token: no {KEY_FILE} in {Path(args.data_dir).resolve()}: start the broker "
              "on that data directory once (it makes the key), or give --config with [server] "
              "subscription_key", file=sys.stderr)
        return 1
    print(key)
    return 0


def _report(args: argparse.Namespace) -> int:
    import json

    from kafka_wire.eventhubs.report import format_report, load

    data_dir = Path(args.data_dir)
    if not data_dir.is_dir():
        print(f"kafka-wire report: no data directory at {data_dir.resolve()}: give the broker's "
              "with --data-dir", file=sys.stderr)
        return 2
    if not os.access(data_dir, os.R_OK | os.X_OK):
        print(f"kafka-wire report: cannot read data directory {data_dir.resolve()}",
              file=sys.stderr)
        return 1
    from kafka_wire.eventhubs.managed import ManagedState

    entries = load(data_dir)
    changed = ManagedState(data_dir).differences()
    if args.json:
        print(json.dumps({"entries": entries, "managed": changed}, indent=1))
    else:
        sys.stdout.write(format_report(entries))
        if changed:  # where the running namespaces differ from the config file
            sys.stdout.write("\nChanged through the management API (kept in "
                             f"{data_dir / '_management'}, not in the config file):\n")
            sys.stdout.writelines(f"  {line}\n" for line in changed)
    return 0


def run(coro) -> None:
    try:
        import uvloop
    except ImportError:
        asyncio.run(coro)
    else:
        uvloop.run(coro)


def _add_groups_command(sub) -> None:
    """``kafka-wire groups``: consumer groups, members, lag (kafka_wire/groups_cli.py)."""
    from kafka_wire.groups_cli import add_parser

    add_parser(sub)


def _add_txns_command(sub) -> None:
    """``kafka-wire txns``: find and abort hanging transactions (kafka_wire/txns_cli.py)."""
    from kafka_wire.txns_cli import add_parser

    add_parser(sub)


def _add_fault_command(sub) -> None:
    from kafka_wire.fault_cli import add_parser

    add_parser(sub)


def _add_replica_command(sub) -> None:
    """``kafka-wire replica``: geo-replicas of a running broker (kafka_wire/replica_cli.py)."""
    from kafka_wire.replica_cli import add_parser

    add_parser(sub)


def _add_capture_command(sub) -> None:
    """``kafka-wire capture``: Event Hubs Capture with Spark (kafka_wire/capture_cli.py)."""
    from kafka_wire.capture_cli import add_parser

    add_parser(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafka-wire", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"kafka-wire {_version()}")
    parser.add_argument("--log-level", default="INFO", metavar="LEVEL", type=_log_level,
                        help="DEBUG, INFO (default), WARNING or ERROR")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    serve = sub.add_parser("serve", help="run the broker", description="Run the broker: Kafka on "
                           "--listen, the HTTP console on --http-listen, until SIGINT or SIGTERM.")
    serve.add_argument("--config", metavar="FILE", help="Config.json of the official emulator, or a kafka-wire TOML file")
    serve.add_argument("--data-dir", metavar="DIR", help="where partitions live (default ./data)")
    serve.add_argument("--listen", type=_address(9092), metavar="HOST:PORT",
                       help="Kafka listener (default 127.0.0.1:9092)")
    serve.add_argument("--advertise", metavar="HOST:PORT",
                       help="address put in Metadata (default: the listener's)")
    serve.add_argument("--tls-listen", type=_address(9093), metavar="HOST:PORT",
                       help="SASL_SSL listener (Event Hubs uses 9093; default: none)")
    serve.add_argument("--tls-advertise", metavar="HOST:PORT",
                       help="address the SASL_SSL listener puts in Metadata")
    serve.add_argument("--tls-cert", metavar="PEM", help="PEM server certificate (chain) for --tls-listen "
                       "(default: generated into DATA_DIR/tls/ with its own CA)")
    serve.add_argument("--tls-key", metavar="PEM", help="PEM private key of --tls-cert")
    serve.add_argument("--tls-ca", metavar="PEM", help="CA certificate of --tls-cert, printed for clients")
    serve.add_argument("--node-id", metavar="N", type=_int_at_least(0),
                       help="broker id put in Metadata (default 0)")
    serve.add_argument("--max-request-bytes", metavar="BYTES", type=_int_at_least(1024, " bytes"),
                       help="largest request frame accepted; bigger ones close the connection "
                       "(Kafka's socket.request.max.bytes; default 104857600)")
    serve.add_argument("--connections-max-idle-ms", metavar="MS", type=_int_at_least(0),
                       help="close connections idle this long (default 600000 as Kafka; Event "
                       "Hubs uses 240000; 0: never)")
    serve.add_argument("--failed-authentication-delay-ms", metavar="MS", type=_int_at_least(0),
                       help="after a failed SASL authentication, close the connection this much "
                       "later, so clients read the error (Kafka's "
                       "connection.failed.authentication.delay.ms; default 100; 0: at once)")
    serve.add_argument("--num-partitions", metavar="N", type=_int_at_least(1),
                       help="partitions of auto-created event hubs (default 1)")
    serve.add_argument("--no-auto-create", action="store_true", help="refuse topic auto-creation")
    serve.add_argument("--durability", type=_durability, metavar="MODE",
                       help="crash (default): acknowledged writes survive a crash of the broker "
                       "process; power-loss: every acknowledged write (records, group commits, "
                       "transaction state) is fsynced before the answer. See docs/durability.md")
    serve.add_argument("--transaction-max-timeout-ms", metavar="MS", type=_int_at_least(1000),
                       help="longest transaction.timeout.ms a producer may ask for, and how long an "
                       "open transaction its coordinator does not know may hold a partition before "
                       "it is aborted (Kafka's transaction.max.timeout.ms; default 900000)")
    serve.add_argument("--log-max-open-files", metavar="N", type=_int_at_least(1),
                       help="descriptors the partition logs may keep open; the least recently written "
                       "partitions close theirs past it, and idle ones after 10 s (default: a quarter of "
                       "ulimit -n, 16 to 4096)")
    http = serve.add_mutually_exclusive_group()
    http.add_argument("--http-listen", type=_address(5300), metavar="HOST:PORT",
                      help="health API, Prometheus /metrics and web console (default "
                      "127.0.0.1:5300, the official emulator's health port)")
    http.add_argument("--no-http", action="store_true", help="no HTTP listener")
    serve.add_argument("--https-listen", type=_address(5443), metavar="HOST:PORT",
                       help="the HTTP listener's pages and Event Hubs REST API over TLS, with the "
                       "SASL_SSL listener's certificate (default: the --tls-listen host, port 5443, "
                       "when TLS is on)")
    amqp = serve.add_mutually_exclusive_group()
    amqp.add_argument("--amqp-listen", type=_address(5672), metavar="HOST:PORT",
                      help="AMQP 1.0 for the Azure Event Hubs SDKs (default 127.0.0.1:5672, the "
                      "official emulator's port)")
    amqp.add_argument("--no-amqp", action="store_true", help="no AMQP or AMQPS listener")
    serve.add_argument("--amqps-listen", type=_address(5671), metavar="HOST:PORT",
                       help="AMQP over TLS with the SASL_SSL listener's certificate (default: the "
                       "--tls-listen host, port 5671, when TLS is on)")
    serve.add_argument("--capture-dir", metavar="DIR", help="Capture output directory whose recent files the "
                       "console shows (read from its _capture_events.jsonl)")
    serve.add_argument("--chaos", metavar="SEED", type=_int_at_least(0),
                       help="chaos mode for soak runs: fire a mix of recoverable faults at a low "
                       "rate on every front end, seeded by SEED (docs/faults.md, Chaos mode)")
    serve.add_argument("--log-level", dest="sub_log_level", metavar="LEVEL", type=_log_level,
                       help="DEBUG, INFO (default), WARNING or ERROR")
    serve.set_defaults(func=_serve)

    sas_cmd = sub.add_parser("sas", help="print a SAS token and a connection string for a policy")
    sas_cmd.add_argument("--config", required=True, help="the config file that defines the policy")
    sas_cmd.add_argument("--namespace", help="namespace (default: the config's default)")
    sas_cmd.add_argument("--policy", required=True, help="SAS policy name, e.g. RootManageSharedAccessKey")
    sas_cmd.add_argument("--hub", help="scope the token to this event hub")
    sas_cmd.add_argument("--publisher", help="scope the token to this publisher of --hub")
    sas_cmd.add_argument("--ttl", type=int, default=3600, help="validity in seconds (default 3600)")
    sas_cmd.add_argument("--secondary", action="store_true", help="sign with the secondary key")
    sas_cmd.set_defaults(func=_sas)

    token = sub.add_parser("token", help="print the management plane's bearer token",
                           description="Print the subscription's credential: the bearer token the "
                           "management API needs to create, delete and list namespaces (and to "
                           "manage any namespace) once a namespace requires authentication.")
    token.add_argument("--management", action="store_true", required=True,
                       help="the management plane's token (the only kind so far)")
    token.add_argument("--data-dir", default="./data", help="the broker's data directory")
    token.add_argument("--config", help="a config file whose [server] subscription_key is the token")
    token.set_defaults(func=_token)

    report = sub.add_parser("report", help="print the Event Hubs compatibility report")
    report.add_argument("--data-dir", default="./data", help="the broker's data directory")
    report.add_argument("--json", action="store_true", help="print the raw entries as JSON")
    report.set_defaults(func=_report)

    _add_groups_command(sub)
    _add_txns_command(sub)
    _add_capture_command(sub)
    _add_fault_command(sub)
    _add_replica_command(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        level = _log_level(getattr(args, "sub_log_level", None) or args.log_level)
    except argparse.ArgumentTypeError as exc:
        parser.error(f"argument --log-level: {exc}")
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from kafka_wire.broker import StartupError

    try:
        return args.func(args)
    except ValueError as exc:
        print(f"kafka-wire: {exc}", file=sys.stderr)
        return 2
    except StartupError as exc:
        print(f"kafka-wire: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # `kafka-wire report --json | head`: the reader left; end quietly, as Unix tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kafka-wire")
    except PackageNotFoundError:  # run from a checkout without installing
        return "(not installed)"


if __name__ == "__main__":
    sys.exit(main())
