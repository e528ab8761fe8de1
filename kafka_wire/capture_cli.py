"""``kafka-wire capture``: run Event Hubs Capture (a Spark job) over event hubs.

    kafka-wire capture --data-dir ./data --namespace emulatorNs1 --hub orders \\
        --format avro --out ./capture --interval-seconds 300 --size-mb 300 --once

Spark is imported only when this command runs: the broker never needs it.
Progress (events and files written) goes to stderr while it runs; every
file gets a CaptureFileCreated line in ``OUT/_capture_events.jsonl``.
"""
from __future__ import annotations

import argparse
import os
import sys

CAPTURE_PACKAGES = ("pyspark", "pyarrow", "fastavro")
INSTALL_HINT = ("install it with `.venv/bin/pip install -e '.[capture]'` in a kafka-wire clone, "
                "or `pip install 'kafka-wire[capture]'`")


def missing_capture_packages() -> list[str]:
    """The capture extra's packages that cannot be imported here (the core install
    has none of them); imported for real, since a broken install also counts."""
    missing = []
    for name in CAPTURE_PACKAGES:
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    return missing


def capture_unavailable() -> str | None:
    """One line saying why Capture cannot run here, or None when it can."""
    missing = missing_capture_packages()
    if not missing:
        return None
    return (f"Capture needs the capture extra, which is not installed (no {', '.join(missing)}): "
            + INSTALL_HINT)


def add_parser(sub) -> None:
    p = sub.add_parser("capture", help="write Event Hubs Capture files (Avro or Parquet) with Spark")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data-dir", help="the broker's data directory (read directly, safe while it runs)")
    src.add_argument("--bootstrap", help="read through the Kafka protocol from HOST:PORT instead")
    p.add_argument("--namespace", default="emulatorNs1", help="namespace (default emulatorNs1)")
    p.add_argument("--hub", action="append", required=True, metavar="NAME",
                   help="event hub to capture (repeat for more)")
    p.add_argument("--format", default="avro", choices=("avro", "parquet"), help="file encoding (default avro)")
    p.add_argument("--out", required=True, help="output directory (stands for the storage container)")
    p.add_argument("--blob-container", metavar="NAME",
                   help="upload the files to this Blob storage container (--out then keeps the job's state)")
    p.add_argument("--blob-connection-string", metavar="CS", default=os.environ.get("AZURE_STORAGE_CONNECTION_STRING"),
                   help="the storage account's connection string, e.g. UseDevelopmentStorage=true for Azurite "
                        "(default: $AZURE_STORAGE_CONNECTION_STRING)")
    p.add_argument("--interval-seconds", type=float, default=300,
                   help="time window (default 300; Event Hubs allows 60-900)")
    p.add_argument("--size-mb", type=float, default=300,
                   help="size window in MB of 1,048,576 bytes (default 300; Event Hubs allows 10-500)")
    p.add_argument("--skip-empty", action="store_true", help="write no file for a window without events")
    p.add_argument("--name-format", help="file name format with the nine tokens (default "
                   "{Namespace}/{EventHub}/{PartitionId}/{Year}/{Month}/{Day}/{Hour}/{Minute}/{Second})")
    p.add_argument("--no-partition-key", action="store_true",
                   help="do not copy the Kafka key into x-opt-partition-key (historical Event Hubs)")
    p.add_argument("--once", action="store_true", help="capture what is there now, closing open windows, and stop")
    p.add_argument("--master", help="Spark master URL (default local[*], or spark-submit's)")
    p.add_argument("--checkpoint", help="Spark checkpoint directory (default OUT/_capture/...)")
    p.add_argument("--trigger-seconds", type=float, default=2.0, help="how often to look for new events")
    p.add_argument("--kafka-option", action="append", default=[], metavar="KEY=VALUE",
                   help="kafka-python client setting for --bootstrap, e.g. security_protocol=SASL_SSL")
    p.set_defaults(func=run_capture)


def settings_from_args(args: argparse.Namespace):
    from kafka_wire.spark.capture_job import CaptureJobSettings

    from kafka_wire.client_options import parse_kafka_options

    kafka_options = parse_kafka_options(args.kafka_option)
    if args.interval_seconds < 1:
        raise ValueError(f"--interval-seconds {args.interval_seconds} is too small: use 1 or more")
    if args.size_mb <= 0:
        raise ValueError(f"--size-mb {args.size_mb} is invalid: use a positive number")
    kwargs = {}
    if args.name_format:
        kwargs["name_format"] = args.name_format
    return CaptureJobSettings(
        namespace=args.namespace, hubs=list(dict.fromkeys(args.hub)), out_dir=args.out, encoding=args.format,
        data_dir=args.data_dir, bootstrap=args.bootstrap, kafka_options=kafka_options,
        interval_seconds=args.interval_seconds, size_limit_bytes=int(args.size_mb * 1024 * 1024),
        skip_empty=args.skip_empty, partition_key=not args.no_partition_key, once=args.once, master=args.master,
        checkpoint_dir=args.checkpoint, trigger_seconds=args.trigger_seconds,
        blob_container=args.blob_container,
        blob_connection_string=args.blob_connection_string if args.blob_container else None, **kwargs,
    )


def run_capture(args: argparse.Namespace) -> int:
    problem = capture_unavailable()
    if problem:
        print(f"kafka-wire capture: {problem}", file=sys.stderr)
        return 2
    settings = settings_from_args(args)
    from kafka_wire.spark.capture_job import run  # Spark only now

    def progress(totals) -> None:
        print(f"capture: {totals.events} events, {totals.files} files written "
              f"({totals.empty_files} empty, {totals.bytes} bytes)", file=sys.stderr, flush=True)

    print(f"capture: starting Spark ({settings.master or 'local[*]'}) for {settings.namespace}/{','.join(settings.hubs)} "
          f"-> {settings.out_dir} ({settings.encoding})", file=sys.stderr, flush=True)
    totals = run(settings, on_progress=progress)
    print(f"capture: done: {totals.events} events in {totals.files} files", file=sys.stderr, flush=True)
    return 0
