"""The capture job: ``eventhubs`` source -> ``eventhubs-capture`` sink.

``run(settings)`` blocks (``once``: until what is in the log now is
captured); ``run_in_background(settings)`` runs it on a thread next to a
broker and returns a handle with ``stop()``. Settings are plain values, so
the CLI (or ``kafka-wire serve``) passes them down without this package
knowing the server.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from kafka_wire.capture.naming import DEFAULT_NAME_FORMAT, check_name_format
from kafka_wire.capture.notifications import EVENTS_FILE
from kafka_wire.capture.windows import DEFAULT_INTERVAL_SECONDS, DEFAULT_SIZE_LIMIT_BYTES
from kafka_wire.capture.writers import normalize_encoding, remove_leftovers

from .session import get_session, register
from .sink import SINK_NAME, UNREADABLE_FILE
from .source import SOURCE_NAME

logger = logging.getLogger(__name__)


@dataclass
class CaptureJobSettings:
    """What one capture job does. ``data_dir`` or ``bootstrap`` says where
    events come from; ``kafka_options`` (kafka-python names, e.g.
    ``security_protocol``) apply to ``bootstrap``."""

    namespace: str
    hubs: list[str]
    out_dir: str
    encoding: str = "avro"
    data_dir: str | None = None
    bootstrap: str | None = None
    kafka_options: dict[str, str] = field(default_factory=dict)
    interval_seconds: float = DEFAULT_INTERVAL_SECONDS
    size_limit_bytes: int = DEFAULT_SIZE_LIMIT_BYTES
    skip_empty: bool = False
    name_format: str = DEFAULT_NAME_FORMAT
    partition_key: bool = True
    once: bool = False
    master: str | None = None  # None: local[*], or spark-submit's master
    spark_log_file: str | None = None  # the JVM's own output, when this job starts Spark
    spark_scratch_dir: str | None = None  # its local and temporary files, when it starts Spark
    checkpoint_dir: str | None = None  # default: <out_dir>/_capture/<namespace>-<encoding>-<hubs hash>
    trigger_seconds: float = 2.0
    grace_seconds: float = 2.0
    blob_connection_string: str | None = None  # with blob_container: files go to Blob storage,
    blob_container: str | None = None          # out_dir keeps the job's state and staged files
    starting_position: str = "earliest"  # or "latest", or a time (ms): the first event enqueued then

    def __post_init__(self) -> None:
        self.encoding = normalize_encoding(self.encoding)
        check_name_format(self.name_format)
        if not self.hubs:
            raise ValueError("capture needs at least one event hub (--hub NAME)")
        if self.starting_position not in ("earliest", "latest") and not str(self.starting_position).isdigit():
            raise ValueError(f"starting position {self.starting_position!r} is not earliest, latest or a "
                             "time in ms")
        if bool(self.blob_connection_string) != bool(self.blob_container):
            raise ValueError("Blob storage needs both a connection string and a container")
        if bool(self.data_dir) == bool(self.bootstrap):
            raise ValueError("capture reads either a data directory (--data-dir) or a broker (--bootstrap)")

    @property
    def checkpoint(self) -> str:
        if self.checkpoint_dir:
            return self.checkpoint_dir
        tag = hashlib.sha1(",".join(sorted(self.hubs)).encode()).hexdigest()[:8]
        return str(Path(self.out_dir) / "_capture" / f"{self.namespace}-{self.encoding}-{tag}")


@dataclass
class CaptureTotals:
    events: int = 0
    files: int = 0
    empty_files: int = 0
    bytes: int = 0
    unreadable_batches: int = 0  # left out: their records cannot be read (sink.UNREADABLE_FILE)


class ProgressWatcher:
    """Totals of the CaptureFileCreated records appended since it started."""

    def __init__(self, out_dir: str):
        self.path = Path(out_dir) / EVENTS_FILE
        self._pos = self.path.stat().st_size if self.path.exists() else 0
        self._partial = b""
        self.unreadable_path = Path(out_dir) / UNREADABLE_FILE
        self._unreadable_pos = self.unreadable_path.stat().st_size if self.unreadable_path.exists() else 0
        self.totals = CaptureTotals()

    def poll(self) -> bool:
        """Read new records; True if the totals changed."""
        try:  # (whole lines only: the sink appends each commit's lines at once)
            with open(self.unreadable_path, "rb") as f:
                f.seek(self._unreadable_pos)
                data = f.read()
            data = data[:data.rfind(b"\n") + 1]
            self._unreadable_pos += len(data)
            skipped = data.count(b"\n")
            self.totals.unreadable_batches += skipped
        except FileNotFoundError:
            skipped = 0
        try:
            with open(self.path, "rb") as f:
                f.seek(self._pos)
                data = f.read()
        except FileNotFoundError:
            return bool(skipped)
        self._pos += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()
        for line in lines:
            if line.strip():
                d = json.loads(line)["data"]
                self.totals.events += d["eventCount"]
                self.totals.files += 1
                self.totals.empty_files += d["eventCount"] == 0
                self.totals.bytes += d["sizeInBytes"]
        return bool(lines) or bool(skipped)


def start_query(spark, settings: CaptureJobSettings):
    """Start the streaming query (returns a pyspark StreamingQuery)."""
    Path(settings.out_dir).mkdir(parents=True, exist_ok=True)
    n = remove_leftovers(settings.out_dir)
    if n:
        logger.info("removed %d temporary files left by an interrupted capture", n)
    # Where the events are: the source plans from it, the sink reads from it (plan rows).
    where = {"namespace": settings.namespace}
    if settings.bootstrap:
        where["bootstrap"] = settings.bootstrap
        where.update({f"kafka.{key}": str(value) for key, value in settings.kafka_options.items()})
    else:
        where["dataDir"] = str(Path(settings.data_dir).resolve())
    reader = (
        spark.readStream.format(SOURCE_NAME)
        .options(**where)
        .option("eventHubs", ",".join(settings.hubs))
        .option("windowSeconds", str(settings.interval_seconds))
        .option("sizeLimitBytes", str(settings.size_limit_bytes))
        .option("skipEmpty", str(settings.skip_empty).lower())
        .option("graceSeconds", str(settings.grace_seconds))
        .option("closeOpenWindows", str(settings.once).lower())
        .option("startingPosition", settings.starting_position)
        .option("rows", "plans")  # the sink reads each planned range: no event passes through the JVM
    )
    checkpoint = Path(settings.checkpoint).resolve()
    writer = (
        reader.load().writeStream.format(SINK_NAME)
        .options(**where)
        .option("path", str(Path(settings.out_dir).resolve()))
        .option("format", settings.encoding)
        .option("nameFormat", settings.name_format)
        .option("partitionKey", str(settings.partition_key).lower())
        .option("journal", str(checkpoint / "capture-journal"))
        .option("checkpointLocation", str(checkpoint / "spark"))
        .option("blobConnectionString", settings.blob_connection_string or "")
        .option("blobContainer", settings.blob_container or "")
        .queryName(f"capture-{settings.namespace}-{'-'.join(settings.hubs)}"[:200])
    )
    if settings.once:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{settings.trigger_seconds} seconds")
    return writer.start()


def run(
    settings: CaptureJobSettings,
    *,
    spark=None,
    on_progress: Callable[[CaptureTotals], None] | None = None,
    stop: threading.Event | None = None,
) -> CaptureTotals:
    """Run the job until it is done (``once``), stopped, or interrupted."""
    t0 = time.monotonic()
    if spark is None:
        spark = get_session(settings.master, log_file=settings.spark_log_file,
                            scratch_dir=settings.spark_scratch_dir)
    else:
        register(spark)  # a session made elsewhere (tests, serve) may not know our formats yet
    started = time.monotonic()
    logger.info("Spark ready in %.1f s (%s)", started - t0, spark.sparkContext.master)
    # Spark resolves a Python data source used as a sink through the JVM thread's active
    # session, which a thread of ours (run_in_background) does not have yet.
    spark._jvm.org.apache.spark.sql.SparkSession.setActiveSession(spark._jsparkSession)
    watcher = ProgressWatcher(settings.out_dir)
    query = start_query(spark, settings)
    try:
        while query.isActive:
            query.awaitTermination(1)
            if watcher.poll() and on_progress:
                on_progress(watcher.totals)
            if stop is not None and stop.is_set():
                query.stop()
    except KeyboardInterrupt:
        logger.info("stopping capture")
        query.stop()
    error = query.exception()
    if error is not None:
        raise RuntimeError(f"capture failed: {error}")
    if watcher.poll() and on_progress:
        on_progress(watcher.totals)
    logger.info("capture done in %.1f s after Spark start: %d events in %d files", time.monotonic() - started,
                watcher.totals.events, watcher.totals.files)
    if watcher.totals.unreadable_batches:
        logger.warning("capture left out %d batches that cannot be read (listed in %s)",
                       watcher.totals.unreadable_batches, watcher.unreadable_path)
    return watcher.totals


class CaptureHandle:
    """A capture job running on a thread; ``stop()`` ends it and waits."""

    def __init__(self, settings: CaptureJobSettings, spark=None):
        self.settings = settings
        self.totals: CaptureTotals | None = None
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(spark,), name="kafka-wire-capture", daemon=True)
        self._thread.start()

    def _run(self, spark) -> None:
        try:
            self.totals = run(self.settings, spark=spark, stop=self._stop)
        except BaseException as exc:  # reported through .error and the log; the broker goes on
            self.error = exc
            logger.exception("capture of %s failed", ",".join(self.settings.hubs))

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 60) -> None:
        self._stop.set()
        self._thread.join(timeout)


def run_in_background(settings: CaptureJobSettings, spark=None) -> CaptureHandle:
    return CaptureHandle(settings, spark)
