"""The three readers of a stored batch's records accept the same batches and read
the same records from them: log.records.read_records (the cleaner's), read_event_columns
(Capture's and the console's) and kafka_wire.amqp.outgoing.batch_events (the AMQP
receivers'). Their rule is Kafka's (DefaultRecord.readFrom, DefaultRecordBatch's
iterator): each of records_count records parses in full, headers included, and ends
exactly where its length says; no byte follows the last one. Otherwise CorruptRecord,
and the cleaner keeps the batch as it is (what every reader then refuses again).
batch_events sends what the other two read, and refuses what they refuse."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kafka_wire.amqp.messages import encode_event
from kafka_wire.amqp.outgoing import batch_events
from kafka_wire.log import batch as rb
from kafka_wire.log import records as rec
from kafka_wire.log.errors import CorruptRecord

from .log_helpers import read_all
from .test_cleaner import Env

varint = rec.encode_varint


def _available(codec: int) -> bool:
    try:
        rec.compress(codec, b"x")
        return True
    except rec.UnsupportedCodec:
        return False


CODECS = [c for c in (rec.NONE, rec.GZIP, rec.SNAPPY, rec.LZ4, rec.ZSTD) if _available(c)]

small = st.one_of(st.integers(-3, 70), st.integers(-(2**40), 2**40))
blob = st.one_of(st.none(), st.binary(max_size=5), st.just(b"v" * 130))  # 130: a length of two bytes
# A header's name: its bytes, or a negative length (-1 or less: Kafka refuses it)
name = st.one_of(st.binary(max_size=4), st.integers(-3, -1))
record = st.fixed_dictionaries({
    "ts": small, "delta": st.one_of(st.integers(-2, 70), st.integers(8000, 9000)), "key": blob, "value": blob,
    "headers": st.lists(st.tuples(name, blob), max_size=2),
    # declared counts and lengths off by a little, bytes left inside a record
    "count_off": st.sampled_from([0, 0, 0, 0, 1, -1, -3]),
    "length_off": st.sampled_from([0, 0, 0, 0, 0, 1, -1, 2, -2]),
    "inside": st.one_of(st.just(b""), st.just(b""), st.binary(min_size=1, max_size=3)),
})


def encode(r: dict) -> bytes:
    """One record as ``r`` says, mistakes included."""
    parts = [b"\x00", varint(r["ts"]), varint(r["delta"])]
    for field in (r["key"], r["value"]):
        parts += (b"\x01", b"") if field is None else (varint(len(field)), field)
    parts.append(varint(len(r["headers"]) + r["count_off"]))
    for n, v in r["headers"]:
        parts += (varint(n), b"") if isinstance(n, int) else (varint(len(n)), n)
        parts += (b"\x01", b"") if v is None else (varint(len(v)), v)
    body = b"".join(parts) + r["inside"]
    return varint(max(len(body) + r["length_off"], 0)) + body


batches = st.fixed_dictionaries({
    "records": st.lists(record, max_size=4),
    "codec": st.sampled_from(CODECS),
    "count_off": st.sampled_from([0, 0, 0, 1, -1, 2]),
    "after": st.one_of(st.just(b""), st.just(b""), st.binary(min_size=1, max_size=3)),
    # any byte of the records changed (lengths, varints, counts, anything)
    "changes": st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=2),
})


def make(b: dict) -> bytes:
    body = bytearray(b"".join(map(encode, b["records"])) + b["after"])
    for at, byte in b["changes"]:
        if body:
            body[at % len(body)] = byte
    count = max(len(b["records"]) + b["count_off"], 0)
    return bytes(rb.encode_batch(
        base_offset=100, partition_leader_epoch=0, attributes=b["codec"], last_offset_delta=max(count - 1, 0),
        base_timestamp=0, max_timestamp=0, producer_id=-1, producer_epoch=-1, base_sequence=-1,
        records_count=count, records=rec.compress(b["codec"], bytes(body))))


def by_read_records(data, header):
    try:
        records = rec.read_records(data, header)
    except CorruptRecord:
        return None
    return [(r.offset_delta, None if r.key is None else bytes(r.key), r.null_value,
             rec._record_value(bytes(r.raw))) for r in records]


def by_columns(data, header):
    offsets, keys, headers, values = [], [], [], []
    try:
        rec.read_event_columns(data, header, offsets, keys, headers, values)
    except CorruptRecord:
        return None, None
    read = [(o, None if k is None else bytes(k), v is None, None if v is None else bytes(v))
            for o, k, v in zip(offsets, keys, values)]
    return read, headers


def by_receivers(data, header):
    try:
        return [bytes(m) for m in batch_events(memoryview(data), header, -(1 << 64), 0, 0, False, b"")]
    except CorruptRecord:
        return None


@settings(max_examples=800, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck))
@example({"records": [{"ts": 0, "delta": 0, "key": b"k", "value": b"v", "headers": [(b"h", b"x")],
                       "count_off": 0, "length_off": 0, "inside": b""}],
          "codec": rec.NONE, "count_off": 0, "after": b"", "changes": []})
@given(batches)
def test_the_readers_accept_the_same_batches_and_read_the_same_records(b):
    data = make(b)
    header = rb.parse_header(data)
    read = by_read_records(data, header)
    columns, headers = by_columns(data, header)
    assert read == columns  # (None: refused)
    if columns is not None:  # what Capture reads, the receivers send; and the cleaner's rebuild reads the same
        expected = [encode_event(header.base_offset + o, rb.event_offset(0, o), 0, k, v, h, False, b"")
                    for (o, k, _, v), h in zip(columns, headers)]
        assert by_receivers(data, header) == expected
        if columns:
            rebuilt = bytes(rec.rebuild_batch(header, rec.read_records(data, header)))
            assert by_columns(rebuilt, rb.parse_header(rebuilt)) == (columns, headers)
    else:  # and what they refuse, the receivers refuse
        assert by_receivers(data, header) is None


def plain(**changes) -> dict:
    return {"ts": 0, "delta": 0, "key": b"k", "value": b"v", "headers": [], "count_off": 0, "length_off": 0,
            "inside": b"", **changes}


def batch_of(*records: dict) -> dict:
    return {"records": list(records), "codec": rec.NONE, "count_off": 0, "after": b"", "changes": []}


MISFITS = {  # records whose fields parse but do not end where their length says; a negative header count
    "a length one short": batch_of(plain(length_off=-1), plain(delta=1)),
    "one long, the next one short": batch_of(plain(length_off=1), plain(delta=1, length_off=-1)),
    "a header count of -1": batch_of(plain(count_off=-1), plain(delta=1)),
}


@pytest.mark.parametrize("shape", MISFITS)
def test_read_records_and_read_event_columns_refuse_a_record_that_misfits_its_length(shape):
    data = make(MISFITS[shape])
    header = rb.parse_header(data)
    assert by_read_records(data, header) is None and by_columns(data, header) == (None, None)


@pytest.mark.parametrize("shape", MISFITS)
def test_the_receivers_refuse_a_record_that_misfits_its_length(shape):
    data = make(MISFITS[shape])
    assert by_receivers(data, rb.parse_header(data)) is None


REFUSED = {  # two records, a=2 and b=3, that every reader refuses (read_records did not)
    "a byte after the last record": (rec.NONE, encode(plain(key=b"a", value=b"2"))
                                     + encode(plain(delta=1, key=b"b", value=b"3")) + b"\x00"),
    "a byte inside a record, after its headers": (rec.GZIP, encode(plain(key=b"a", value=b"2", inside=b"\x00"))
                                                  + encode(plain(delta=1, key=b"b", value=b"3"))),
}


@pytest.mark.parametrize("shape", REFUSED)
def test_a_batch_the_readers_refuse_is_kept_as_it_is_by_the_cleaner(tmp_path, shape):
    """a=1, then a batch of a=2 and b=3 that Capture and the receivers refuse whole,
    then b=4. The cleaner keeps that batch byte for byte: not rewritten into a batch
    the readers would read (a=2 showing up), and its keys superseding nothing (a=1 stays)."""
    codec, records = REFUSED[shape]
    env = Env(tmp_path)
    env.put((b"a", b"1"))
    env.log.append(bytes(rb.encode_batch(
        base_offset=0, partition_leader_epoch=0, attributes=codec, last_offset_delta=1,
        base_timestamp=env.now, max_timestamp=env.now, producer_id=-1, producer_epoch=-1, base_sequence=-1,
        records_count=2, records=rec.compress(codec, records))), now_ms=env.now)
    env.now += 1
    env.put((b"b", b"4"))
    env.log.roll()
    before = batches_of(read_all(env.log))
    assert by_columns(before[1], rb.parse_header(before[1])) == (None, None)
    env.clean()
    after = batches_of(read_all(env.log))
    assert after[1] == before[1]  # the refused batch, untouched
    assert by_columns(after[0], rb.parse_header(after[0]))[0] == [(0, b"a", False, b"1")]
    assert sorted(after) == [0, 1, 3]


def batches_of(view) -> dict[int, bytes]:
    return {h.base_offset: bytes(view[p:p + h.size]) for p, h in rb.iter_batches(view)}
