"""A data directory from before namespace names 'capture' and 'producer-ids' were reserved
(c471943): the namespace made through the management API under such a name is not served,
and the broker says exactly what to rename, without renaming anything itself. Following
what it says serves the namespace again under the new name."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from tests.cli.helpers import Serve, kafka_wire


def _old_data_dir(tmp_path: Path, name: str) -> Path:
    """A data directory holding namespace ``name`` (hub 'orders', a checkpoint store) made
    through the management API: made under another name by a real broker, then moved to
    where the broker of that time kept it."""
    data = tmp_path / "data"
    config = tmp_path / "made.toml"
    config.write_text('[namespaces.tenant-made]\n\n[namespaces.tenant-made.eventhubs.orders]\npartitions = 1\n')
    serve = Serve("--config", str(config), "--data-dir", str(data), "--listen", "127.0.0.1:0", "--no-http",
                  log=tmp_path / "made.log")
    serve.wait_for("kafka-wire ready")
    assert serve.stop() == 0, serve.output()
    (data / "tenant-made").rename(data / name)
    (data / "_checkpoints" / "tenant-made").rename(data / "_checkpoints" / name)
    (data / "_management").mkdir(exist_ok=True)
    (data / "_management" / f"{name}.json").write_text(json.dumps({"namespace": {"tier": "Standard", "units": None}}))
    return data


def _entries(data: Path) -> list[str]:
    return sorted(str(p.relative_to(data)) for p in data.rglob("*"))


def test_a_kept_capture_namespace_is_ignored_with_what_to_rename(tmp_path):
    data = _old_data_dir(tmp_path, "capture")
    # other namespaces' Capture files, in the default Capture root the namespace shares
    archive = data / "capture" / "devstoreaccount1" / "archive" / "a.avro"
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"Obj\x01")
    before = _entries(data)
    serve = Serve("--data-dir", str(data), "--listen", "127.0.0.1:0", "--no-http", log=tmp_path / "serve.log")
    try:
        out = serve.wait_for("kafka-wire ready")
    finally:
        assert serve.stop() == 0, serve.output()
    line = next(ln for ln in out.splitlines() if "_management/capture.json ignored" in ln)
    assert "ERROR" in line and "reserved" in line, line
    assert f"rename {data}/_management/capture.json to {data}/_management/NEWNAME.json" in line, line
    assert f"rename {data}/_checkpoints/capture to {data}/_checkpoints/NEWNAME" in line, line
    assert (f"make the directory {data}/NEWNAME and move into it, from {data}/capture, the namespace's log: "
            "__topics, orders-0 (leave devstoreaccount1: they are the broker's)") in line, line
    assert "nothing has been renamed" in line
    assert set(before) <= set(_entries(data)), "the broker renamed or removed something"
    # do what it says, with NEWNAME = tenant-kept: the namespace and its hub are served again
    new = "tenant-kept"
    (data / "_management" / "capture.json").rename(data / "_management" / f"{new}.json")
    (data / "_checkpoints" / "capture").rename(data / "_checkpoints" / new)
    (data / new).mkdir()
    for entry in ("__topics", "orders-0"):
        shutil.move(str(data / "capture" / entry), str(data / new / entry))
    again = Serve("--data-dir", str(data), "--listen", "127.0.0.1:0", "--no-http", log=tmp_path / "again.log")
    try:
        out = again.wait_for("kafka-wire ready")
    finally:
        assert again.stop() == 0, again.output()
    assert "ignored" not in out, out
    assert re.search(rf"loaded 1 topics, 1 partitions from {re.escape(str(data / new))}\b", out), out
    assert archive.read_bytes() == b"Obj\x01"


def test_a_kept_producer_ids_namespace_stops_start_up_with_what_to_rename(tmp_path):
    data = _old_data_dir(tmp_path, "producer-ids")
    before = _entries(data)
    res = kafka_wire("serve", "--data-dir", str(data), "--listen", "127.0.0.1:0", "--no-http", "--no-amqp")
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    line = res.stderr.strip().splitlines()[-1]
    assert line.startswith(f"kafka-wire: {data}/producer-ids is namespace 'producer-ids''s directory"), line
    assert "producer-id block" in line and "reserved" in line, line
    assert f"rename {data}/_management/producer-ids.json to {data}/_management/NEWNAME.json" in line, line
    assert f"rename {data}/producer-ids to {data}/NEWNAME" in line, line
    assert _entries(data) == before, "the broker renamed or removed something"
    new = "tenant-kept"
    (data / "_management" / "producer-ids.json").rename(data / "_management" / f"{new}.json")
    (data / "_checkpoints" / "producer-ids").rename(data / "_checkpoints" / new)
    (data / "producer-ids").rename(data / new)
    again = Serve("--data-dir", str(data), "--listen", "127.0.0.1:0", "--no-http", log=tmp_path / "again.log")
    try:
        out = again.wait_for("kafka-wire ready")
    finally:
        assert again.stop() == 0, again.output()
    assert re.search(rf"loaded 1 topics, 1 partitions from {re.escape(str(data / new))}\b", out), out
    assert not (data / "producer-ids").is_dir()  # the broker keeps its block there (made on first use)
