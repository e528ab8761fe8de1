"""Recent Capture files, read from the ``_capture_events.jsonl`` the capture job
appends to in its output directory: one Event Grid ``CaptureFileCreated``
event per line (Event Grid's Microsoft.EventHub.CaptureFileCreated)::

    {"eventType": "Microsoft.EventHub.CaptureFileCreated", "subject": "eventhubs/orders",
     "topic": ".../namespaces/emulatorNs1", "eventTime": "...",
     "data": {"fileUrl": "...", "partitionId": "0", "sizeInBytes": 1234, "eventCount": 10, ...}}

A bare ``data`` object per line is accepted too; an event repeated with the
same ``id`` (a replay rewrote the file) replaces the earlier one. The file is read
incrementally (only new lines since the last look), totals are kept per
(namespace, hub), and the newest files are remembered for the console.
"""
from __future__ import annotations

import json
import logging
from collections import deque
from pathlib import Path
from typing import Callable, Iterable

log = logging.getLogger(__name__)

EVENTS_FILE = "_capture_events.jsonl"
_RECENT = 100
_MAX_READ = 4 * 1024 * 1024  # per look, so a huge backlog cannot stall the loop long


class CaptureFiles:
    def __init__(self, directories: Iterable[Path],
                 discover: Callable[[], Iterable[Path]] | None = None) -> None:
        """``discover``: asked at each refresh for directories to add (hubs whose
        Capture the management API enabled since)."""
        self.directories = list(dict.fromkeys(Path(d) for d in directories))
        self.discover = discover
        self._pos: dict[Path, int] = {}
        self._partial: dict[Path, bytes] = {}
        self.recent: deque[dict] = deque(maxlen=_RECENT)
        self.totals: dict[tuple[str, str], list[int]] = {}  # -> [files, bytes, events]
        self._by_id: dict[str, dict] = {}

    def refresh(self) -> None:
        if self.discover is not None:
            self.directories.extend(d for d in map(Path, self.discover()) if d not in self.directories)
        for d in self.directories:
            path = d / EVENTS_FILE
            try:
                size = path.stat().st_size
            except OSError:
                continue
            pos = self._pos.get(path, 0)
            if size < pos:  # rewritten: start over
                pos = 0
                self._partial.pop(path, None)
            if size == pos:
                continue
            try:
                with open(path, "rb") as f:
                    f.seek(pos)
                    chunk = f.read(min(size - pos, _MAX_READ))
            except OSError as exc:
                log.warning("cannot read %s: %s", path, exc)
                continue
            self._pos[path] = pos + len(chunk)
            data = self._partial.pop(path, b"") + chunk
            lines = data.split(b"\n")
            if lines[-1]:
                self._partial[path] = lines[-1]
            for line in lines[:-1]:
                if line.strip():
                    self._add(line, path)

    def _add(self, line: bytes, path: Path) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            log.warning("%s: skipping a line that is not JSON", path)
            return
        if not isinstance(event, dict):
            return
        data = event.get("data") if isinstance(event.get("data"), dict) else event
        subject = str(event.get("subject") or "")
        hub = subject.split("/", 1)[1] if subject.startswith("eventhubs/") else data.get("eventHub")
        topic = str(event.get("topic") or event.get("source") or "")
        namespace = data.get("namespace") or event.get("namespace")
        if not namespace and "/namespaces/" in topic:
            namespace = topic.rsplit("/namespaces/", 1)[1].split("/", 1)[0]
        url = str(data.get("fileUrl") or "")
        if (not namespace or not hub) and url:
            # {Namespace}/{EventHub}/{PartitionId}/... under the container (default format)
            parts = [p for p in url.replace("\\", "/").split("/") if p]
            for i in range(len(parts) - 8):
                if parts[i + 2] == str(data.get("partitionId")):
                    namespace, hub = namespace or parts[i], hub or parts[i + 1]
                    break
        entry = {
            "namespace": namespace or "", "hub": hub or "",
            "partition": str(data.get("partitionId", "")),
            "file": url, "name": _short_name(url, path.parent), "size_bytes": _int(data.get("sizeInBytes")),
            "events": _int(data.get("eventCount")),
            "first_sequence_number": _int(data.get("firstSequenceNumber"), -1),
            "last_sequence_number": _int(data.get("lastSequenceNumber"), -1),
            "time": event.get("eventTime") or event.get("time") or data.get("lastEnqueueTime") or "",
        }
        event_id = event.get("id")
        earlier = self._by_id.pop(event_id, None) if event_id else None
        if earlier is not None:  # a replay rewrote the file: announced again, same id
            self._count(earlier, -1)
            try:
                self.recent.remove(earlier)
            except ValueError:
                pass
        if event_id:
            self._by_id[event_id] = entry
            if len(self._by_id) > 10_000:
                self._by_id.pop(next(iter(self._by_id)))
        self.recent.appendleft(entry)
        self._count(entry, 1)

    def _count(self, entry: dict, sign: int) -> None:
        t = self.totals.setdefault((entry["namespace"], entry["hub"]), [0, 0, 0])
        t[0] += sign
        t[1] += sign * entry["size_bytes"]
        t[2] += sign * entry["events"]


def _short_name(url: str, directory: Path) -> str:
    """The file's path under the capture directory (else its URL's last nine parts)."""
    from urllib.parse import unquote, urlsplit

    path = unquote(urlsplit(url).path) if url.startswith("file:") else url
    root = str(directory.resolve()).rstrip("/") + "/"
    if path.startswith(root):
        return path[len(root):]
    return "/".join(path.replace("\\", "/").split("/")[-9:])


def _int(value, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default
