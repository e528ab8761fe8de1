"""The compatibility report writes a new entry at once by adding it at the file's end (one
write, whatever the report holds: a relaxed namespace past its tier's hub limit makes an
entry per new hub), not by rewriting the whole file; repeats wait for the timer's or the
shutdown's whole rewrite. After any sequence of records, what ``load`` reads from the file
is what the report holds, and a restart over the file reads the same."""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from kafka_wire.eventhubs.refusals import Refusal
from kafka_wire.eventhubs.report import REPORT_FILE, CompatibilityReport, load


class _Clock:
    """A clock whose timers run only when the test says so."""
    def __init__(self) -> None:
        self.now = 1_700_000_000_000
        self.timers: list = []

    def now_ms(self) -> int:
        return self.now

    def call_later(self, delay_ms, callback):
        self.timers.append(callback)
        return _Timer(self, callback)

    def fire(self) -> None:
        timers, self.timers = self.timers, []
        for callback in timers:
            callback()


class _Timer:
    def __init__(self, clock: _Clock, callback) -> None:
        self.clock, self.callback = clock, callback

    def cancel(self) -> None:
        if self.callback in self.clock.timers:
            self.clock.timers.remove(self.callback)


def _held(report: CompatibilityReport) -> list[dict]:
    return sorted(report.entries.values(),
                  key=lambda e: (e["namespace"], e["rule"], e.get("event_hub") or ""))


def test_new_entries_are_added_at_the_end_not_rewritten(tmp_path):
    clock = _Clock()
    report = CompatibilityReport(tmp_path, clock)
    path = tmp_path / REPORT_FILE
    report.record("ns", "hubs-per-namespace", "hub-0000", "past the limit", enforced=False,
                  reason=Refusal.LIMIT)
    first = path.stat().st_ino  # the first of a run is written whole (its start is not known)
    for i in range(1, 300):
        clock.now += 1
        report.record("ns", "hubs-per-namespace", f"hub-{i:04d}", "past the limit", enforced=False,
                      reason=Refusal.LIMIT)
        assert path.stat().st_ino == first, f"entry {i}: the file was rewritten whole"
        assert [e["event_hub"] for e in load(tmp_path)][-1] == f"hub-{i:04d}", "not written at once"
    assert not clock.timers, "a new entry waits for no timer"
    assert load(tmp_path) == _held(report)
    report.record("ns", "hubs-per-namespace", "hub-0007", "again", enforced=False)  # a repeat
    assert load(tmp_path)[7]["count"] == 1 and len(clock.timers) == 1  # ...waits for the timer
    clock.fire()
    assert load(tmp_path)[7]["count"] == 2 and load(tmp_path) == _held(report)
    report.close()


def test_a_file_changed_by_another_hand_is_rewritten_whole(tmp_path):
    report = CompatibilityReport(tmp_path, _Clock())
    report.record("ns", "compression", "a", "lz4", enforced=True)
    (tmp_path / REPORT_FILE).write_text(json.dumps({"entries": []}))  # not as the report wrote it
    report.record("ns", "compression", "b", "lz4", enforced=True)
    assert [e["event_hub"] for e in load(tmp_path)] == ["a", "b"]
    report.record("ns", "compression", "c", "lz4", enforced=True)  # (appended again)
    assert [e["event_hub"] for e in load(tmp_path)] == ["a", "b", "c"]


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_records = st.lists(st.tuples(st.sampled_from(["ns1", "ns2"]),
                              st.sampled_from(["compression", "hubs-per-namespace", "frame-size"]),
                              st.one_of(st.none(), _text), _text, st.booleans(),
                              st.sampled_from(["record", "fire", "close", "restart"])),
                    min_size=1, max_size=40)


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_records)
def test_the_file_reads_back_as_the_report_after_any_records(steps):
    root = Path(tempfile.mkdtemp(prefix="report-appends-"))
    try:
        clock = _Clock()
        report = CompatibilityReport(root, clock)
        for namespace, rule, hub, message, enforced, then in steps:
            clock.now += 1
            key = (namespace, rule, hub, enforced)
            is_new = key not in report.entries
            report.record(namespace, rule, hub, message, enforced=enforced, client_id=message)
            if is_new:
                # a new entry is in the file at once, as recorded
                assert report.entries[key] in load(root)
            if then == "fire":
                clock.fire()
            elif then == "close":
                report.close()
            elif then == "restart":
                report.close()
                report = CompatibilityReport(root, clock)
            if then != "record" or not clock.timers:  # nothing waits: the file is the report
                assert load(root) == _held(report)
        report.close()
        assert load(root) == _held(report)
        assert load(root) == _held(CompatibilityReport(root, _Clock()))
    finally:
        shutil.rmtree(root, ignore_errors=True)
