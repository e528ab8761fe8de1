"""Hanging transactions (KIP-664): a transaction open in a partition that its
coordinator does not know (its state lost, as a power loss in crash
durability loses it) holds the last stable offset until something aborts it.
The broker aborts it when the longest transaction timeout has passed, and
``kafka-wire txns`` finds and aborts it at once. Real clients against an
in-process broker; the coordinator's state is dropped through the broker."""
from __future__ import annotations

import json
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_wire.cli import main
from kafka_wire.testing import EmulatedBroker

TOPIC = "held"


def _hang_a_transaction(broker: EmulatedBroker, timeout_ms: int = 60_000) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(15)
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "forgotten",
                  "transaction.timeout.ms": timeout_ms})
    p.init_transactions(15)
    p.begin_transaction()
    for part in range(2):
        p.produce(TOPIC, b"never-committed", partition=part)
    assert p.flush(15) == 0
    services = broker.broker.services

    def forget() -> None:  # the coordinator's state is gone, the partition's is not
        services.default.txns.txns.clear()
    broker.call(forget)


def _commit_after(broker: EmulatedBroker, timeout_ms: int = 60_000) -> None:
    p = Producer({"bootstrap.servers": broker.bootstrap_servers, "transactional.id": "later",
                  "transaction.timeout.ms": timeout_ms})
    p.init_transactions(15)
    p.begin_transaction()
    for part in range(2):
        p.produce(TOPIC, b"committed-later", partition=part)
    p.commit_transaction(15)


def _read_committed_reaches(broker: EmulatedBroker, value: bytes, timeout: float) -> set[int]:
    c = Consumer({"bootstrap.servers": broker.bootstrap_servers, "group.id": f"rc-{time.monotonic_ns()}",
                  "isolation.level": "read_committed", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(2)])
    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    while len(seen) < 2 and time.monotonic() < deadline:
        m = c.poll(0.2)
        if m is not None and not m.error():
            assert m.value() != b"never-committed"
            if m.value() == value:
                seen.add(m.partition())
    c.close()
    return seen


def test_txns_cli_finds_and_aborts_a_transaction_its_coordinator_forgot(tmp_path, capsys):
    with EmulatedBroker(tmp_path / "data") as broker:
        _hang_a_transaction(broker)
        _commit_after(broker)
        assert _read_committed_reaches(broker, b"committed-later", 3) == set(), "the LSO was not held"

        assert main(["txns", "find-hanging", "--bootstrap", broker.bootstrap_servers,
                     "--max-transaction-timeout-ms", "0", "--json"]) == 0
        found = json.loads(capsys.readouterr().out)
        assert sorted((h["topic"], h["partition"]) for h in found) == [(TOPIC, 0), (TOPIC, 1)]
        assert all(h["start_offset"] == 0 for h in found)
        # Not hanging yet by the default 15-minute bound.
        assert main(["txns", "find-hanging", "--bootstrap", broker.bootstrap_servers]) == 0
        assert "no hanging transactions" in capsys.readouterr().out

        assert main(["txns", "abort-hanging", "--bootstrap", broker.bootstrap_servers,
                     "--max-transaction-timeout-ms", "0"]) == 0
        assert capsys.readouterr().out.count("aborted the transaction") == 2
        assert _read_committed_reaches(broker, b"committed-later", 20) == {0, 1}
        assert main(["txns", "find-hanging", "--bootstrap", broker.bootstrap_servers,
                     "--max-transaction-timeout-ms", "0"]) == 0
        assert "no hanging transactions" in capsys.readouterr().out


def test_the_broker_aborts_a_forgotten_transaction_when_the_longest_timeout_passes(tmp_path):
    with EmulatedBroker(tmp_path / "data", transaction_max_timeout_ms=2000) as broker:
        _hang_a_transaction(broker, 2000)
        _commit_after(broker, 2000)
        started = time.monotonic()
        assert _read_committed_reaches(broker, b"committed-later", 30) == {0, 1}
        assert time.monotonic() - started < 20


def test_txns_abort_aborts_the_one_partition_named(tmp_path, capsys):
    with EmulatedBroker(tmp_path / "data") as broker:
        _hang_a_transaction(broker)
        assert main(["txns", "find-hanging", "--bootstrap", broker.bootstrap_servers,
                     "--max-transaction-timeout-ms", "0", "--json", "--topic", TOPIC]) == 0
        first = json.loads(capsys.readouterr().out)[0]
        assert main(["txns", "abort", "--bootstrap", broker.bootstrap_servers, "--topic", TOPIC,
                     "--partition", str(first["partition"]), "--producer-id", str(first["producer_id"]),
                     "--producer-epoch", str(first["producer_epoch"])]) == 0
        capsys.readouterr()
        assert main(["txns", "find-hanging", "--bootstrap", broker.bootstrap_servers,
                     "--max-transaction-timeout-ms", "0", "--json"]) == 0
        left = json.loads(capsys.readouterr().out)
        assert [(h["topic"], h["partition"]) for h in left] == [(TOPIC, 1 - first["partition"])]
