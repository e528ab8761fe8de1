"""The Capture contract without Spark: decoding, names, schema, files,
CaptureFileCreated."""

from __future__ import annotations

import json
import struct

import fastavro
import pyarrow.parquet as pq
import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kafka_wire.capture import (
    ARROW_SCHEMA, AVRO_SCHEMA, DEFAULT_NAME_FORMAT, CaptureWriter, EventBatch, append_events, capture_file_created,
    check_name_format, decode_batch, file_name, format_enqueued_time, remove_leftovers,
)

CODECS = {"none": 0, "gzip": DefaultRecordBatch.CODEC_GZIP, "snappy": DefaultRecordBatch.CODEC_SNAPPY,
          "lz4": DefaultRecordBatch.CODEC_LZ4, "zstd": DefaultRecordBatch.CODEC_ZSTD}


def kafka_batch(codec: int, n: int = 50, base: int = 100) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 24)
    for i in range(n):
        key = None if i == 0 else (b"\xff\xfe" if i == 1 else f"key-{i}".encode())
        value = None if i == 2 else (f"body-{i}-".encode() * 20)
        b.append(i, timestamp=1_000 + i, key=key, value=value, headers=[("h", b"v%d" % i), ("n", None)])
    data = bytearray(b.build())
    struct.pack_into(">q", data, 0, base)  # base offset as the broker assigns it (outside the CRC)
    return bytes(data)


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_every_codec_decodes_to_the_same_events(codec):
    events = decode_batch(kafka_batch(CODECS[codec]), position=4242, append_time_ms=1_700_000_000_123)
    assert events.sequence_numbers == list(range(100, 150))
    # Each event its own Event Hubs offset: the batch's position, scaled, plus its delta.
    assert events.offsets == [4242 * 10**6 + i for i in range(50)]
    assert set(events.enqueued_ms) == {1_700_000_000_123}
    assert events.keys[0] is None and events.keys[3] == b"key-3"
    assert events.bodies[2] is None and events.bodies[3] == b"body-3-" * 20
    assert events.headers[5] == [("h", b"v5"), ("n", None)]


def test_snappy_in_kafkas_xerial_framing_decodes():
    data = kafka_batch(CODECS["snappy"])
    assert data[61:61 + 8] == b"\x82SNAPPY\x00"  # kafka-python frames snappy the way the Java client does
    assert len(decode_batch(data, 0, 0)) == 50


def test_enqueued_time_uses_the_format_seen_in_real_capture_files():
    assert format_enqueued_time(1675708185000) == "2/6/2023 6:29:45 PM"
    assert format_enqueued_time(1675642185000) == "2/6/2023 12:09:45 AM"
    assert format_enqueued_time(1675685385000) == "2/6/2023 12:09:45 PM"


def test_names_follow_the_nine_tokens():
    ms = 1512702197000  # 2017-12-08 03:03:17 UTC
    assert file_name(DEFAULT_NAME_FORMAT, "contoso", "orders", 0, ms, "avro") == \
        "contoso/orders/0/2017/12/08/03/03/17.avro"
    custom = "{Year}-{Month}-{Day}/{Namespace}_{EventHub}/p{PartitionId}/{Hour}{Minute}{Second}"
    assert file_name(custom, "ns", "hub", 3, ms, "parquet") == "2017-12-08/ns_hub/p3/030317.parquet"
    with pytest.raises(ValueError, match="all nine placeholders"):
        check_name_format("{Namespace}/{EventHub}/{Year}")


def read_avro(path):
    with open(path, "rb") as f:
        r = fastavro.reader(f)
        return r, list(r)


def test_an_avro_file_declares_the_documented_schema_and_codec(tmp_path):
    w = CaptureWriter(tmp_path, "a/b/0.avro", 0, "avro")
    w.write(decode_batch(kafka_batch(0), 1234, 1_700_000_000_000))
    info = w.close()
    r, records = read_avro(info.path)
    declared = json.loads(r.metadata["avro.schema"])
    assert declared == AVRO_SCHEMA and r.metadata["avro.codec"] == "null"
    assert [f["name"] for f in declared["fields"]] == [
        "SequenceNumber", "Offset", "EnqueuedTimeUtc", "SystemProperties", "Properties", "Body"]
    rec = records[3]
    assert rec["SequenceNumber"] == 103 and rec["Offset"] == "1234000003" and rec["Body"] == b"body-3-" * 20
    assert rec["SystemProperties"] == {"x-opt-sequence-number": 103, "x-opt-offset": "1234000003",
                                       "x-opt-enqueued-time": 1_700_000_000_000, "x-opt-partition-key": "key-3"}
    assert rec["Properties"] == {"h": b"v3", "n": None}
    assert "x-opt-partition-key" not in records[0]["SystemProperties"]  # null key
    assert "x-opt-partition-key" not in records[1]["SystemProperties"]  # not UTF-8
    assert records[2]["Body"] is None
    assert (info.event_count, info.first_sequence_number, info.last_sequence_number) == (50, 100, 149)


def test_the_partition_key_can_be_left_out_as_event_hubs_historically_did(tmp_path):
    w = CaptureWriter(tmp_path, "k.avro", 0, "avro", partition_key=False)
    w.write(decode_batch(kafka_batch(0), 0, 0))
    _, records = read_avro(w.close().path)
    assert all("x-opt-partition-key" not in r["SystemProperties"] for r in records)


def test_avro_files_are_reproducible_byte_for_byte(tmp_path):
    paths = []
    for d in ("one", "two"):
        w = CaptureWriter(tmp_path / d, "x/0.avro", 0, "avro")
        w.write(decode_batch(kafka_batch(0), 0, 5))
        paths.append(w.close().path)
    assert open(paths[0], "rb").read() == open(paths[1], "rb").read()


def test_parquet_has_the_same_columns(tmp_path):
    w = CaptureWriter(tmp_path, "p/0.parquet", 0, "parquet")
    w.write(decode_batch(kafka_batch(0), 77, 1_700_000_000_000))
    table = pq.read_table(w.close().path)
    assert table.schema.names == ARROW_SCHEMA.names == [f["name"] for f in AVRO_SCHEMA["fields"]]
    row = table.slice(3, 1).to_pylist()[0]
    assert row["SequenceNumber"] == 103 and row["Offset"] == "77000003"
    assert dict(row["SystemProperties"])["x-opt-partition-key"]["member2"] == "key-3"
    assert dict(row["Properties"])["h"]["member3"] == b"v3" and dict(row["Properties"])["n"] is None


@pytest.mark.parametrize("encoding", ["avro", "parquet"])
def test_a_file_appears_only_when_closed_and_empty_files_are_valid(tmp_path, encoding):
    w = CaptureWriter(tmp_path, f"e/0.{encoding}", 0, encoding)
    assert not (tmp_path / f"e/0.{encoding}").exists()
    assert len(list((tmp_path / "e").iterdir())) == 1  # only the hidden temporary file
    info = w.close()
    assert info.event_count == 0 and info.first_sequence_number == -1
    if encoding == "avro":
        assert read_avro(info.path)[1] == []
    else:
        assert pq.read_table(info.path).num_rows == 0


def test_leftovers_of_a_killed_writer_are_removed(tmp_path):
    CaptureWriter(tmp_path, "z/0.avro", 0, "avro")  # never closed
    assert remove_leftovers(tmp_path) == 1 and list((tmp_path / "z").iterdir()) == []


def test_capture_file_created_reports_documented_fields_and_empty_values(tmp_path):
    w = CaptureWriter(tmp_path, "ns/hub/0/x.avro", 0, "avro")
    w.write(decode_batch(kafka_batch(0), 0, 1_700_000_000_000))
    full = capture_file_created(w.close(), "ns", "hub", 0)
    assert full["eventType"] == "Microsoft.EventHub.CaptureFileCreated" and full["subject"] == "eventhubs/hub"
    assert set(full["data"]) == {"fileUrl", "fileType", "partitionId", "sizeInBytes", "eventCount",
                                 "firstSequenceNumber", "lastSequenceNumber", "firstEnqueueTime", "lastEnqueueTime"}
    assert full["data"]["partitionId"] == "0" and full["data"]["fileType"] == "AzureBlockBlob"
    assert full["data"]["firstEnqueueTime"] == "2023-11-14T22:13:20.000Z"
    empty = capture_file_created(CaptureWriter(tmp_path, "ns/hub/0/y.avro", 0, "avro").close(), "ns", "hub", 0)
    d = empty["data"]
    assert (d["sizeInBytes"], d["eventCount"], d["firstSequenceNumber"], d["lastSequenceNumber"]) == (0, 0, -1, -1)
    assert d["firstEnqueueTime"] == d["lastEnqueueTime"] == "0001-01-01T00:00:00"


def test_repeating_the_last_append_of_events_adds_nothing(tmp_path):
    path = tmp_path / "_capture_events.jsonl"
    assert append_events(path, [{"id": 1}]) and append_events(path, [{"id": 2}, {"id": 3}])
    assert not append_events(path, [{"id": 2}, {"id": 3}])  # a commit repeated after a crash
    assert [json.loads(x)["id"] for x in path.read_text().splitlines()] == [1, 2, 3]


def test_an_event_batch_is_plain_columns():
    e = EventBatch()
    assert len(e) == 0 and len(e.columns()) == 6


def test_properties_an_amqp_client_sent_are_captured_typed(tmp_path):
    """AMQP application properties are stored AMQP-encoded (as Kafka consumers get
    them); Capture decodes them to the union's types, in Avro and in Parquet."""
    import uuid

    from proton import Message, symbol, timestamp

    from kafka_wire.amqp.messages import decode_message
    from kafka_wire.eventhubs.events import records_batch

    ident = uuid.UUID("12345678-1234-5678-1234-567812345678")
    sent = Message(body=b"amqp body", inferred=True, properties={
        "s": "text", "n": 42, "f": 1.5, "b": b"\x00\x01", "t": True, "u": ident,
        "when": timestamp(1_700_000_000_123), "sym": symbol("sym-value"), "none": None})
    sent.annotations = {symbol("x-opt-partition-key"): "pk"}
    data = bytes(records_batch([decode_message(bytes(sent.encode()))], now_ms=1_700_000_000_000))
    events = decode_batch(data, 9, 1_700_000_000_000)
    assert dict(events.headers[0]) == {
        "s": "text", "n": 42, "f": 1.5, "b": b"\x00\x01", "t": 1, "u": str(ident),
        "when": 1_700_000_000_123, "sym": "sym-value", "none": None}
    w = CaptureWriter(tmp_path, "typed/0.avro", 0, "avro")
    w.write(events)
    _, (rec,) = read_avro(w.close().path)
    assert rec["Properties"]["n"] == 42 and rec["Properties"]["s"] == "text"
    assert rec["SystemProperties"]["x-opt-partition-key"] == "pk" and rec["Body"] == b"amqp body"
    w = CaptureWriter(tmp_path, "typed/0.parquet", 0, "parquet")
    w.write(events)
    row = pq.read_table(w.close().path).to_pylist()[0]
    props = dict(row["Properties"])
    assert props["f"]["member1"] == 1.5 and props["b"]["member3"] == b"\x00\x01"
