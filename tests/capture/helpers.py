"""Reading capture output back, and the checks every capture test makes."""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import fastavro
import pyarrow.parquet as pq

from kafka_wire.capture.schema import AVRO_SCHEMA
from kafka_wire.log.batch import event_offset
from kafka_wire.log.reader import PartitionReader
from kafka_wire.testing.waits import wait_for

NAME = re.compile(r"^(?P<ns>[^/]+)/(?P<hub>[^/]+)/(?P<p>\d+)/(?P<Y>\d{4})/(?P<M>\d\d)/(?P<D>\d\d)/(?P<h>\d\d)/"
                  r"(?P<m>\d\d)/(?P<s>\d\d)\.(?P<ext>avro|parquet)$")


def capture_files(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*") if p.is_file() and p.suffix in (".avro", ".parquet")
                  and "_capture" not in p.relative_to(out).parts)


def _plain(value):
    """A Parquet union struct {member0..3} as the plain value Avro gives."""
    if isinstance(value, dict) and set(value) <= {"member0", "member1", "member2", "member3"}:
        return next((v for v in value.values() if v is not None), None)
    return value


def read_file(path: Path) -> tuple[list[dict], dict | None]:
    """(records, declared Avro schema) of one capture file."""
    if path.suffix == ".avro":
        with open(path, "rb") as f:
            r = fastavro.reader(f)
            return list(r), json.loads(r.metadata["avro.schema"])
    rows = pq.read_table(path).to_pylist()
    for row in rows:
        for col in ("SystemProperties", "Properties"):
            row[col] = {k: _plain(v) for k, v in row[col]}
    return rows, None


def log_positions(data_dir: Path, namespace: str, hub: str, partitions: int) -> dict:
    """(partition, offset) -> (Event Hubs offset, append time) from the log itself."""
    out = {}
    for p in range(partitions):
        for b in PartitionReader(data_dir / namespace / f"{hub}-{p}").batches(0, with_data=False):
            for o in range(b.base_offset, b.next_offset):
                out[(p, o)] = (event_offset(b.position, o - b.base_offset), b.append_time_ms)
    return out


def check_capture(out: Path, expected: dict, *, namespace: str, hub: str, encoding: str,
                  interval_s: float | None = None, positions: dict | None = None,
                  events_file: Path | None = None, file_url=None) -> list[Path]:
    """Every produced event exactly once, with its body, key, headers,
    sequence number, partition (and byte offset / enqueued time when
    ``positions`` is given); names per the default layout; one
    CaptureFileCreated line per file (in ``events_file``, default
    out/_capture_events.jsonl, naming each file by ``file_url``, default its
    file URI). Returns the files."""
    files = capture_files(out)
    assert files, "no capture file written"
    seen = Counter()
    for path in files:
        rel = path.relative_to(out).as_posix()
        m = NAME.match(rel)
        assert m, f"{rel} does not follow {{Namespace}}/{{EventHub}}/{{PartitionId}}/{{Year}}/.../{{Second}}"
        assert (m["ns"], m["hub"], m["ext"]) == (namespace, hub, encoding)
        partition = int(m["p"])
        records, schema = read_file(path)
        if encoding == "avro":
            assert schema == AVRO_SCHEMA
            for declared, documented in zip(schema["fields"], AVRO_SCHEMA["fields"], strict=True):
                assert declared == documented
        for r in records:
            key = (partition, r["SequenceNumber"])
            assert key in expected, f"{rel}: event {key} was never produced"
            k, body, headers = expected[key]
            assert r["Body"] == body
            assert r["Properties"] == {name: value for name, value in headers}
            sp = r["SystemProperties"]
            assert sp["x-opt-sequence-number"] == r["SequenceNumber"] and sp["x-opt-partition-key"] == k.decode()
            assert sp["x-opt-offset"] == r["Offset"]
            if positions is not None:
                pos, append_ms = positions[key]
                assert r["Offset"] == str(pos) and sp["x-opt-enqueued-time"] == append_ms
            seen[key] += 1
    dupes = [k for k, n in seen.items() if n > 1]
    assert not dupes, f"{len(dupes)} events captured more than once, e.g. {dupes[:3]}"
    missing = set(expected) - set(seen)
    assert not missing, f"{len(missing)} events missing, e.g. {sorted(missing)[:3]}"
    events_file = events_file or out / "_capture_events.jsonl"
    file_url = file_url or (lambda p: p.resolve().as_uri())
    lines = [json.loads(x) for x in events_file.read_text().splitlines()]
    urls = Counter(x["data"]["fileUrl"] for x in lines)
    assert all(n == 1 for n in urls.values()), "a file was announced twice"
    assert set(urls) == {file_url(p) for p in files}
    assert {x["data"]["fileType"] for x in lines} == {"AzureBlockBlob"}
    assert sum(x["data"]["eventCount"] for x in lines) == len(expected)
    return files


def one_batch_of_ten(broker, hub: str, namespace: str = "emulatorNs1") -> tuple[PartitionReader, dict]:
    """A new one-partition hub holding one record batch of ten events (offsets 0..9,
    key ``k<i>``, body ``e<i>``, no header), listed in its ``.batches`` index; returns
    the partition's reader and what check_capture expects of the events."""
    from confluent_kafka import Producer

    broker.create_hub(hub, 1)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5000})
    for i in range(10):
        p.produce(hub, key=b"k%d" % i, value=b"e%d" % i, partition=0)
    assert p.flush(10) == 0  # flush sends at once: one batch
    reader = PartitionReader(broker.data_dir / namespace / f"{hub}-0")
    assert wait_for(lambda: reader.end_offset() == 10 and reader.stable_end() == 10), \
        "timed out waiting for the .batches index to list it"
    assert [(b.base_offset, b.next_offset) for b in reader.batches(0, with_data=False)] == [(0, 10)]
    return reader, {(0, i): (b"k%d" % i, b"e%d" % i, []) for i in range(10)}


def delete_records(broker, reader: PartitionReader, hub: str, offset: int) -> None:
    """DeleteRecords (a Kafka admin client) up to ``offset`` in partition 0, seen by the reader."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for f in admin.delete_records([TopicPartition(hub, 0, offset)]).values():
        f.result(10)
    assert wait_for(lambda: reader.log_start_offset() == offset), "timed out waiting for the log start file"
