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

    host, port = parse_host_port(args.listen)
    config = BrokerConfig(data_dir=Path(args.data_dir), listen_host=host, listen_port=port)
    if args.advertise:
        config.advertise_host, config.advertise_port = parse_host_port(args.advertise, port)
    if args.node_id is not None:
        config.node_id = args.node_id
    if args.max_request_bytes:
        config.max_request_bytes = args.max_request_bytes
    if args.no_auto_create:
        config.auto_create_topics = False
    if args.num_partitions:
        config.num_partitions = args.num_partitions
    if args.config:
        from kafka_wire.eventhubs.config_file import apply_config_file
        apply_config_file(config, Path(args.config))
    run(serve_forever(config))
    return 0


def run(coro) -> None:
    try:
        import uvloop
    except ImportError:
        asyncio.run(coro)
    else:
        uvloop.run(coro)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kafka-wire", description=__doc__)
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING or ERROR")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the broker")
    serve.add_argument("--config", help="Config.json of the official emulator, or a kafka-wire TOML file")
    serve.add_argument("--data-dir", default="./data", help="where partitions live (default ./data)")
    serve.add_argument("--listen", default="127.0.0.1:9092", help="HOST:PORT (default 127.0.0.1:9092)")
    serve.add_argument("--advertise", help="HOST:PORT put in Metadata (default: the listener)")
    serve.add_argument("--node-id", type=int)
    serve.add_argument("--max-request-bytes", type=int)
    serve.add_argument("--num-partitions", type=int, help="partitions of auto-created topics")
    serve.add_argument("--no-auto-create", action="store_true", help="refuse topic auto-creation")
    serve.add_argument("--log-level", dest="sub_log_level", help=argparse.SUPPRESS)
    serve.set_defaults(func=_serve)

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
