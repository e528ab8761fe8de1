"""An AMQP receiver (the azure-eventhub SDK) meets a stored batch whose records parse but
end before the batch does (bytes after the last record, or fewer records counted than it
holds; stored by a broker before Produce checked compressed batches, or sent
uncompressed). Kafka's iterator refuses such a batch, and so do Capture and the console
(read_event_columns): the receiver goes on past it as past any unreadable batch, and
does not deliver its records as events. Before, the records up to the garbage were sent,
by the record-by-record loop and by its fast path for uniform batches alike."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.amqp.outgoing import batch_events
from kafka_wire.log import batch as rb
from kafka_wire.log import records as rec
from kafka_wire.log.errors import CorruptRecord
from tests.undecodable_batches import batch

from .batch_between import amqp_broker, received_bodies, store_between


def _records(values, key=None) -> bytes:
    return b"".join(rec.encode_record(i, 0, key, v) for i, v in enumerate(values))


KINDS = {  # (the record-by-record loop: a key; its fast path _uniform: no key, values alike in length)
    "zstd-keyed-then-garbage": lambda: batch(
        [b"x"], codec_id=rec.ZSTD, body=rec.compress(rec.ZSTD, _records([b"x"], b"k") + b"\x00\x02zz")),
    "zstd-uniform-then-garbage": lambda: batch(
        [b"x", b"y"], codec_id=rec.ZSTD, body=rec.compress(rec.ZSTD, _records([b"x", b"y"]) + b"\x00")),
    "uncompressed-uniform-then-garbage": lambda: batch([b"x", b"y"], body=_records([b"x", b"y"]) + b"\x02zz"),
    "counted-fewer": lambda: batch([b"x"], body=_records([b"x", b"y"])),
    "gzip-counted-fewer-keyed": lambda: batch(
        [b"x"], codec_id=rec.GZIP, body=rec.compress(rec.GZIP, _records([b"x", b"y"], b"k"))),
}

broker = pytest.fixture(scope="module", name="broker")(amqp_broker)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_receivers_do_not_deliver_records_followed_by_garbage(broker, monkeypatch, kind):
    hub = f"garbage-{kind}"
    store_between(broker, monkeypatch, hub, KINDS[kind]())
    assert received_bodies(broker, hub) == ["before", "after"]
    assert received_bodies(broker, hub) == ["before", "after"]  # again, from the start


@settings(max_examples=200, deadline=None, derandomize=True)
@given(values=st.lists(st.binary(max_size=40), min_size=1, max_size=70), keyed=st.booleans(),
       same_size=st.booleans(), garbage=st.binary(max_size=8), codec_id=st.sampled_from([rec.NONE, rec.GZIP]))
def test_batch_events_reads_a_batch_only_when_its_records_end_at_its_end(values, keyed, same_size, garbage, codec_id):
    if same_size:  # _uniform's batches
        values = [v[:1].ljust(1, b"v") for v in values]
    blob = batch(values, codec_id=codec_id, key=b"k" if keyed else None,
                 body=rec.compress(codec_id, _records(values, b"k" if keyed else None) + garbage))
    header = rb.parse_header(blob, 0)
    if garbage:
        with pytest.raises(CorruptRecord):
            batch_events(blob, header, 0, 0, 0, False, b"")
    else:
        assert len(batch_events(blob, header, 0, 0, 0, False, b"")) == len(values)
