"""PartitionReader's aborted-transaction lookup (Capture's reader of the broker's log):
a bisection per producer that answers as the walk of every entry it replaced."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_wire.log.reader import _Aborted

# Per producer, transactions one after another (they never overlap): (gap, length) pairs.
spans = st.dictionaries(st.integers(0, 5), st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)),
                                                    max_size=12), max_size=6)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(spans=spans, probes=st.lists(st.tuples(st.integers(0, 6), st.integers(-5, 600)), max_size=60))
def test_the_lookup_answers_as_the_walk_of_every_entry(spans, probes):
    entries = []
    for pid, steps in spans.items():
        at = 0
        for gap, length in steps:
            first = at + gap
            entries.append((pid, first, first + length))
            at = first + length + 1
    entries.reverse()  # (the index lists them by segment, not by producer)
    aborted = _Aborted(entries)
    for pid, offset in probes:
        assert aborted.holds(pid, offset) == any(
            p == pid and first <= offset <= last for p, first, last in entries)
