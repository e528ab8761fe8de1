"""``Microsoft.EventHub.CaptureFileCreated`` records (Event Grid schema).

Event Hubs announces each capture file through Event Grid. The emulator
appends the same event, one JSON object per line, to
``<out>/_capture_events.jsonl``. The event ``id`` is derived from the file's
URL, so a file rewritten by a replay is announced under the same id. Empty
files report what the service reports for them: size 0, count 0, sequence
numbers -1 and the times ``0001-01-01T00:00:00``.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
from pathlib import Path

from .blob import is_url
from .events import iso_time
from .writers import FileInfo

logger = logging.getLogger(__name__)

EVENTS_FILE = "_capture_events.jsonl"
EVENT_TYPE = "Microsoft.EventHub.CaptureFileCreated"
EMPTY_TIME = "0001-01-01T00:00:00"


def capture_file_created(info: FileInfo, namespace: str, event_hub: str, event_time_ms: int) -> dict:
    url = info.path if is_url(info.path) else Path(info.path).resolve().as_uri()
    empty = info.event_count == 0
    return {
        "topic": f"/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kafka-wire/providers/"
                 f"Microsoft.EventHub/namespaces/{namespace}",
        "subject": f"eventhubs/{event_hub}",
        "eventType": EVENT_TYPE,
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, url)),
        "data": {
            "fileUrl": url,
            "fileType": "AzureBlockBlob",
            "partitionId": str(info.partition),
            "sizeInBytes": 0 if empty else info.size_bytes,
            "eventCount": info.event_count,
            "firstSequenceNumber": -1 if empty else info.first_sequence_number,
            "lastSequenceNumber": -1 if empty else info.last_sequence_number,
            "firstEnqueueTime": EMPTY_TIME if empty else iso_time(info.first_enqueued_ms),
            "lastEnqueueTime": EMPTY_TIME if empty else iso_time(info.last_enqueued_ms),
        },
        "dataVersion": "1",
        "metadataVersion": "1",
        "eventTime": iso_time(event_time_ms),
    }


def append_events(path: str | os.PathLike, records: list[dict]) -> bool:
    """Append ``records`` as JSON lines with one write, unless they already
    are the file's last lines (a commit repeated after a crash that came
    between this append and the caller noting it). True if appended."""
    if not records:
        return False
    payload = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records).encode()
    with open(path, "a+b") as f:
        size = f.seek(0, os.SEEK_END)
        if size >= len(payload):
            f.seek(size - len(payload))
            if f.read() == payload:
                return False
        f.write(payload)
        f.flush()
        os.fsync(f.fileno())
    return True
