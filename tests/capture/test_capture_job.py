"""``kafka-wire capture`` end to end: a real broker, confluent-kafka, Spark."""
from __future__ import annotations

import calendar
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from kafka_wire.cli import main

from .conftest import HUB, PARTITIONS, produce
from .helpers import (
    NAME, capture_files, check_capture, delete_records, log_positions, one_batch_of_ten, read_file,
)

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
NS = "emulatorNs1"


def capture(*args: str) -> None:
    assert main(["capture", "--namespace", NS, "--master", "local[2]", *args]) == 0


def named(out: Path, path: Path) -> tuple[int, int]:
    """(partition, the time in ms, UTC) a capture file is named after."""
    m = NAME.match(path.relative_to(out).as_posix())
    when = time.strptime(f"{m['Y']}{m['M']}{m['D']}{m['h']}{m['m']}{m['s']}", "%Y%m%d%H%M%S")
    return int(m["p"]), calendar.timegm(when) * 1000


def test_once_in_avro_captures_exactly_what_was_produced(spark, produced, tmp_path):
    broker, expected = produced
    out = tmp_path / "out"
    once = ["--data-dir", str(broker.data_dir), "--hub", HUB, "--format", "avro", "--out", str(out),
            "--once", "--interval-seconds", "60"]
    capture(*once)
    positions = log_positions(broker.data_dir, NS, HUB, PARTITIONS)
    files = check_capture(out, expected, namespace=NS, hub=HUB, encoding="avro", positions=positions)
    enqueued = {p: sorted(t for (q, _), (_, t) in positions.items() if q == p) for p in range(PARTITIONS)}

    for path in files:  # named after its window's start; every event enqueued inside the window
        partition, start = named(out, path)
        assert start % 60_000 == 0
        times = {r["SystemProperties"]["x-opt-enqueued-time"] for r in read_file(path)[0]}
        if times:
            assert start <= min(times) and max(times) < start + 60_000
        else:  # an idle window's file (a window that ended with no event, before the job ran)
            assert not [t for t in enqueued[partition] if start <= t < start + 60_000]
    # A second --once finds nothing new: no file rewritten, none announced again. Windows
    # that ended since (the clock passed a minute's end between the two runs) are idle:
    # they get their empty files, as Event Hubs Capture writes them, after every event.
    before = (out / "_capture_events.jsonl").read_text()
    contents = {path: path.read_bytes() for path in files}
    capture(*once)
    assert (out / "_capture_events.jsonl").read_text().startswith(before)
    assert {path: path.read_bytes() for path in files} == contents
    again = check_capture(out, expected, namespace=NS, hub=HUB, encoding="avro", positions=positions)
    for path in set(again) - set(files):
        partition, start = named(out, path)
        assert not read_file(path)[0] and start > max(enqueued[partition])


def test_once_in_parquet_with_a_size_window_splits_files_and_loses_nothing(spark, produced, tmp_path):
    broker, expected = produced
    out = tmp_path / "out"
    capture("--data-dir", str(broker.data_dir), "--hub", HUB, "--format", "parquet", "--out", str(out),
            "--once", "--interval-seconds", "600", "--size-mb", "0.05")
    files = check_capture(out, expected, namespace=NS, hub=HUB, encoding="parquet",
                          positions=log_positions(broker.data_dir, NS, HUB, PARTITIONS))
    per_partition = Counter(NAME.match(p.relative_to(out).as_posix())["p"] for p in files)
    assert len(per_partition) == PARTITIONS and min(per_partition.values()) > 1  # the size limit closed files


def test_bootstrap_reads_the_same_events_through_the_kafka_protocol(spark, produced, tmp_path):
    broker, expected = produced
    out = tmp_path / "out"
    capture("--bootstrap", broker.bootstrap_servers, "--hub", HUB, "--format", "avro", "--out", str(out),
            "--once", "--interval-seconds", "60")
    # LogAppendTime hub, log from offset 0: offsets and enqueued times match the log's exactly.
    check_capture(out, expected, namespace=NS, hub=HUB, encoding="avro",
                  positions=log_positions(broker.data_dir, NS, HUB, PARTITIONS))


def test_once_leaves_out_the_events_deleted_records_cut_from_a_batch(spark, broker, tmp_path):
    reader, produced = one_batch_of_ten(broker, "cut")
    delete_records(broker, reader, "cut", 5)  # the log start inside the batch: 0..4 are gone
    expected = {key: event for key, event in produced.items() if key[1] >= 5}
    positions = log_positions(broker.data_dir, NS, "cut", 1)
    for where in (["--data-dir", str(broker.data_dir)], ["--bootstrap", broker.bootstrap_servers]):
        out = tmp_path / where[0].strip("-")
        capture(*where, "--hub", "cut", "--out", str(out), "--once", "--interval-seconds", "60")
        check_capture(out, expected, namespace=NS, hub="cut", encoding="avro", positions=positions)


def test_empty_windows_are_written_or_skipped_as_configured(spark, broker, tmp_path):
    broker.create_hub("idle", 1)
    first = produce(broker.bootstrap_servers, "idle", 1, compression="none", partitions=1)
    time.sleep(3.5)
    both = first | produce(broker.bootstrap_servers, "idle", 1, compression="none", start=1, partitions=1)
    common = ["--data-dir", str(broker.data_dir), "--hub", "idle", "--once", "--interval-seconds", "1"]
    capture(*common, "--out", str(tmp_path / "all"))
    capture(*common, "--out", str(tmp_path / "skip"), "--skip-empty")

    def summary(out):
        check_capture(out, both, namespace=NS, hub="idle", encoding="avro")
        return [(p.relative_to(out).as_posix(), len(read_file(p)[0])) for p in capture_files(out)]

    skipped = summary(tmp_path / "skip")
    assert [n for _, n in skipped] == [1, 1]
    written = summary(tmp_path / "all")
    counts = [n for _, n in written]
    assert counts[0] == 1 and counts.count(1) == 2 and counts.count(0) >= 2  # idle seconds in between
    i, j = counts.index(1), len(counts) - 1 - counts[::-1].index(1)
    assert all(n == 0 for n in counts[i + 1 : j])
    seconds = [int(name.rsplit("/", 1)[1][:2]) for name, _ in written]
    assert all((b - a) % 60 == 1 for a, b in zip(seconds, seconds[1:]))  # one file per 1 s window, none missing
    events = [json.loads(x)["data"] for x in (tmp_path / "all" / "_capture_events.jsonl").read_text().splitlines()]
    empty = [e for e in events if e["eventCount"] == 0]
    assert empty and all(e["firstSequenceNumber"] == -1 and e["firstEnqueueTime"] == "0001-01-01T00:00:00"
                         for e in empty)


def test_a_job_killed_mid_run_and_started_again_leaves_no_duplicate_and_no_gap(spark, broker, tmp_path):
    broker.create_hub("kill", 2)
    out = tmp_path / "out"
    expected: dict = {}
    killed, finished = threading.Event(), threading.Event()

    def keep_producing():  # 400 events every 0.6 s, up to 20,000; after the kill, 400 more and stop
        for start in range(0, 20_000, 400):
            last = killed.is_set()
            expected.update(produce(broker.bootstrap_servers, "kill", 400, compression="lz4", start=start,
                                    partitions=2, pause_every=400, pause_s=0.6))
            if last:
                break
        finished.set()  # (produce asserts every event of a chunk acknowledged)

    producer = threading.Thread(target=keep_producing)
    producer.start()
    args = ["--data-dir", str(broker.data_dir), "--hub", "kill", "--out", str(out), "--interval-seconds", "1",
            "--size-mb", "0.02"]
    log = open(tmp_path / "capture.log", "wb")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.Popen([sys.executable, "-m", "kafka_wire.cli", "capture", "--namespace", NS, "--master",
                             "local[2]", "--trigger-seconds", "0.5", *args], stdout=log, stderr=subprocess.STDOUT,
                            cwd=ROOT, env=env, start_new_session=True)
    events_file = out / "_capture_events.jsonl"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if events_file.exists() and len(events_file.read_text().splitlines()) >= 10:
                break
            assert proc.poll() is None, (tmp_path / "capture.log").read_text()
            time.sleep(0.2)
        else:
            pytest.fail("the capture job wrote nothing:\n" + (tmp_path / "capture.log").read_text()[-3000:])
        time.sleep(1.3)  # somewhere inside a later micro-batch
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver, its JVM and the Python workers
        killed.set()  # events go on arriving while the job is down, then stop: no need to wait out 20,000
        proc.wait(30)
        log.close()
    producer.join(120)
    assert finished.is_set()  # every chunk produced, every event acknowledged
    capture(*args, "--once")
    check_capture(out, expected, namespace=NS, hub="kill", encoding="avro",
                  positions=log_positions(broker.data_dir, NS, "kill", 2))
    assert not [p for p in out.rglob(".capture-*")]  # no temporary file left behind


def test_run_in_background_captures_while_the_broker_runs(spark, broker, tmp_path):
    from kafka_wire.spark.capture_job import CaptureJobSettings, run_in_background

    broker.create_hub("live", 2)
    out = tmp_path / "out"
    handle = run_in_background(CaptureJobSettings(
        namespace=NS, hubs=["live"], out_dir=str(out), data_dir=str(broker.data_dir), interval_seconds=1,
        # skip_empty: once every event is announced no file is being written, so stopping
        # cannot catch a window between its file and its announcement (which a restart
        # would complete, but this test does not restart).
        trigger_seconds=0.5, grace_seconds=0.5, skip_empty=True), spark=spark)
    try:
        expected = produce(broker.bootstrap_servers, "live", 1000, compression="gzip", partitions=2)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and handle.running:
            path = out / "_capture_events.jsonl"
            lines = path.read_text().splitlines() if path.exists() else []
            if sum(json.loads(x)["data"]["eventCount"] for x in lines) >= 1000:
                break
            time.sleep(0.3)
    finally:
        handle.stop()
    assert handle.error is None and not handle.running
    check_capture(out, expected, namespace=NS, hub="live", encoding="avro")


def test_bootstrap_over_sasl_ssl_with_a_connection_string(spark, tmp_path):
    """The Kafka-mode reader as it meets Event Hubs: SASL_SSL, PLAIN, `$ConnectionString`."""
    from confluent_kafka import Producer

    from kafka_wire.eventhubs import connection_string
    from kafka_wire.testing import EmulatedBroker
    from tests.eventhubs.conftest import MULTI_TOML

    root = connection_string.build("contoso.servicebus.windows.net",
                                   key_name="RootManageSharedAccessKey", key="cm9vdC1rZXktMQ==")
    with EmulatedBroker(tmp_path / "data", config_file=MULTI_TOML, tls=True) as broker:
        sasl = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                "sasl.username": "$ConnectionString", "sasl.password": root,
                "ssl.ca.location": str(broker.ca_file)}
        expected: dict = {}
        producer = Producer({"bootstrap.servers": broker.tls_bootstrap_servers, "linger.ms": 5,
                             **sasl})
        for i in range(300):
            headers = [("seq", str(i).encode())]
            producer.produce("payments", key=f"k{i}".encode(), value=f"paid {i}".encode(),
                             headers=headers, on_delivery=lambda err, msg, h=headers: expected.
                             __setitem__((msg.partition(), msg.offset()), (msg.key(), msg.value(), h)))
        assert producer.flush(30) == 0 and len(expected) == 300

        out = tmp_path / "out"
        assert main(["capture", "--namespace", "contoso", "--master", "local[2]",
                     "--bootstrap", broker.tls_bootstrap_servers, "--hub", "payments",
                     "--format", "parquet", "--out", str(out), "--once", "--interval-seconds", "60",
                     "--kafka-option", "security_protocol=SASL_SSL",
                     "--kafka-option", "sasl_mechanism=PLAIN",
                     "--kafka-option", "sasl_plain_username=$ConnectionString",
                     "--kafka-option", f"sasl_plain_password={root}",
                     "--kafka-option", f"ssl_cafile={broker.ca_file}"]) == 0
        check_capture(out, expected, namespace="contoso", hub="payments", encoding="parquet",
                      positions=log_positions(broker.data_dir, "contoso", "payments", 1))
