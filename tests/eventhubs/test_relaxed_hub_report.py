"""A relaxed namespace past its tier's hub limit makes every hub asked for and reports each
(Event Hubs would refuse it): the report names each new hub at once, readable by
``kafka-wire report`` while the broker runs, and adds it at the file's end rather than
rewriting the whole report at each hub (its cost would grow with the report, up to
2,000 entries); the entries survive a restart."""
from __future__ import annotations

from confluent_kafka.admin import AdminClient, NewTopic

from kafka_wire.cli import main
from kafka_wire.eventhubs.report import REPORT_FILE, load
from kafka_wire.testing import EmulatedBroker

LIMIT = 10  # Standard's hubs per namespace; the default namespace is a relaxed Standard one
PAST = 25


def _past_limit(data_dir) -> list[str]:
    return sorted(e["event_hub"] for e in load(data_dir)
                  if e["rule"] == "hubs-per-namespace" and not e["enforced"])


def test_each_hub_past_the_limit_is_reported_at_once_without_a_rewrite(tmp_path, capsys):
    data_dir = tmp_path / "data"
    path = data_dir / REPORT_FILE
    with EmulatedBroker(data_dir) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        for i in range(LIMIT):
            admin.create_topics([NewTopic(f"in-{i:02d}", 1)])[f"in-{i:02d}"].result(20)
        assert _past_limit(data_dir) == []
        inode = None
        for i in range(PAST):
            name = f"past-{i:02d}"
            admin.create_topics([NewTopic(name, 1)])[name].result(20)  # relaxed: made
            assert _past_limit(data_dir) == [f"past-{j:02d}" for j in range(i + 1)], \
                f"{name} is not in the report once made"
            inode = inode or path.stat().st_ino
            assert path.stat().st_ino == inode, f"{name}: the report was rewritten whole"
        assert main(["report", "--data-dir", str(data_dir)]) == 0
        out = capsys.readouterr().out
        assert all(f"hubs-per-namespace [past-{i:02d}]: would be refused" in out for i in range(PAST))
    with EmulatedBroker(data_dir) as broker:  # a restart reads them back, and adds to them
        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("after-restart", 1)])["after-restart"].result(20)
        assert _past_limit(data_dir) == sorted(["after-restart",
                                                *(f"past-{i:02d}" for i in range(PAST))])
