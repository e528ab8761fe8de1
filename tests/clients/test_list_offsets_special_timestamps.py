"""ListOffsets' special timestamps, each from the version Kafka serves it (ReplicaManager's
timestampMinSupportedVersion): -3 max timestamp v7, -4 earliest local v8, -5 latest tiered v9,
-6 earliest pending upload v11 (KIP-1023). Asked in an older version, or any other negative
timestamp, the partition is UNSUPPORTED_VERSION. Without tiered storage -5 and -6 find no offset:
offset -1, timestamp -1, leader epoch -1, no error (UnifiedLog.fetchEarliestPendingUploadOffset).
Raw requests: no client library sends -6 yet but Java's Admin (OffsetSpec.earliestPendingUpload)."""
from __future__ import annotations

import kafka.errors as Errors
import pytest
from confluent_kafka import Producer

from kafka_wire import codec
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

Req = codec.request_class(codec.ApiKey.ListOffsets)
UNSUPPORTED = Errors.UnsupportedVersionError.errno
MIN_VERSION = {-1: 1, -2: 1, -3: 7, -4: 8, -5: 9, -6: 11}


@pytest.fixture(scope="module")
def hub_broker(tmp_path_factory):
    with EmulatedBroker(tmp_path_factory.mktemp("special-ts") / "data") as b:
        b.create_hub("st", 1)
        p = Producer({"bootstrap.servers": b.bootstrap_servers})
        for _ in range(3):
            p.produce("st", b"x", partition=0)
        assert p.flush(15) == 0
        p.close()
        yield b


def _ask(bootstrap: str, version: int, timestamp: int, topic: str = "st", isolation: int = 0):
    partition = Req.ListOffsetsTopic.ListOffsetsPartition(
        partition_index=0, current_leader_epoch=-1, timestamp=timestamp)
    with RawClient(bootstrap) as c:
        answer = c.request(codec.ApiKey.ListOffsets, version, replica_id=-1, isolation_level=isolation,
                           timeout_ms=1000, topics=[Req.ListOffsetsTopic(name=topic, partitions=[partition])])
    [p] = answer.topics[0].partitions
    return p


@pytest.mark.parametrize("isolation", [0, 1])
@pytest.mark.parametrize("timestamp", [-5, -6])
def test_tiered_timestamps_find_no_offset_without_tiered_storage(hub_broker, timestamp, isolation):
    p = _ask(hub_broker.bootstrap_servers, 11, timestamp, isolation=isolation)
    assert (p.error_code, p.offset, p.timestamp, p.leader_epoch) == (0, -1, -1, -1)


@pytest.mark.parametrize("timestamp", sorted(MIN_VERSION))
def test_each_special_timestamp_is_served_from_its_version_on(hub_broker, timestamp):
    first = MIN_VERSION[timestamp]
    for version in range(max(1, first - 2), 12):
        p = _ask(hub_broker.bootstrap_servers, version, timestamp)
        assert (p.error_code == UNSUPPORTED) == (version < first), (version, p)


@pytest.mark.parametrize("timestamp", [-7, -100])
def test_other_negative_timestamps_are_unsupported(hub_broker, timestamp):
    assert _ask(hub_broker.bootstrap_servers, 11, timestamp).error_code == UNSUPPORTED
    # Refused before the partition is looked up, as in Kafka's ReplicaManager.
    assert _ask(hub_broker.bootstrap_servers, 11, timestamp, topic="no-such-hub").error_code == UNSUPPORTED
