"""Event Hubs Capture, without Spark: the contract and the file writing.

- ``schema``: the Avro schema (and its Parquet/Arrow twin), defined once;
- ``events``: RecordBatch v2 bytes from the log -> Event Hubs events;
- ``naming``: file names from the nine tokens;
- ``windows``: time and size windows, empty windows, unique names;
- ``writers``: Avro and Parquet files that appear atomically;
- ``notifications``: CaptureFileCreated records.

Imports flow ``spark`` -> ``capture`` -> ``log``; nothing here imports Spark
or the server.

Example: capture one partition directory by hand::

    from kafka_wire.log.reader import PartitionReader
    from kafka_wire.capture import DEFAULT_NAME_FORMAT, CaptureWriter, EventBatch, decode_batch, file_name

    reader = PartitionReader("data/emulatorNs1/orders-0")
    events = EventBatch()
    for b in reader.batches(0):
        decode_batch(b.data, b.position, b.append_time_ms, events)
    name = file_name(DEFAULT_NAME_FORMAT, "emulatorNs1", "orders", 0, events.enqueued_ms[0], "avro")
    writer = CaptureWriter("out", name, 0, "avro")
    writer.write(events)
    info = writer.close()
"""

from .events import EventBatch, arrow_table, avro_records, decode_batch, format_enqueued_time
from .naming import DEFAULT_NAME_FORMAT, TOKENS, check_name_format, file_name
from .notifications import EVENTS_FILE, append_events, capture_file_created
from .schema import ARROW_SCHEMA, AVRO_SCHEMA
from .windows import BatchRef, PlannedFile, WindowPolicy, WindowState, plan
from .writers import CaptureWriter, FileInfo, normalize_encoding, remove_leftovers

__all__ = [
    "ARROW_SCHEMA", "AVRO_SCHEMA", "BatchRef", "CaptureWriter", "DEFAULT_NAME_FORMAT", "EVENTS_FILE", "EventBatch",
    "FileInfo", "PlannedFile", "TOKENS", "WindowPolicy", "WindowState", "append_events", "arrow_table",
    "avro_records", "capture_file_created", "check_name_format", "decode_batch", "file_name",
    "format_enqueued_time", "normalize_encoding", "plan", "remove_leftovers",
]
