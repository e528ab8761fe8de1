"""The geo offset parser (outside input: SDK selectors and checkpoints): round trip,
malformed text gets OffsetSyntaxError with a clear message and never another
exception, and the history check refuses what a promotion lost."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

# Seeded: the same examples every run (the rules: no randomness that is not seeded).
settings.register_profile("geo-offsets", derandomize=True, deadline=None)
DERANDOMIZED = settings.get_profile("geo-offsets")

from kafka_wire.eventhubs.geo_offsets import (GeoOffset, OffsetSyntaxError, StaleOffset, check,
                                             format_offset, is_legacy, parse_offset, parse_sequence,
                                             refusal, segment_of)

LONG = 2 ** 63 - 1
segments = st.integers(-1, LONG)
positions = st.integers(0, LONG)


@DERANDOMIZED
@given(segments, positions)
def test_round_trip(segment, position):
    text = format_offset(segment, position)
    assert parse_offset(text) == GeoOffset(segment, position)
    assert parse_sequence(text) == GeoOffset(segment, position)
    assert not is_legacy(text)


@DERANDOMIZED
@given(st.integers(0, LONG))
def test_plain_numbers_are_legacy_offsets_and_plain_sequence_numbers(n):
    assert is_legacy(str(n))
    assert parse_sequence(str(n)) == GeoOffset(-1, n)
    with pytest.raises(OffsetSyntaxError):
        parse_offset(str(n))


@settings(DERANDOMIZED, max_examples=1500)
@given(st.one_of(st.text(max_size=80), st.binary(max_size=40).map(lambda b: b.decode("latin-1")),
                 st.from_regex(r"-?[0-9]{0,22}:-?[0-9]{0,22}", fullmatch=True),
                 st.text(alphabet="0123456789:-+ \t٣²", max_size=30)))
def test_any_text_parses_or_raises_the_syntax_error(text):
    try:
        got = parse_offset(text)
    except OffsetSyntaxError as exc:
        assert "SEGMENT:POSITION" in str(exc)
        assert len(str(exc)) < 300          # a huge input is not echoed whole
        return
    # what parses is two integers (the position may carry leading zeros, as in
    # Java's example '10:0030') that format back to the same offset
    assert parse_offset(format_offset(*got)) == got
    assert [int(p) for p in text.split(":")] == list(got)
    assert -1 <= got.segment <= LONG and 0 <= got.position <= LONG


@pytest.mark.parametrize("text", ["", ":", "1:", ":1", "1:2:3", "01:2", "-2:5", "1:-5", " 1:2",
                                  "1:2 ", "1 :2", "+1:2", "1:9223372036854775808",
                                  "9223372036854775808:1", "٣:1", "1:²", "1:2\n", "x" * 10_000])
def test_malformed(text):
    with pytest.raises(OffsetSyntaxError):
        parse_offset(text)


@pytest.mark.parametrize("value", [None, 5, b"1:2", 1.5])
def test_not_a_string(value):
    with pytest.raises(OffsetSyntaxError):
        parse_offset(value)


def test_refusal_quotes_the_offset_in_the_services_words():
    assert refusal("0", "why").startswith("The supplied offset '0' is invalid: why")
    assert len(refusal("9" * 10_000, "why")) < 200


# A partition whose history is: segment 0 from sequence 0, segment 1 (a forced
# promotion that kept events 0..6 of segment 0) from sequence 7.
STARTS = [(0, 0), (1, 7)]


def test_history_check():
    assert check(STARTS, GeoOffset(0, 6), end=12) == 6
    assert check(STARTS, GeoOffset(1, 7), end=12) == 7
    assert check(STARTS, GeoOffset(1, 12), end=12) == 12
    assert check(STARTS, GeoOffset(-1, 40), end=12) == 40     # caller clamps
    with pytest.raises(StaleOffset, match="ended at sequence number 6"):
        check(STARTS, GeoOffset(0, 7), end=12)               # lost in the promotion
    with pytest.raises(StaleOffset, match="does not hold"):
        check(STARTS, GeoOffset(2, 0), end=12)
    with pytest.raises(StaleOffset, match="before replication segment 1"):
        check(STARTS, GeoOffset(1, 3), end=12)
    with pytest.raises(StaleOffset, match="beyond the last event"):
        check(STARTS, GeoOffset(1, 13), end=12)


@settings(DERANDOMIZED, max_examples=500)
@given(st.lists(st.integers(1, 50), min_size=1, max_size=6), st.integers(0, 400),
       st.integers(-1, 8), st.integers(0, 500))
def test_history_check_agrees_with_segment_of(gaps, extra, segment, position):
    """An event the history holds is accepted under the segment it was written in
    (or -1) and refused under any other; nothing raises anything but StaleOffset."""
    starts, first = [], 0
    for seg, gap in enumerate(gaps):
        starts.append((seg, first))
        first += gap
    end = starts[-1][1] + extra
    try:
        got = check(starts, GeoOffset(segment, position), end)
    except StaleOffset:
        assert segment != -1
        assert position >= end or segment_of(starts, position) != segment
        return
    assert got == position
    assert segment == -1 or position >= end or segment_of(starts, position) == segment
