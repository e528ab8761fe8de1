"""Capture after DeleteRecords cuts a record batch in the middle: the events below the
new log start are gone for every reader (a Kafka consumer from the earliest offset gets
5..9), so Capture does not write them either. The backends serve whole stored batches,
the one holding the log start included; the source and the sink drop its events below
the start. Drives spark.source's driver and executor methods (what Spark calls) and
the capture sink's write, without a Spark session, for both backends."""
from __future__ import annotations

import pytest

from kafka_wire.spark.sink import CaptureStreamWriter
from kafka_wire.spark.source import EventHubsStreamReader

from .helpers import capture_files, delete_records, one_batch_of_ten, read_file

NS, HUB, CUT = "emulatorNs1", "cut", 5


def _options(broker, backend: str, **extra) -> dict:
    where = {"datadir": str(broker.data_dir)} if backend == "log" else {"bootstrap": broker.bootstrap_servers}
    return {"namespace": NS, "eventhubs": HUB, **where, **extra}


def _events(source: EventHubsStreamReader, start: dict, end: dict) -> list[int]:
    seqs = []
    for part in source.partitions(start, end):
        for rows in source.read(part):
            seqs += [s for s in rows.column("sequence_number").to_pylist() if s is not None]
    return seqs


WINDOWS = {"windowseconds": "60", "closeopenwindows": "true"}


@pytest.mark.parametrize("backend", ["log", "kafka"])
@pytest.mark.parametrize("mode", ["events", "windows-once", "plans-sink"])
@pytest.mark.parametrize("when", ["before-start", "after-planning"])
def test_capture_leaves_out_the_events_deleted_records_cut_from_a_batch(broker, tmp_path, backend, mode, when):
    reader, _ = one_batch_of_ten(broker, HUB)
    if when == "before-start":  # the source starts at the log start, inside the batch
        delete_records(broker, reader, HUB, CUT)
    extra = {} if mode == "events" else dict(WINDOWS, **({"rows": "plans"} if mode == "plans-sink" else {}))
    options = _options(broker, backend, **extra)
    source = EventHubsStreamReader(options)
    try:
        if mode != "events":
            source.prepareForTriggerAvailableNow()  # --once; "events": a running query's planning
        start = source.initialOffset()
        end = source.latestOffset(start)
        if when == "after-planning":  # the range starts at 0; the log start moves before it is read
            assert start[f"{HUB}/0"]["next"] == 0
            delete_records(broker, reader, HUB, CUT)
        if mode != "plans-sink":
            assert _events(source, start, end) == list(range(CUT, 10))
            return
        out = tmp_path / "out"
        sink = CaptureStreamWriter({**options, "path": str(out), "format": "avro"})
        commit = sink.write(iter([rows for part in source.partitions(start, end) for rows in source.read(part)]))
    finally:
        source.stop()
    files = capture_files(out)
    assert [info.name for _, _, info in commit.files] == [p.relative_to(out).as_posix() for p in files]
    records = [r for path in files for r in read_file(path)[0]]
    assert [r["SequenceNumber"] for r in records] == list(range(CUT, 10))
    assert [r["Body"] for r in records] == [b"e%d" % i for i in range(CUT, 10)]
    assert [r["SystemProperties"]["x-opt-partition-key"] for r in records] == ["k%d" % i for i in range(CUT, 10)]
    info = commit.files[0][2]
    assert (info.first_sequence_number, info.last_sequence_number, info.event_count) == (CUT, 9, 10 - CUT)
