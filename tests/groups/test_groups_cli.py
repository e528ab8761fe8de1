"""``kafka-wire groups``: offline from the data directory (read-only) and
online against a running broker."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_wire.cli import main
from kafka_wire.log.reader import PartitionReader

ROOT = Path(__file__).resolve().parents[2]
NS = "emulatorNs1"


def _produce(bootstrap: str, topic: str, partitions: int, per_partition: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    for part in range(partitions):
        for _ in range(per_partition):
            p.produce(topic, b"event", partition=part)
    assert p.flush(30) == 0


def _commit(bootstrap: str, group: str, offsets: dict[int, int], topic: str = "orders") -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()],
                 asynchronous=False)
    finally:
        c.close()


def _groups_json(capsys, *args: str) -> dict:
    capsys.readouterr()
    assert main(["groups", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _by_name(hub: dict) -> dict[str, dict]:
    return {g["name"]: g for g in hub["consumer_groups"]}


def _tree(path: Path):
    return sorted((str(p.relative_to(path)), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in path.rglob("*"))


def test_offline_groups_list_default_first_checkpoints_lag_and_write_nothing(broker, capsys):
    bootstrap = broker.bootstrap_servers
    broker.create_hub("orders", partitions=3)
    broker.create_hub("audit", partitions=1)
    _produce(bootstrap, "orders", 3, 10)
    _commit(bootstrap, "readers", {0: 10, 1: 4})

    live = _groups_json(capsys, "--data-dir", str(broker.data_dir))  # broker still running
    assert live["mode"] == "offline"
    hubs = {(h["namespace"], h["event_hub"]): h for h in live["event_hubs"]}
    assert set(hubs) == {(NS, "orders"), (NS, "audit")}
    for hub in hubs.values():
        assert hub["consumer_groups"][0]["name"] == "$Default"
        assert hub["consumer_groups"][0]["kafka_group"] is False
    assert [g["name"] for g in hubs[(NS, "audit")]["consumer_groups"]] == ["$Default"]
    readers = _by_name(hubs[(NS, "orders")])["readers"]
    assert (readers["group_type"], readers["state"], readers["members"]) == \
        ("classic", "Empty", [])
    parts = {p["partition"]: p for p in readers["partitions"]}
    assert [(parts[i]["sequence_number"], parts[i]["last_sequence_number"], parts[i]["lag"])
            for i in range(3)] == [(10, 9, 0), (4, 9, 6), (None, 9, None)]
    assert parts[0]["offset"] is not None and int(parts[0]["offset"]) > 0

    broker.stop()
    before = _tree(broker.data_dir)
    stopped = _groups_json(capsys, "--data-dir", str(broker.data_dir), "--namespace", NS,
                           "--hub", "orders")
    assert _tree(broker.data_dir) == before, "the offline listing wrote to the data directory"
    assert [h["event_hub"] for h in stopped["event_hubs"]] == ["orders"]
    assert stopped["event_hubs"][0] == hubs[(NS, "orders")]

    capsys.readouterr()
    assert main(["groups", "--data-dir", str(broker.data_dir), "--hub", "orders"]) == 0
    text = capsys.readouterr().out
    assert text.index("consumer group $Default") < text.index("consumer group readers")


def test_offline_log_end_offset_ignores_a_torn_last_batch_without_repairing_it(broker):
    broker.create_hub("torn", partitions=1)
    _produce(broker.bootstrap_servers, "torn", 1, 5)
    _produce(broker.bootstrap_servers, "torn", 1, 7)
    pdir = broker.data_dir / NS / "torn-0"
    deadline = time.monotonic() + 10  # a running broker lists new batches for other processes each second
    while PartitionReader(pdir).end_offset() < 12 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert PartitionReader(pdir).end_offset() == 12
    broker.stop()
    (log_file,) = pdir.glob("*.log")
    size = log_file.stat().st_size
    with open(log_file, "r+b") as f:
        f.truncate(size - 3)  # the second batch was cut short by a crash
    before = _tree(pdir)
    assert PartitionReader(pdir).end_offset() == 5
    assert _tree(pdir) == before
    absent = pdir.parent / "absent-0"
    assert PartitionReader(absent).end_offset() == 0 and not absent.exists()


def test_online_groups_show_live_members_owners_and_lag_of_classic_and_kip848_groups(
        broker, capsys):
    bootstrap = broker.bootstrap_servers
    broker.create_hub("orders", partitions=2)
    _produce(bootstrap, "orders", 2, 6)
    _commit(bootstrap, "classic-readers", {0: 2, 1: 6})
    consumers = {
        "classic-readers": Consumer({"bootstrap.servers": bootstrap,
                                     "group.id": "classic-readers",
                                     "enable.auto.commit": False,
                                     "session.timeout.ms": 6000}),
        "kip848-readers": Consumer({"bootstrap.servers": bootstrap, "group.id": "kip848-readers",
                                    "group.protocol": "consumer", "enable.auto.commit": False}),
    }
    try:
        for c in consumers.values():
            c.subscribe(["orders"])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(
                len(c.assignment()) == 2 for c in consumers.values()):
            for c in consumers.values():
                c.poll(0.1)
        assert all(len(c.assignment()) == 2 for c in consumers.values())

        report = _groups_json(capsys, "--bootstrap", bootstrap, "--hub", "orders")
    finally:
        for c in consumers.values():
            c.close()
    assert report["mode"] == "online"
    (hub,) = report["event_hubs"]
    assert (hub["event_hub"], hub["partitions"]) == ("orders", 2)
    assert [g["name"] for g in hub["consumer_groups"]] == \
        ["$Default", "classic-readers", "kip848-readers"]
    groups = _by_name(hub)
    for name, group_type in (("classic-readers", "classic"), ("kip848-readers", "consumer")):
        g = groups[name]
        assert (g["group_type"], g["state"]) == (group_type, "Stable"), g
        (member,) = g["members"]
        assert member["partitions"] == [0, 1]
        assert [p["owner"] for p in g["partitions"]] == [member["member_id"]] * 2
    lag = {p["partition"]: (p["sequence_number"], p["lag"])
           for p in groups["classic-readers"]["partitions"]}
    assert lag == {0: (2, 4), 1: (6, 0)}
    assert all(p["last_sequence_number"] == 5 for p in groups["$Default"]["partitions"])


def test_groups_command_runs_as_a_program_and_reports_bad_input_with_exit_codes(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "kafka_wire.cli", "groups", *args],
                              capture_output=True, text=True, timeout=60, cwd=ROOT)

    missing = run("--data-dir", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    (tmp_path / "data" / NS / "__topics").mkdir(parents=True)
    empty = run("--data-dir", str(tmp_path / "data"))
    assert empty.returncode == 0 and "no event hubs" in empty.stdout
    wrong = run("--data-dir", str(tmp_path / "data"), "--namespace", "other")
    assert wrong.returncode == 2 and "namespace 'other' not found" in wrong.stderr
    unreachable = run("--bootstrap", "127.0.0.1:1", "--timeout", "1")
    assert unreachable.returncode == 1 and "cannot query 127.0.0.1:1" in unreachable.stderr
    assert unreachable.stderr.count("\n") == 1, "kafka-python's connection noise leaked"
