"""A crash (kill -9, a power loss) in the middle of the compatibility report's append of a new
entry leaves the file cut: the next start reads back every entry whose append had completed,
loses at most the entry being written, says so in one warning, and the next write makes the
file whole again. A file spoiled some other way (by hand) is still ignored with a warning."""
from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafka_wire.eventhubs.report import REPORT_FILE, CompatibilityReport, load


class _Clock:
    """New entries only: no timer is ever asked for."""
    now = 1_700_000_000_000

    def now_ms(self) -> int:
        return self.now


_TAIL = b"\n ]\n}"
_SHM = Path("/dev/shm")
# Pieces that look like the file's own structure, quotes, escapes and characters past ASCII.
_tricky = st.sampled_from(['"', "\\", "\n", "\n  }", ",\n  {", "\n ]\n}", "}", "é", "\u2028",
                           "\U0001f600", "\x00"])
_text = st.lists(st.one_of(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)),
                                   max_size=6), _tricky), max_size=4).map("".join)
_entries = st.lists(st.tuples(st.sampled_from(["ns1", "ns\"2\n"]), _text, st.one_of(st.none(), _text),
                              _text, st.one_of(st.none(), _text), st.booleans()),
                    min_size=2, max_size=5, unique_by=lambda t: (t[0], t[1], t[2], t[5]))


def _place(e: dict) -> tuple:
    return e["namespace"], e["rule"], e.get("event_hub") or ""


def _held(report: CompatibilityReport) -> list[dict]:
    return sorted(report.entries.values(), key=_place)


def _parses(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def _cut_images(old: bytes, block: bytes, at: int):
    """(how, k, file bytes) for a crash after k bytes of ``block`` written at ``at`` over
    ``old``'s end: a kill leaves the write's first k bytes; a power loss can also leave the
    file's new size with zeros past them, or the bytes past the old end without those over
    the old tail (other pages)."""
    for k in range(len(block) + 1):
        killed = old[:at] + block[:k] + old[at + k:]
        yield "killed", k, killed
        yield "zeros", k, killed + bytes(at + len(block) - len(killed))
        if k <= len(block) - (len(old) - at):
            yield "old tail kept", k, old + block[len(old) - at:][:k]


@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=_entries)
def test_a_crash_in_an_append_loses_at_most_the_entry_being_written(records, caplog):
    # (in memory when it can: some thousand files written an example)
    root = Path(tempfile.mkdtemp(prefix="report-crash-", dir=_SHM if _SHM.is_dir() else None))
    try:
        path = root / REPORT_FILE
        clock = _Clock()
        report = CompatibilityReport(root, clock)
        for namespace, rule, hub, message, client_id, enforced in records[:-1]:
            clock.now += 1
            report.record(namespace, rule, hub, message, enforced=enforced, client_id=client_id)
        before, old = _held(report), path.read_bytes()
        namespace, rule, hub, message, client_id, enforced = records[-1]
        report.record(namespace, rule, hub, message, enforced=enforced, client_id=client_id)
        after, new = _held(report), path.read_bytes()
        at = len(old) - len(_TAIL)
        assert old.endswith(_TAIL) and new[:at] == old[:at], "the last entry was not appended"
        block = new[at:]
        assert load(root) == after

        with caplog.at_level(logging.WARNING, logger="kafka_wire.eventhubs.report"):
            for how, k, image in _cut_images(old, block, at):
                path.write_bytes(image)
                caplog.clear()
                read = load(root)
                where = f"{how}, {k} of {len(block)} bytes written"
                if image in (old, new):
                    assert read == (before if image == old else after), where
                    assert not caplog.records, where
                    continue
                assert read in (before, after), f"{where}: an entry written before was lost"
                if how == "killed" and k == len(block):
                    assert read == after, where
                if _parses(image):  # (old and a new line past it)
                    assert not caplog.records, where
                    continue
                assert [r.levelno for r in caplog.records] == [logging.WARNING], where
                assert "a crash cut" in caplog.text, where
                if how != "killed":
                    continue
                # the next write makes the file whole again, with what was read and the new entry
                again = CompatibilityReport(root, clock)
                again.record("ns-next", "after-the-crash", None, "x", enforced=True)
                whole = json.loads(path.read_text())["entries"]
                assert sorted(whole, key=_place) == _held(again), where
                assert len(whole) == len(read) + 1, where
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _report_text(n: int) -> str:
    return json.dumps({"entries": [{"namespace": "ns", "rule": "compression", "event_hub": f"h{i}",
                                    "enforced": True, "count": 1, "message": "lz4"}
                                   for i in range(n)]}, indent=1)


@pytest.mark.parametrize("text", [
    "{not json",
    "[1, 2]",
    '{"entries": 5}',
    _report_text(3).replace('"h1"', '"h1'),  # an entry in the middle spoiled by hand
    _report_text(3).replace('"h0"', '"h0"\n  }\n  }'),
    json.dumps(json.loads(_report_text(3)), indent=2)[:-20],  # not the report's writing, cut
], ids=["not json", "a list", "entries not a list", "middle entry spoiled", "braces added",
        "indent 2 cut"])
def test_a_file_spoiled_otherwise_is_ignored_with_a_warning(tmp_path, caplog, text):
    (tmp_path / REPORT_FILE).write_text(text)
    with caplog.at_level(logging.WARNING, logger="kafka_wire.eventhubs.report"):
        read = load(tmp_path)
        report = CompatibilityReport(tmp_path, _Clock())  # starts, on any file
    assert read == [] and report.entries == {}
    assert "ignoring" in caplog.text
    report.record("ns", "compression", "a", "lz4", enforced=True)  # written whole again
    assert [e["event_hub"] for e in json.loads((tmp_path / REPORT_FILE).read_text())["entries"]] == ["a"]
