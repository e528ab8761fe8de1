"""A group that TxnOffsetCommit made goes with the offset cleanup once its transaction is
aborted, as in Kafka (GroupCoordinatorShard.cleanupGroupMetadata: every group, offsets
expired and no open transaction holding offsets for it, then an Empty group is deleted);
it stayed Empty until DeleteGroups. A committed transaction's group keeps its offsets,
and a group an open transaction holds is kept."""
from __future__ import annotations

import pytest

from kafka_wire import codec
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

K = codec.ApiKey
CLEANUP_S = 600  # offsets.retention.check.interval.ms


@pytest.fixture
def broker():
    with EmulatedBroker(virtual_clock=True, in_memory=True) as b:
        b.create_hub("t1", 1)
        yield b


def _groups(c: RawClient) -> set[str]:
    return {g.group_id for g in c.request(K.ListGroups, 4, states_filter=[]).groups}


def _offsets_in_transaction(c: RawClient, tid: str, group: str, timeout_ms: int = 60_000) -> tuple[int, int]:
    r = c.request(K.InitProducerId, 1, transactional_id=tid, transaction_timeout_ms=timeout_ms)
    assert r.error_code == 0, r
    pid, epoch = r.producer_id, r.producer_epoch
    r = c.request(K.AddOffsetsToTxn, 1, transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                  group_id=group)
    assert r.error_code == 0, r
    r = c.request(K.TxnOffsetCommit, 2, transactional_id=tid, group_id=group, producer_id=pid,
                  producer_epoch=epoch, topics=[("t1", [(0, 5, -1, "")])])
    assert r.topics[0].partitions[0].error_code == 0, r
    return pid, epoch


def _end(c: RawClient, tid: str, pid: int, epoch: int, commit: bool) -> None:
    r = c.request(K.EndTxn, 1, transactional_id=tid, producer_id=pid, producer_epoch=epoch, committed=commit)
    assert r.error_code == 0, r


def test_an_aborted_transactions_new_group_goes_with_the_cleanup(broker):
    with RawClient(broker.bootstrap_servers) as c:
        _end(c, "tx-a", *_offsets_in_transaction(c, "tx-a", "made-by-abort"), commit=False)
        _end(c, "tx-c", *_offsets_in_transaction(c, "tx-c", "made-by-commit"), commit=True)
        assert {"made-by-abort", "made-by-commit"} <= _groups(c)
        broker.clock.advance(seconds=CLEANUP_S + 1)
        groups = _groups(c)
        assert "made-by-abort" not in groups
        assert "made-by-commit" in groups
        r = c.request(K.OffsetFetch, 1, group_id="made-by-commit", topics=[("t1", [0])])
        assert r.topics[0].partitions[0].committed_offset == 5


def test_a_group_an_open_transaction_holds_is_kept(broker):
    with RawClient(broker.bootstrap_servers) as c:
        pid, epoch = _offsets_in_transaction(c, "tx-open", "held", timeout_ms=900_000)
        broker.clock.advance(seconds=CLEANUP_S + 1)
        assert "held" in _groups(c)
        _end(c, "tx-open", pid, epoch, commit=True)
        r = c.request(K.OffsetFetch, 1, group_id="held", topics=[("t1", [0])])
        assert r.topics[0].partitions[0].committed_offset == 5
