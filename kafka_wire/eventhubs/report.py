"""The compatibility report: every Event Hubs rule a client ran into.

Violations are kept per (namespace, rule, event hub, enforced): how often,
first and last time, the latest message and client id. Strict namespaces
refused the request (``enforced``); relaxed ones let it through and the entry
says what Event Hubs would have done. Entries go to
``DATA_DIR/compatibility-report.json`` (merged across restarts; a new kind of
violation is written at once, added at the file's end; repeats on a timer and at
shutdown, which rewrite it whole; a crash in the middle of an addition loses at most
that entry: the next start reads the file up to it and the next write makes it whole)
and to the log (the first of each kind, then at most once a minute with the count).
``kafka-wire report --data-dir DIR`` prints it.

An entry names its rule and its protocol-neutral ``reason`` (a
:class:`~kafka_wire.eventhubs.refusals.Refusal` value), and ``error_code``: the
Kafka error Event Hubs' Kafka endpoint answers for it, given by the translator
the broker passes in (``error_code_of``; the Kafka front end's table), since the
report says what a Kafka client would meet on Event Hubs.
"""
from __future__ import annotations

import json
import logging
import os
import textwrap
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from kafka_wire.eventhubs.refusals import Denial, Refusal

log = logging.getLogger(__name__)

__all__ = ["CompatibilityReport", "REPORT_FILE", "load", "format_report"]

REPORT_FILE = "compatibility-report.json"
_MAX_ENTRIES = 2000
_LOG_EVERY_MS = 60_000
_FLUSH_MS = 5_000
# How the file ends when it holds entries (json.dumps({"entries": [...]}, indent=1)):
# a new entry is written over it, followed by it again.
_TAIL = "\n ]\n}"
# How an entry ends there: no value holds a raw newline (escaped), nested ones are deeper.
_ENTRY_END = b"\n  }"


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds")


class CompatibilityReport:
    def __init__(self, data_dir: Path, clock,
                 error_code_of: Callable[[Denial], int | None] | None = None) -> None:
        self.path = Path(data_dir) / REPORT_FILE
        self.clock = clock
        self._error_code_of = error_code_of
        self.entries: dict[tuple, dict] = {}
        self._logged: dict[tuple, tuple[int, int]] = {}  # key -> (last log ms, count then)
        self._dirty = False
        self._timer = None
        # The file's size as this report last wrote it, when it ends with _TAIL; None
        # until then (written by another run, or by hand: the next write is whole).
        self._size: int | None = None
        for e in load(self.path):
            self.entries[self._key(e)] = e

    @staticmethod
    def _key(e: dict) -> tuple:
        return (e["namespace"], e["rule"], e.get("event_hub"), bool(e.get("enforced")))

    def record(self, namespace: str, rule: str, hub: str | None, message: str, *,
               enforced: bool, reason: Refusal | None = None, client_id: str | None = None,
               kind: str = "violation") -> None:
        now = self.clock.now_ms()
        key = (namespace, rule, hub, enforced)
        entry = self.entries.get(key)
        new = entry is None
        if new:
            if len(self.entries) >= _MAX_ENTRIES:
                return
            code = None
            if reason is not None and self._error_code_of is not None:
                code = self._error_code_of(Denial(reason, message, rule))
            entry = self.entries[key] = {
                "namespace": namespace, "rule": rule, "event_hub": hub, "enforced": enforced,
                "kind": kind, "count": 0, "first": _iso(now),
                "reason": reason.value if reason is not None else None, "error_code": code}
        entry["count"] += 1
        entry["last"] = _iso(now)
        entry["message"] = message
        entry["client_id"] = client_id
        self._log(key, entry, now)
        if new and self._append(entry):
            return
        self._dirty = True
        if new:
            self.flush()
        elif self._timer is None:
            self._timer = self.clock.call_later(_FLUSH_MS, self._on_timer)

    def record_fault(self, fired: dict, default_namespace: str) -> None:
        """An injected fault that fired (a FaultPlan listener; docs/faults.md): one entry per
        namespace, kind and hub, counted, with the latest target and client."""
        target = fired["target"]
        where = ", ".join(f"{k} {target[k]}" for k in ("partition", "consumer_group", "link",
                                                        "protocol") if k in target)
        self.record(target.get("namespace") or default_namespace, f"fault {fired['kind']}",
                    target.get("hub"), f"injected fault {fired['fault']} ({fired['kind']}) fired"
                    + (f" at {where}" if where else ""), enforced=True,
                    client_id=fired.get("client"), kind="fault")

    def _log(self, key: tuple, entry: dict, now: int) -> None:
        last = self._logged.get(key)
        if last is not None and now - last[0] < _LOG_EVERY_MS:
            return
        count = entry["count"] - (last[1] if last else 0)
        self._logged[key] = (now, entry["count"])
        if entry["kind"] != "violation":
            log.info("namespace %s: %s", entry["namespace"], entry["message"])
            return
        what = "refused" if entry["enforced"] else "allowed (relaxed mode), Event Hubs would refuse"
        hub = f" event hub {entry['event_hub']}" if entry["event_hub"] else ""
        log.log(logging.WARNING if entry["enforced"] else logging.INFO,
                "Event Hubs compatibility [%s] namespace %s%s: %s — %s%s", entry["rule"],
                entry["namespace"], hub, entry["message"], what,
                f" ({count} times)" if count > 1 else "")

    def _append(self, entry: dict) -> bool:
        """Write new ``entry`` at the file's end, in one write whatever the report holds
        (a relaxed namespace past its tier's hub limit makes an entry per new hub: a
        rewrite would cost the whole report at each). False when the file is not as this
        report last wrote it, or cannot be written: the caller rewrites it whole."""
        size, self._size = self._size, None  # (kept again only when the write is whole)
        if size is None:
            return False
        block = (",\n" + textwrap.indent(json.dumps(entry, indent=1), "  ") + _TAIL).encode()
        at = size - len(_TAIL)
        try:
            fd = os.open(self.path, os.O_RDWR)
        except OSError:
            return False
        try:
            if os.fstat(fd).st_size != size or os.pread(fd, len(_TAIL), at) != _TAIL.encode():
                return False  # (changed by another hand)
            try:
                # One write, over the tail and past it: the file is whole before and after
                # (cut by a crash within it, it ends at an entry's end: see _recovered).
                written = os.pwrite(fd, block, at)
            except OSError:
                written = -1
            if written != len(block):  # (a full disk): the old end back, in the old blocks
                os.ftruncate(fd, size)
                os.pwrite(fd, _TAIL.encode(), at)
                return False
        except OSError:
            return False
        finally:
            os.close(fd)
        self._size = size + len(block) - len(_TAIL)
        return True

    def _on_timer(self) -> None:
        self._timer = None
        self.flush()

    def flush(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        data = sorted(self.entries.values(), key=_order)
        tmp = self.path.with_suffix(".tmp")
        text = json.dumps({"entries": data}, indent=1)  # (ASCII: a character is a byte)
        self._size = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text, encoding="ascii")
            os.replace(tmp, self.path)
        except OSError as exc:
            log.error("cannot write the compatibility report %s: %s", self.path, exc)
            return
        if text.endswith(_TAIL):
            self._size = len(text)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.flush()


def load(path: Path) -> list[dict]:
    path = Path(path)
    if path.is_dir():
        path = path / REPORT_FILE
    for attempt in range(2):
        raw = None
        try:
            raw = path.read_bytes()
            data = json.loads(raw.decode())
            break
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            # Once more: a read can meet a new entry being written at the end (one write,
            # done at once), which the second finds whole.
            error = exc
    else:
        data = _recovered(path, raw) if raw is not None else None
        if data is None:
            log.warning("ignoring unreadable compatibility report %s: %s", path, error)
            return []
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        log.warning("ignoring compatibility report %s: not {\"entries\": [...]}", path)
        return []
    entries = [e for e in entries if isinstance(e, dict) and "rule" in e and "namespace" in e]
    # New entries are added at the end; the file's whole rewrites keep this order.
    return sorted(entries, key=_order)


def _recovered(path: Path, raw: bytes) -> dict | None:
    """The report as it was before the append a crash cut (a kill or a power loss in
    ``_append``'s write), or None when ``raw`` is not the report's own writing so cut.

    The file is then the report up to the end of an entry, followed by the cut write: the
    new entry's first bytes, or the whole entry without all of its tail (kept), or, after
    a power loss, the old tail with the entry's later bytes or zeros past it. So the end of
    one of the last two entries, with the tail put back, is the report before the cut. Only
    a prefix that ``json.dumps(..., indent=1)`` writes again byte for byte counts: a file
    edited by hand is not cut back to some entry of its."""
    end = len(raw)
    for _ in range(2):
        end = raw.rfind(_ENTRY_END, 0, end)
        if end < 0:
            return None
        text = raw[:end + len(_ENTRY_END)] + _TAIL.encode()
        try:
            data = json.loads(text.decode("ascii"))
        except ValueError:
            continue
        if (json.dumps(data, indent=1).encode() != text or not isinstance(data, dict)
                or not isinstance(data.get("entries"), list)):
            continue
        cut = raw[end + len(_ENTRY_END):]
        if _TAIL.encode().startswith(cut):  # (only the tail was cut: no entry lost)
            log.warning("compatibility report %s: a crash cut its end; read all its %d entries",
                        path, len(data["entries"]))
        else:
            log.warning("compatibility report %s: a crash cut the entry being added; dropped "
                        "it, read the %d whole entries before it", path, len(data["entries"]))
        return data
    return None


def _order(e: dict) -> tuple:
    return (str(e.get("namespace")), str(e["rule"]), str(e.get("event_hub") or ""))


def format_report(entries: list[dict]) -> str:
    if not entries:
        return "No Event Hubs compatibility issues recorded.\n"
    lines = []
    for ns in sorted({e["namespace"] for e in entries}):
        lines.append(f"Namespace {ns}")
        for e in sorted((e for e in entries if e["namespace"] == ns),
                        key=lambda e: (e.get("kind") != "violation", e["rule"],
                                       e.get("event_hub") or "")):
            if e.get("kind") == "fault":
                status = "injected fault fired"
            elif e.get("kind", "violation") != "violation":
                status = "note"
            else:
                status = "REFUSED" if e.get("enforced") else "would be refused on Event Hubs"
            hub = f" [{e['event_hub']}]" if e.get("event_hub") else ""
            code = f", error {e['error_code']}" if e.get("error_code") else ""
            lines.append(f"  {e['rule']}{hub}: {status}{code}, {e['count']}x "
                         f"({e.get('first')} .. {e.get('last')})")
            lines.append(f"      {e.get('message')}")
    return "\n".join(lines) + "\n"
