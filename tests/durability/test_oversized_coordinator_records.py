"""The coordinators' record logs (checkpoints, transaction states) never hold a record
they cannot read back: at the next start, one such record cut the log there, and every
later commit and fencing with it. A commit or transaction too large is refused with
Kafka's error; a large but valid transaction state is written in pieces; a failed write
(a full disk) is cut off again before the next one."""
from __future__ import annotations

import os

import kafka.errors as Errors
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire import codec
from kafka_wire.coordinator import record_log, transactions
from kafka_wire.coordinator.checkpoints.embedded import CheckpointStoreError, EmbeddedCheckpointStore
from kafka_wire.coordinator.checkpoints.store import Checkpoint
from kafka_wire.coordinator.config import GroupCoordinatorConfig
from kafka_wire.coordinator.offset_metadata_manager import OffsetMetadataManager
from kafka_wire.coordinator.transactions import ONGOING, TransactionStore, TxnState
from kafka_wire.testing import EmulatedBroker
from tests.rawclient import RawClient

BIG = 1100 * 1024  # longer than a record of the log may be (1 MiB)


def _struct(api_key, *path, **fields):
    cls = codec.request_class(api_key)
    for name in path:
        cls = getattr(cls, name)
    return cls(**fields)


def _commit(c, group: str, topic: str, partition: int, offset: int) -> int:
    r = c.request(codec.ApiKey.OffsetCommit, 8, group_id=group, generation_id_or_member_epoch=-1,
                  member_id="", group_instance_id=None, topics=[_struct(
                      codec.ApiKey.OffsetCommit, "OffsetCommitRequestTopic", name=topic,
                      partitions=[_struct(codec.ApiKey.OffsetCommit, "OffsetCommitRequestTopic",
                                          "OffsetCommitRequestPartition", partition_index=partition,
                                          committed_offset=offset, committed_leader_epoch=-1,
                                          committed_metadata="")])])
    return r.topics[0].partitions[0].error_code


def _fetch(c, group: str, topic: str, partitions: list[int]) -> dict[int, tuple[int, str]]:
    g = codec.request_class(codec.ApiKey.OffsetFetch).OffsetFetchRequestGroup
    r = c.request(codec.ApiKey.OffsetFetch, 8, require_stable=False, groups=[g(
        group_id=group, member_id=None, member_epoch=-1,
        topics=[g.OffsetFetchRequestTopics(name=topic, partition_indexes=partitions)])])
    return {p.partition_index: (p.committed_offset, p.metadata)
            for p in r.groups[0].topics[0].partitions}


def _init(c, tid: str) -> tuple[int, int, int]:
    r = c.request(codec.ApiKey.InitProducerId, 4, transactional_id=tid, transaction_timeout_ms=60000,
                  producer_id=-1, producer_epoch=-1)
    return r.error_code, r.producer_id, r.producer_epoch


def _add_partition(c, tid: str, pid: int, epoch: int) -> int:
    r = c.request(codec.ApiKey.AddPartitionsToTxn, 1, v3_and_below_transactional_id=tid,
                  v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                  v3_and_below_topics=[("orders", [0])])
    return r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code


def test_a_group_id_too_long_is_refused_in_a_relaxed_namespace_and_later_commits_survive_a_restart(tmp_path):
    with EmulatedBroker(tmp_path / "data") as b:
        b.create_hub("orders", 1)
        with RawClient(b.bootstrap_servers, timeout=30) as c:
            errors = [_commit(c, "before", "orders", 0, 11),
                      _commit(c, "g" * BIG, "orders", 0, 5),
                      _commit(c, "\u20ac" * 10923, "orders", 0, 5),  # 32,769 bytes
                      _commit(c, "g" * 32767, "orders", 0, 7),  # longer than Event Hubs' 256: relaxed
                      _commit(c, "after", "orders", 0, 42)]
    with EmulatedBroker(tmp_path / "data") as b:
        with RawClient(b.bootstrap_servers, timeout=30) as c:
            assert _fetch(c, "before", "orders", [0])[0][0] == 11
            assert _fetch(c, "g" * 32767, "orders", [0])[0][0] == 7
            assert _fetch(c, "after", "orders", [0])[0][0] == 42  # was -1: cut off at restart
    invalid = Errors.InvalidGroupIdError.errno
    assert errors == [0, invalid, invalid, 0, 0]


def test_a_checkpoint_too_large_for_the_log_is_refused_with_kafkas_error_and_later_ones_survive(tmp_path):
    store = EmbeddedCheckpointStore(tmp_path)
    offsets = OffsetMetadataManager(GroupCoordinatorConfig(), _Clock(), store, namespace_of=lambda g: "ns")
    assert [r.error_code for r in offsets.commit("before", [("orders", 0, 11, -1, "")])] == [0]
    assert [r.error_code for r in offsets.commit("g" * BIG, [("orders", 0, 5, -1, "")])] == \
        [Errors.InvalidCommitOffsetSizeError.errno]  # what Kafka answers for a record too large
    assert [r.error_code for r in offsets.commit("after", [("orders", 0, 42, -1, "")])] == [0]
    store.close()
    reopened = EmbeddedCheckpointStore(tmp_path)
    assert reopened.get("ns", "after", "orders", 0).sequence_number == 42
    assert len(reopened.load()) == 2
    reopened.close()


def test_a_transactional_id_too_large_is_refused_and_fencing_survives_a_restart(tmp_path):
    with EmulatedBroker(tmp_path / "data") as b:
        b.create_hub("orders", 1)
        with RawClient(b.bootstrap_servers, timeout=30) as c:
            _, pid, epoch = _init(c, "victim")
            big = _init(c, "x" * BIG)[0]
            assert _init(c, "victim")[2] == epoch + 1  # fences the first producer
            assert _add_partition(c, "victim", pid, epoch) == Errors.ProducerFencedError.errno
    with EmulatedBroker(tmp_path / "data") as b:
        with RawClient(b.bootstrap_servers, timeout=30) as c:
            assert _add_partition(c, "victim", pid, epoch) == Errors.ProducerFencedError.errno  # was 0
    assert big == Errors.InvalidRequestError.errno


def test_a_transaction_of_offsets_for_100_partitions_with_long_metadata_survives_a_restart(tmp_path):
    # 100 x 4,096 three-byte characters: a state of 1.2 MB, over one record's 1 MiB.
    metadata = "\u20ac" * 4096
    with EmulatedBroker(tmp_path / "data") as b:
        b.create_hub("orders", 100)
        with RawClient(b.bootstrap_servers, timeout=30) as c:
            _, vpid, vepoch = _init(c, "victim")
            _, pid, epoch = _init(c, "big-offsets")
            assert c.request(codec.ApiKey.AddOffsetsToTxn, 1, transactional_id="big-offsets",
                             producer_id=pid, producer_epoch=epoch, group_id="g").error_code == 0
            r = c.request(codec.ApiKey.TxnOffsetCommit, 3, transactional_id="big-offsets", group_id="g",
                          producer_id=pid, producer_epoch=epoch, generation_id=-1, member_id="",
                          group_instance_id=None, topics=[_struct(
                              codec.ApiKey.TxnOffsetCommit, "TxnOffsetCommitRequestTopic", name="orders",
                              partitions=[_struct(codec.ApiKey.TxnOffsetCommit, "TxnOffsetCommitRequestTopic",
                                                  "TxnOffsetCommitRequestPartition", partition_index=i,
                                                  committed_offset=i, committed_leader_epoch=-1,
                                                  committed_metadata=metadata) for i in range(100)])])
            assert {p.error_code for t in r.topics for p in t.partitions} == {0}
            assert _init(c, "victim")[2] == vepoch + 1
    with EmulatedBroker(tmp_path / "data") as b:
        with RawClient(b.bootstrap_servers, timeout=30) as c:
            assert _add_partition(c, "victim", vpid, vepoch) == Errors.ProducerFencedError.errno
            assert c.request(codec.ApiKey.EndTxn, 1, transactional_id="big-offsets", producer_id=pid,
                             producer_epoch=epoch, committed=True).error_code == 0
            assert _fetch(c, "g", "orders", list(range(100))) == {i: (i, metadata) for i in range(100)}


def test_txn_offset_commit_metadata_longer_than_kafkas_limit_is_refused(tmp_path):
    store = TransactionStore(tmp_path)
    coordinator = transactions.TransactionCoordinator(
        _Clock(), store, allocate_producer_id=lambda: 1, write_marker=lambda *a: None,
        commit_offsets=lambda *a: None, partition_exists=lambda t, p: True)
    _, pid, epoch = coordinator.init_producer_id("t", 60_000)
    assert coordinator.add_offsets("t", pid, epoch, "g") == 0
    assert coordinator.txn_offset_commit("t", "g", pid, epoch, [("orders", 0, 1, -1, "m" * 4097)]) == \
        Errors.OffsetMetadataTooLargeError.errno
    assert coordinator.txn_offset_commit("t", "g", pid, epoch, [("orders", 0, 1, -1, "m" * 4096)]) == 0


class _Clock:
    def now_ms(self) -> int:
        return 1_000

    def call_later(self, delay_ms, fn):
        class _Timer:
            def cancel(self) -> None:
                pass
        return _Timer()


# -- a failed write (a full disk) ----------------------------------------------------------
# A tmpfs to fill needs root; a short write is injected instead, around one put only:
# os.write writes half of what it is given and says so, as it does on a full disk.
@pytest.fixture
def short_writes(monkeypatch):
    real = os.write

    def half(fd, data):
        return real(fd, bytes(data[:len(data) // 2 - 3]))  # not at a record boundary

    def arm() -> None:
        monkeypatch.setattr(os, "write", half)

    def disarm() -> None:
        monkeypatch.setattr(os, "write", real)
    return arm, disarm


def test_a_checkpoint_write_cut_short_is_removed_and_later_checkpoints_survive_a_reopen(tmp_path, short_writes):
    arm, disarm = short_writes
    store = EmbeddedCheckpointStore(tmp_path)
    store.put(Checkpoint("ns", "orders", "before", 0, 10, None))
    arm()
    with pytest.raises(CheckpointStoreError):
        store.put_many([Checkpoint("ns", "orders", "torn", p, 5, None, metadata="m" * 400) for p in range(64)])
    disarm()
    store.put(Checkpoint("ns", "orders", "after", 0, 42, None))
    store.close()
    reopened = EmbeddedCheckpointStore(tmp_path)
    assert reopened.get("ns", "before", "orders", 0).sequence_number == 10
    assert reopened.get("ns", "after", "orders", 0).sequence_number == 42  # was None: cut off
    assert reopened.get("ns", "torn", "orders", 0) is None
    reopened.close()


def test_a_transaction_state_write_cut_short_is_removed_and_later_states_survive_a_reopen(tmp_path, short_writes):
    arm, disarm = short_writes
    store = TransactionStore(tmp_path)
    store.load()
    store.put(TxnState("before", 1, 0, 60_000))
    arm()
    with pytest.raises(OSError):
        store.put(TxnState("torn", 2, 0, 60_000, partitions={("orders", p) for p in range(64)}))
    disarm()
    store.put(TxnState("after", 3, 5, 60_000))
    store.close()
    states = TransactionStore(tmp_path).load()
    assert sorted(states) == ["after", "before"]
    assert states["after"].producer_epoch == 5


@pytest.fixture
def full_disk(tmp_path):
    """A 1 MiB tmpfs (root only, else skipped) and a function that fills it up."""
    import subprocess

    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs needs root: the injected short writes above stand in")
    filler = mnt / "filler"

    def fill() -> None:
        with open(filler, "wb", buffering=0) as f:
            for block in (65536, 4096, 512, 1):
                try:
                    while True:
                        f.write(b"\xaa" * block)
                except OSError:
                    pass
    try:
        yield mnt, fill, filler.unlink
    finally:
        subprocess.run(["umount", "--lazy", str(mnt)], check=True)  # lazy: even if a test failed holding a file


def test_on_a_full_disk_both_stores_keep_every_later_write(full_disk):
    mnt, fill, make_room = full_disk
    checkpoints = EmbeddedCheckpointStore(mnt / "ckpt")
    txns = TransactionStore(mnt / "txn")
    txns.load()
    checkpoints.put(Checkpoint("ns", "orders", "before", 0, 10, None))
    txns.put(TxnState("before", 1, 0, 60_000))
    fill()
    with pytest.raises(CheckpointStoreError):
        checkpoints.put_many([Checkpoint("ns", "orders", "torn", p, 5, None, metadata="m" * 400)
                              for p in range(64)])
    with pytest.raises(OSError):
        txns.put(TxnState("torn", 2, 0, 60_000, partitions={("orders-" + "o" * 200, p) for p in range(64)}))
    make_room()
    checkpoints.put(Checkpoint("ns", "orders", "after", 0, 42, None))
    txns.put(TxnState("after", 3, 5, 60_000))
    checkpoints.close()
    txns.close()
    reopened = EmbeddedCheckpointStore(mnt / "ckpt")
    assert {c.consumer_group for c in reopened.load()} == {"before", "after"}
    reopened.close()
    again = TransactionStore(mnt / "txn")
    states = again.load()
    again.close()
    assert sorted(states) == ["after", "before"]


# -- writer and reader agree ----------------------------------------------------------------
_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.text() | st.binary(),
    lambda inner: st.lists(inner, max_size=8) | st.dictionaries(st.text(max_size=8), inner, max_size=8),
    max_leaves=30)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(st.lists(_values, max_size=6) | st.binary(max_size=200), max_size=8),
       limit=st.integers(16, 400))
def test_every_record_the_log_accepts_it_reads_back(records, limit):
    saved = record_log.MAX_RECORD
    record_log.MAX_RECORD = limit  # small records, so both sides of the limit are drawn
    try:
        written, data = [], b""
        for fields in records:
            try:
                data += record_log.frame(fields)
            except record_log.RecordTooLarge:
                assert len(record_log.packed(fields)) > limit
                continue
            written.append(fields)
        result, read = record_log.scan(data, 0, lambda fields: fields)
        assert list(read) == written
        assert result.problem is None and result.end == len(data)
    finally:
        record_log.MAX_RECORD = saved


_topics = st.text(alphabet="abcxyz\u20ac", min_size=1, max_size=20)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(partitions=st.sets(st.tuples(_topics, st.integers(0, 1023)), max_size=60),
       pending=st.dictionaries(st.text(min_size=1, max_size=30), st.dictionaries(
           st.tuples(_topics, st.integers(0, 1023)),
           st.tuples(st.integers(-1, 2**40), st.integers(-1, 100), st.none() | st.text(max_size=300)),
           max_size=30), max_size=4),
       piece=st.integers(64, 2000))
def test_a_transaction_state_of_any_size_is_read_back_whole(tmp_path_factory, partitions, pending, piece):
    saved = transactions._WHOLE, transactions._PIECE
    transactions._WHOLE = transactions._PIECE = piece  # small pieces: small states in several
    try:
        state = TxnState("tx-\u20ac", 7, 3, 60_000, ONGOING, set(partitions), set(pending), pending,
                         start_ms=5, update_ms=9, last_producer_id=6, last_producer_epoch=2)
        records = transactions.encode_state(state)
        assert all(len(r) - 8 <= record_log.MAX_RECORD for r in records)
        directory = tmp_path_factory.mktemp("txn")
        store = TransactionStore(directory)
        store.load()
        store.put(TxnState("other", 1, 0, 60_000))
        store.put(state)
        store.put(TxnState("later", 2, 0, 60_000))
        store.close()
        back = TransactionStore(directory).load()
        assert back["tx-\u20ac"] == state
        assert sorted(back) == sorted(["other", "tx-\u20ac", "later"])
    finally:
        transactions._WHOLE, transactions._PIECE = saved


def test_a_schema_registry_change_refused_on_a_full_disk_leaves_the_journal_readable(full_disk):
    # The registry's journal has the same hazard: a partial line with later lines after it
    # made the whole journal unreadable, and the registry started empty.
    from kafka_wire.eventhubs.schema_registry import SchemaRegistry

    mnt, fill, make_room = full_disk
    path = mnt / "registry.json"
    registry = SchemaRegistry(path)
    registry.put_group("before", "Avro", "None", {})
    schema = '{"type": "record", "name": "R", "fields": [{"name": "f", "type": "string", "doc": "%s"}]}'
    fill()
    with pytest.raises(OSError):
        registry.register("before", "torn", "Avro", schema % ("d" * 200_000))
    make_room()
    registry.put_group("after", "Avro", "None", {})
    registry.register("after", "kept", "Avro", schema % "d")
    again = SchemaRegistry(path)
    assert sorted(again.groups) == ["after", "before"]
    assert [s.name for s in again.schemas.values()] == ["kept"]
