"""partitionLeaderEpoch stamping (log/batch.py patch_leader_epoch, PartitionLog.append and
append_control): the broker writes the leader's epoch into every batch it appends, as Kafka's
LogValidator does, in place and outside the CRC."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kafka_wire.log import batch as rb
from kafka_wire.log.config import LogConfig
from kafka_wire.log.partition_log import PartitionLog

from .log_helpers import GZIP, decoded_records, make_batch

EPOCHS = st.integers(-(2**31), 2**31 - 1)


@given(epoch=EPOCHS, records=st.integers(1, 5), compressed=st.booleans(), at=st.integers(0, 2))
def test_patch_leader_epoch_changes_that_field_alone_and_keeps_the_crc(epoch, records, compressed, at):
    batches = [make_batch(records, compression=GZIP if compressed else 0, tag=i) for i in range(3)]
    blob = bytearray(b"".join(batches))
    pos = sum(len(b) for b in batches[:at])
    before = rb.validate_records(blob)
    rb.patch_leader_epoch(blob, pos, epoch)
    after = rb.validate_records(blob)                     # every CRC still valid
    assert after[at] == before[at]._replace(partition_leader_epoch=epoch)
    assert after[:at] + after[at + 1:] == before[:at] + before[at + 1:]
    assert decoded_records(blob) == decoded_records(b"".join(batches))


def test_patch_leader_epoch_works_on_a_memoryview():
    buf = bytearray(make_batch(1))
    with memoryview(buf) as view:
        rb.patch_leader_epoch(view, 0, 7)
    assert rb.validate_records(buf)[0].partition_leader_epoch == 7


def test_the_log_stamps_produced_batches_and_markers_with_the_leader_epoch(tmp_path):
    log = PartitionLog(tmp_path, LogConfig(message_timestamp_type="CreateTime"), now_ms=0)
    try:
        log.append(make_batch(2), now_ms=1, leader_epoch=3)
        log.append(make_batch(1, producer_id=9, transactional=True), now_ms=2, leader_epoch=4)
        log.append_control(9, 0, True, 0, now_ms=3, leader_epoch=5)
        java = bytearray(make_batch(1))
        rb.patch_leader_epoch(java, 0, -1)                    # what the Java producer writes
        log.append(java, now_ms=4)                            # None: the producer's epoch is kept
        stored = log.read(0, 1 << 20)
        assert [h.partition_leader_epoch for _pos, h in rb.iter_batches(stored)] == [3, 4, 5, -1]
        assert len(rb.validate_records(stored)) == 4
    finally:
        log.close()
