"""ListOffsets under read_committed (confluent-kafka: the consumer's offsets_for_times and the
Admin API's list_offsets): a timestamp or max-timestamp lookup whose record is at or past the
last stable offset (inside a transaction still open) finds no offset (-1), as Kafka's
ReplicaManager.fetchOffset answers; read_uncommitted finds it, and so does read_committed once
the transaction commits."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, IsolationLevel, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

HUB = "rc-times"


def _admin_offset(admin: AdminClient, spec: OffsetSpec, level: IsolationLevel) -> int:
    tp = TopicPartition(HUB, 0)
    return admin.list_offsets({tp: spec}, isolation_level=level)[tp].result(15).offset


def _consumer_offset(bootstrap: str, ts: int, level: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "rc-times", "isolation.level": level})
    try:
        return c.offsets_for_times([TopicPartition(HUB, 0, ts)], timeout=15)[0].offset
    finally:
        c.close()


def test_read_committed_lookups_find_no_offset_in_an_open_transaction(broker):
    bootstrap = broker.bootstrap_servers
    base = int(time.time() * 1000) - 60_000  # the committed record's CreateTime
    between = base + 5_000                   # only the open transaction's record is stamped after
    broker.create_hub(HUB, configs={"message.timestamp.type": "CreateTime"})
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(HUB, b"committed", partition=0, timestamp=base)
    assert plain.flush(15) == 0
    plain.close()
    admin = AdminClient({"bootstrap.servers": bootstrap})
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": "rc-times-tx"})
    try:
        txn.init_transactions(15)
        txn.begin_transaction()
        txn.produce(HUB, b"open", partition=0, timestamp=base + 10_000)
        assert txn.flush(15) == 0  # offset 1 is in the log, its transaction open
        rc, ru = IsolationLevel.READ_COMMITTED, IsolationLevel.READ_UNCOMMITTED

        assert _admin_offset(admin, OffsetSpec.latest(), rc) == 1  # the last stable offset
        assert _admin_offset(admin, OffsetSpec.for_timestamp(between), rc) == -1
        assert _admin_offset(admin, OffsetSpec.max_timestamp(), rc) == -1
        assert _admin_offset(admin, OffsetSpec.for_timestamp(base), rc) == 0  # below the LSO
        assert _consumer_offset(bootstrap, between, "read_committed") == -1

        assert _admin_offset(admin, OffsetSpec.latest(), ru) == 2
        assert _admin_offset(admin, OffsetSpec.for_timestamp(between), ru) == 1
        assert _admin_offset(admin, OffsetSpec.max_timestamp(), ru) == 1
        assert _consumer_offset(bootstrap, between, "read_uncommitted") == 1

        txn.commit_transaction(15)
        assert _admin_offset(admin, OffsetSpec.for_timestamp(between), rc) == 1
        assert _consumer_offset(bootstrap, between, "read_committed") == 1
    finally:
        txn.close()
