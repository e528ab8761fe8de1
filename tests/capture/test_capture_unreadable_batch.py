"""Capture meets a stored batch no reader can decode (a decompression bomb, compressed
bytes that do not decompress, records that do not parse: stored by a broker before
Produce checked compressed batches; an uncompressed one is stored as sent today). It
leaves that batch's events out, logs it, counts it in
``_capture/unreadable_batches.jsonl`` (CaptureTotals.unreadable_batches) and captures
every event before and after it. Before, the job stopped for good at it, so nothing
later of that partition was ever captured. Drives spark.source's and the sink's methods
(what Spark calls) without a Spark session, for both backends."""
from __future__ import annotations

import json
import logging

import pytest

from kafka_wire.log import records as rec
from kafka_wire.log.reader import PartitionReader
from kafka_wire.spark.capture_job import ProgressWatcher
from kafka_wire.spark.sink import UNREADABLE_FILE, CaptureStreamWriter
from kafka_wire.spark.source import EventHubsStreamReader
from kafka_wire.testing.waits import wait_for
from tests.rawclient import RawClient
from tests.undecodable_batches import UNDECODABLE, batch, produce, stored_unchecked

from .helpers import capture_files, read_file

NS = "emulatorNs1"
KINDS = {**UNDECODABLE, "uncompressed-not-parsing": lambda: batch([b"x", b"y"], body=b"\x7f" * 40)}
WINDOWS = {"windowseconds": "60", "closeopenwindows": "true"}


def _stored(broker, monkeypatch, hub: str, kind: str) -> None:
    """before (0), the unreadable batch (1..), after: at 2 or 3."""
    broker.create_hub(hub, 1)
    stored_unchecked(monkeypatch)
    with RawClient(broker.bootstrap_servers) as c:
        assert produce(c, hub, batch([b"before"])).error_code == 0
        assert produce(c, hub, KINDS[kind]()).error_code == 0
        after = produce(c, hub, batch([b"after", b"after too"], codec_id=rec.ZSTD))
        assert after.error_code == 0
    reader = PartitionReader(broker.data_dir / NS / f"{hub}-0")  # (its .batches index follows the log)
    assert wait_for(lambda: reader.end_offset() == after.base_offset + 2 == reader.stable_end()), \
        "timed out waiting for the .batches index to list the batches"


def _options(broker, backend: str, hub: str, **extra) -> dict:
    where = {"datadir": str(broker.data_dir)} if backend == "log" else {"bootstrap": broker.bootstrap_servers}
    return {"namespace": NS, "eventhubs": hub, **where, **extra}


@pytest.mark.parametrize("backend", ["log", "kafka"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_capture_leaves_out_an_unreadable_batch_and_goes_on(broker, monkeypatch, tmp_path, caplog, backend, kind):
    hub = f"unreadable-{kind}"
    _stored(broker, monkeypatch, hub, kind)
    bad_last = 2 if kind in ("not-parsing", "uncompressed-not-parsing") else 1  # (two records or one)
    options = _options(broker, backend, hub, rows="plans", **WINDOWS)
    out = tmp_path / "out"
    journal = tmp_path / "journal"
    watcher = ProgressWatcher(str(out))
    source = EventHubsStreamReader(options)
    try:
        source.prepareForTriggerAvailableNow()
        start = source.initialOffset()
        end = source.latestOffset(start)
        sink = CaptureStreamWriter({**options, "path": str(out), "format": "avro", "journal": str(journal)})
        with caplog.at_level(logging.WARNING):
            commit = sink.write(iter([rows for part in source.partitions(start, end) for rows in source.read(part)]))
            sink.commit([commit], 0)
            sink.commit([commit], 0)  # (a commit Spark repeats adds nothing)
    finally:
        source.stop()
    records = [r for path in capture_files(out) for r in read_file(path)[0]]
    assert [r["Body"] for r in records] == [b"before", b"after", b"after too"]
    assert [r["SequenceNumber"] for r in records] == [0, bad_last + 1, bad_last + 2]
    lines = (out / UNREADABLE_FILE).read_text().splitlines()
    assert len(lines) == 1
    entry = json.loads(lines[0])
    assert (entry["eventHub"], entry["partition"], entry["firstSequenceNumber"], entry["lastSequenceNumber"]) == \
        (hub, 0, 1, bad_last)
    assert watcher.poll() and watcher.totals.unreadable_batches == 1 and watcher.totals.events == 3
    assert any("cannot be read" in r.getMessage() and "sequence numbers 1.." in r.getMessage()
               for r in caplog.records)


@pytest.mark.parametrize("kind", ["bomb", "uncompressed-not-parsing"])
def test_event_rows_leave_out_an_unreadable_batch(broker, monkeypatch, kind):
    hub = f"rows-{kind}"
    _stored(broker, monkeypatch, hub, kind)
    source = EventHubsStreamReader(_options(broker, "log", hub))
    try:
        start = source.initialOffset()
        end = source.latestOffset(start)
        bodies = [b for part in source.partitions(start, end) for rows in source.read(part)
                  for b in rows.column("body").to_pylist()]
    finally:
        source.stop()
    assert bodies == [b"before", b"after", b"after too"]
