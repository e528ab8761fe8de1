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
    start = reader.log_start_offset()  # may lie inside a batch (DeleteRecords): events from it on
    for b in reader.batches(start):
        decode_batch(b.data, b.position, b.append_time_ms, events, start)
    name = file_name(DEFAULT_NAME_FORMAT, "emulatorNs1", "orders", 0, events.enqueued_ms[0], "avro")
    writer = CaptureWriter("out", name, 0, "avro")
    writer.write(events)
    info = writer.close()
"""

from importlib import import_module

# Where each name lives; a submodule is imported when one of its names is first asked for,
# so ``capture.naming`` (the name format's rule, for the broker's Event Hubs layer too)
# costs no pyarrow, fastavro or proton import.
_EXPORTS = {
    "events": ("EventBatch", "UnreadableBatch", "arrow_table", "avro_records", "decode_batch", "format_enqueued_time"),
    "naming": ("DEFAULT_NAME_FORMAT", "TOKENS", "check_name_format", "file_name", "file_name_error",
               "name_format_error"),
    "notifications": ("EVENTS_FILE", "append_events", "capture_file_created"),
    "schema": ("ARROW_SCHEMA", "AVRO_SCHEMA"),
    "windows": ("BatchRef", "PlannedFile", "WindowPolicy", "WindowState", "plan"),
    "writers": ("CaptureWriter", "FileInfo", "normalize_encoding", "remove_leftovers"),
}
_HOME = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_HOME)


def __getattr__(name: str):
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))
