"""REST send's ``?timeout=`` parser: ASCII digits naming 0 to an hour of seconds, as
ms; the default when absent; None (a 400) for any other text."""
from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from kafka_wire.rest.send import DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S, request_timeout_ms


@given(st.integers(min_value=0, max_value=MAX_TIMEOUT_S))
def test_every_whole_second_up_to_an_hour_is_read(seconds):
    assert request_timeout_ms(str(seconds)) == seconds * 1000


@given(st.text(max_size=60))
@example("-1")
@example("3601")
@example(" 1")
@example("\u0661")
@example("9" * 5000)
def test_any_other_text_is_refused(text):
    got = request_timeout_ms(text)
    if got is None:
        return
    assert text.isascii() and text.isdigit() and 0 <= int(text) <= MAX_TIMEOUT_S
    assert got == int(text) * 1000


def test_no_timeout_is_the_default():
    assert request_timeout_ms(None) == DEFAULT_TIMEOUT_S * 1000
