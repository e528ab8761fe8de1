"""The Event Hubs Capture record, defined once (Avro EventData in Microsoft.ServiceBus.Messaging).

Avro: record ``EventData`` in namespace ``Microsoft.ServiceBus.Messaging``
with the six fields in Event Hubs' order. ``Properties`` map values carry the
``"null"`` branch real capture files declare (the docs omit it);
``SystemProperties`` keep the documented four branches.

Parquet (Event Hubs writes it only through Stream Analytics) uses the same
column names. Arrow has no union type Parquet can store, so a map value is a
struct with one field per Avro branch, named ``member0``..``member3`` in
branch order: that is exactly what Spark's Avro reader turns these Avro
unions into, so a job reading captures sees one schema for both encodings.
"""

from __future__ import annotations

import pyarrow as pa

AVRO_NAMESPACE = "Microsoft.ServiceBus.Messaging"
AVRO_NAME = "EventData"

SYSTEM_PROPERTY_TYPES = ["long", "double", "string", "bytes"]
PROPERTY_TYPES = ["long", "double", "string", "bytes", "null"]

AVRO_SCHEMA: dict = {
    "type": "record",
    "name": AVRO_NAME,
    "namespace": AVRO_NAMESPACE,
    "fields": [
        {"name": "SequenceNumber", "type": "long"},
        {"name": "Offset", "type": "string"},
        {"name": "EnqueuedTimeUtc", "type": "string"},
        {"name": "SystemProperties", "type": {"type": "map", "values": SYSTEM_PROPERTY_TYPES}},
        {"name": "Properties", "type": {"type": "map", "values": PROPERTY_TYPES}},
        {"name": "Body", "type": ["null", "bytes"]},
    ],
}
AVRO_CODEC = "null"  # what real capture files use (AvroDeflate is deprecated)

FIELD_NAMES = tuple(f["name"] for f in AVRO_SCHEMA["fields"])

# Union branch -> struct member, in Avro branch order (Spark's Avro convention).
UNION_VALUE = pa.struct(
    [
        pa.field("member0", pa.int64()),
        pa.field("member1", pa.float64()),
        pa.field("member2", pa.string()),
        pa.field("member3", pa.binary()),
    ]
)
PROPERTY_MAP = pa.map_(pa.string(), UNION_VALUE)

ARROW_SCHEMA = pa.schema(
    [
        pa.field("SequenceNumber", pa.int64(), nullable=False),
        pa.field("Offset", pa.string(), nullable=False),
        pa.field("EnqueuedTimeUtc", pa.string(), nullable=False),
        pa.field("SystemProperties", PROPERTY_MAP, nullable=False),
        pa.field("Properties", PROPERTY_MAP, nullable=False),
        pa.field("Body", pa.binary()),
    ],
    metadata={b"avro.name": f"{AVRO_NAMESPACE}.{AVRO_NAME}".encode()},
)

assert tuple(ARROW_SCHEMA.names) == FIELD_NAMES


def union_member(value) -> dict | None:
    """An Avro union value as its Arrow struct (None stays None: a null property)."""
    if value is None:
        return None
    if isinstance(value, bool):  # bool is an int to Python; Avro has no boolean branch here
        return {"member0": int(value)}
    if isinstance(value, int):
        return {"member0": value}
    if isinstance(value, float):
        return {"member1": value}
    if isinstance(value, str):
        return {"member2": value}
    return {"member3": bytes(value)}
