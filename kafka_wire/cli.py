"""The ``kafka-wire`` command line."""
from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from kafka_wire.config import BrokerConfig, parse_host_port


def _serve(args: argparse.Namespace) -> int:
    from kafka_wire.broker import serve_forever

    config = BrokerConfig()
    if args.config:  # first, so that flags given on the command line win
        from kafka_wire.eventhubs.config_file import apply_config_file
        apply_config_file(config, Path(args.config))
    if args.data_dir:
        config.data_dir = Path(args.data_dir)
    if args.listen:
        config.listen_host, config.listen_port = parse_host_port(args.listen)
    if args.advertise:
        config.advertise_host, config.advertise_port = parse_host_port(args.advertise,
                                                                       config.listen_port)
    if args.tls_listen:
        config.tls_listen_host, config.tls_listen_port = parse_host_port(args.tls_listen, 9093)
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
    if args.max_request_bytes:
        config.max_request_bytes = args.max_request_bytes
    if args.connections_max_idle_ms is not None:
        config.connections_max_idle_ms = args.connections_max_idle_ms
    if args.no_auto_create:
        config.auto_create_topics = False
    if args.num_partitions:
        config.num_partitions = args.num_partitions
    if args.no_http:
        config.http_listen_host = None
    elif args.http_listen:
        config.http_listen_host, config.http_listen_port = parse_host_port(args.http_listen, 5300)
    else:  # the default address: if it is taken, serve Kafka anyway
        config.http_listen_host, config.http_listen_port = "127.0.0.1", 5300
        config.http_optional = True
    if args.capture_dir:
        config.capture_dir = Path(args.capture_dir)
    handles = []
    if config.eventhubs is not None:
        # Hubs whose config enables Capture get the Spark job alongside the broker.
        from kafka_wire.capture_cli import start_capture_jobs
        handles = start_capture_jobs(config.eventhubs, config.data_dir)
    try:
        run(serve_forever(config))
    finally:
        for handle in handles:
            handle.stop()
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


def _report(args: argparse.Namespace) -> int:
    import json

    from kafka_wire.eventhubs.report import format_report, load

    entries = load(Path(args.data_dir))
    if args.json:
        print(json.dumps({"entries": entries}, indent=1))
    else:
        sys.stdout.write(format_report(entries))
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


def _add_capture_command(sub) -> None:
    """``kafka-wire capture``: Event Hubs Capture with Spark (kafka_wire/capture_cli.py)."""
    from kafka_wire.capture_cli import add_parser

    add_parser(sub)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafka-wire", description=__doc__)
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the broker")
    serve.add_argument("--config", help="Config.json of the official emulator, or a kafka-wire TOML file")
    serve.add_argument("--data-dir", help="where partitions live (default ./data)")
    serve.add_argument("--listen", help="HOST:PORT (default 127.0.0.1:9092)")
    serve.add_argument("--advertise", help="HOST:PORT put in Metadata (default: the listener)")
    serve.add_argument("--tls-listen", help="HOST:PORT of a SASL_SSL listener (Event Hubs uses 9093)")
    serve.add_argument("--tls-advertise", help="HOST:PORT the SASL_SSL listener puts in Metadata")
    serve.add_argument("--tls-cert", help="PEM server certificate (chain) for --tls-listen "
                       "(default: generated into DATA_DIR/tls/ with its own CA)")
    serve.add_argument("--tls-key", help="PEM private key of --tls-cert")
    serve.add_argument("--tls-ca", help="CA certificate of --tls-cert, printed for clients")
    serve.add_argument("--node-id", type=int)
    serve.add_argument("--max-request-bytes", type=int)
    serve.add_argument("--connections-max-idle-ms", type=int,
                       help="close connections idle this long (default 600000 as Kafka; Event "
                       "Hubs uses 240000; 0: never)")
    serve.add_argument("--num-partitions", type=int, help="partitions of auto-created topics")
    serve.add_argument("--no-auto-create", action="store_true", help="refuse topic auto-creation")
    serve.add_argument("--http-listen", help="HOST:PORT of the health API, Prometheus /metrics and "
                       "web console (default 127.0.0.1:5300, the official emulator's health port)")
    serve.add_argument("--no-http", action="store_true", help="no HTTP listener")
    serve.add_argument("--capture-dir", help="Capture output directory whose recent files the "
                       "console shows (read from its _capture_events.jsonl)")
    serve.add_argument("--log-level", dest="sub_log_level", help=argparse.SUPPRESS)
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

    report = sub.add_parser("report", help="print the Event Hubs compatibility report")
    report.add_argument("--data-dir", default="./data", help="the broker's data directory")
    report.add_argument("--json", action="store_true", help="print the raw entries as JSON")
    report.set_defaults(func=_report)

    _add_groups_command(sub)
    _add_capture_command(sub)

    args = parser.parse_args(argv)
    level = getattr(args, "sub_log_level", None) or args.log_level
    logging.basicConfig(level=level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"kafka-wire: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
