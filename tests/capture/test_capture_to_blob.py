"""Capture into Azure Blob storage (Azurite): block blobs named as Event Hubs
names them, announced by their blob URL; a job that dies after uploading a
micro-batch's files and before its journal, started again, leaves every event
in exactly one blob and every blob announced once."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from azure.storage.blob import BlobServiceClient

from kafka_wire.cli import main
from kafka_wire.spark.sink import CRASH_BEFORE_JOURNAL

from .conftest import produce
from .helpers import check_capture

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
NS, HUB, CONTAINER = "emulatorNs1", "blobbed", "capture-blob"


def _args(broker, out: Path, connection_string: str) -> list[str]:
    # 60 s windows (the service's minimum): 1 s windows also made an empty file, uploaded, replayed and
    # downloaded, for every second each partition sat idle while a JVM started (124 of 126 files).
    return ["capture", "--namespace", NS, "--master", "local[2]", "--data-dir", str(broker.data_dir),
            "--hub", HUB, "--out", str(out), "--interval-seconds", "60", "--size-mb", "0.02", "--once",
            "--blob-container", CONTAINER, "--blob-connection-string", connection_string]


def test_capture_into_blob_storage_survives_a_crash_between_upload_and_journal(spark, broker, azurite,
                                                                              tmp_path):
    broker.create_hub(HUB, 2)
    expected = produce(broker.bootstrap_servers, HUB, 3000, compression="zstd", partitions=2)
    out = tmp_path / "out"
    # The crash kills its Python process, so that run is a process of its own.
    crashed = subprocess.run(
        [sys.executable, "-m", "kafka_wire.cli", *_args(broker, out, azurite)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
                 **{CRASH_BEFORE_JOURNAL: "0"}))
    # The commit's Python process dies: the query fails after the uploads, before the journal.
    assert crashed.returncode != 0 and "crashed" in crashed.stderr, crashed.stderr[-3000:]
    container = BlobServiceClient.from_connection_string(azurite).get_container_client(CONTAINER)
    uploaded = {b.name for b in container.list_blobs()}
    assert uploaded, "the first micro-batch uploaded nothing before it died"
    assert not (out / "_capture_events.jsonl").exists()  # died before announcing them

    # Started again: in the suite's Spark session (as the other capture tests), not a new JVM.
    assert main(_args(broker, out, azurite)) == 0
    blobs = sorted(b.name for b in container.list_blobs())
    assert uploaded <= set(blobs)  # the replay rewrote the same names: nothing doubled
    local = tmp_path / "downloaded"
    for name in blobs:
        (local / name).parent.mkdir(parents=True, exist_ok=True)
        (local / name).write_bytes(container.download_blob(name).readall())
    check_capture(local, expected, namespace=NS, hub=HUB, encoding="avro",
                  events_file=out / "_capture_events.jsonl",
                  file_url=lambda p: f"{container.url}/{p.relative_to(local).as_posix()}")
    assert not [p for p in out.rglob("*.avro")], "a staged file was left behind"
