"""Capture beside the broker: one Spark job per capture-enabled hub, started,
restarted and stopped as the namespaces change (the config file at start, the
management API while the broker runs).

A job is one streaming query on the process's Spark session (started by the
first job, or the one a test made). Its checkpoint lives under its destination
and depends on the hub and the encoding, so a job restarted with other windows
or another name format goes on where it stopped. A new checkpoint starts with
the events enqueued since Capture was enabled (or the earliest, with
``backfill``), as on Azure; each enabling through the management API has a
checkpoint of its own. Starting and stopping Spark queries blocks, so it
happens on a thread of its own, in order; the broker's event loop only hands
over the wanted state.
"""
from __future__ import annotations

import dataclasses
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

log = logging.getLogger(__name__)


def enabled_hubs(model) -> list[tuple[str, str, object]]:
    """(namespace, hub, a copy of its CaptureSettings) of every capture-enabled hub."""
    return [(ns_name, hub.name, dataclasses.replace(hub.capture))
            for ns_name, ns in model.namespaces.items() for hub in ns.hubs.values() if hub.capture.enabled]


def jobs_from_model(model, data_dir, now_ms: int, first_seen: dict | None = None) -> list:
    """The capture jobs of a model's capture-enabled hubs: see :func:`jobs_for`."""
    return jobs_for(enabled_hubs(model), data_dir, now_ms, first_seen)


def jobs_for(hubs: list, data_dir, now_ms: int, first_seen: dict | None = None) -> list:
    """One capture job per capture-enabled hub of ``enabled_hubs``, reading
    ``data_dir``. A hub enabled in the config file (no time recorded) counts as
    enabled when ``first_seen`` (updated) first saw it, else ``now_ms``.
    Destinations are taken as given (relative to the working directory), as the
    console does. Imports Spark's side of capture: only with the capture extra."""
    if not hubs:
        return []
    from kafka_wire.spark.capture_job import CaptureJobSettings

    first_seen = {} if first_seen is None else first_seen
    jobs = []
    for ns_name, hub, c in hubs:
        settings = CaptureJobSettings(
            namespace=ns_name, hubs=[hub], out_dir=c.destination, encoding=c.encoding,
            data_dir=str(data_dir), interval_seconds=c.interval_seconds,
            size_limit_bytes=c.size_limit_bytes, skip_empty=c.skip_empty_archives,
            name_format=c.name_format,
            blob_connection_string=c.storage_connection_string,
            blob_container=c.blob_container if c.storage_connection_string else None,
            spark_log_file=str(Path(data_dir).resolve() / "capture-spark.log"),
            spark_scratch_dir=str(Path(data_dir).resolve() / "capture-spark-tmp"))
        enabled_at = c.enabled_at_ms
        if enabled_at is None:
            enabled_at = first_seen.setdefault((ns_name, hub), now_ms)
        else:
            # Enabled through the management API: each enabling is a capture of its own,
            # starting then, not the continuation of an earlier one's checkpoint.
            settings.checkpoint_dir = f"{settings.checkpoint}-{enabled_at}"
        settings.starting_position = "earliest" if c.backfill else str(enabled_at)
        jobs.append(settings)
    return jobs


class CaptureJobs:
    """The broker's running capture jobs; ``reconcile`` makes them match a model."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self._running: dict[tuple[str, str], tuple] = {}  # (namespace, hub) -> (settings, handle)
        self._work = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kafka-wire-capture-jobs")
        self._announced = False
        self._first_seen: dict[tuple[str, str], int] = {}  # config-enabled hubs: when first run
        self._unavailable_said: set[tuple[str, str]] = set()

    def reconcile(self, model, now_ms: int) -> None:
        """Start, restart or stop jobs so that each capture-enabled hub has one
        with its current settings. Returns at once (the model is read now, the
        jobs change on the jobs' thread); ``settled`` waits."""
        hubs = enabled_hubs(model)
        if hubs or self._running:
            self._work.submit(self._apply, hubs, now_ms)

    def settled(self, timeout: float = 120) -> None:
        """Wait until the changes handed over so far are carried out."""
        self._work.submit(lambda: None).result(timeout)

    def running(self) -> dict[tuple[str, str], object]:
        """(namespace, hub) -> its job's handle (``.running``, ``.error``)."""
        return {key: handle for key, (_, handle) in self._running.items()}

    def _apply(self, hubs: list, now_ms: int) -> None:
        try:
            from kafka_wire.capture_cli import capture_unavailable

            problem = capture_unavailable() if hubs else None
            if problem:
                new = sorted({(ns, hub) for ns, hub, _ in hubs} - self._unavailable_said)
                if new:
                    log.warning("Capture is off for %s: %s", ", ".join(f"{ns}/{hub}" for ns, hub in new),
                                problem)
                    self._unavailable_said.update(new)
                return
            jobs = jobs_for(hubs, self.data_dir, now_ms, self._first_seen)
            wanted = {(job.namespace, job.hubs[0]): job for job in jobs}
            for key in [k for k, (settings, _) in self._running.items() if wanted.get(k) != settings]:
                settings, handle = self._running.pop(key)
                handle.stop()
                log.info("capture of %s/%s stopped%s", *key, "" if key not in wanted else
                         " to start again with its new settings")
            starting = {k: s for k, s in wanted.items() if k not in self._running}
            if starting:
                self._start(starting)
        except Exception:  # the broker goes on; the next change tries again
            log.exception("capture jobs could not be brought up to date")

    def _start(self, starting: dict) -> None:
        from kafka_wire.spark.capture_job import run_in_background

        if not self._announced:
            self._announced = True
            log.info("Capture starts a Spark JVM beside the broker (about 370 MB of memory, ~10 s to "
                     "start); Spark's own log goes to %s", self.data_dir.resolve() / "capture-spark.log")
        for key, settings in starting.items():
            log.info("capture of %s/%s into %s (%s) runs alongside the broker, from %s", *key,
                     settings.out_dir, settings.encoding,
                     "the earliest event" if settings.starting_position == "earliest"
                     else f"events enqueued since {settings.starting_position} ms")
            self._running[key] = (settings, run_in_background(settings))

    def stop(self) -> None:
        """Stop every job and wait for them (blocks: call it off the event loop)."""
        def stop_all() -> None:
            for key, (_, handle) in list(self._running.items()):
                handle.stop()
            self._running.clear()
        self._work.submit(stop_all).result()
        self._work.shutdown()
