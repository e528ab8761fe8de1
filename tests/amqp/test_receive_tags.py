"""A receiver's delivery tags go to proton as one buffer and an array of pn_bytes_t
(consume._tag_structs) when they have one length, as (size, pointer) tuples when
not: either way proton must hold exactly the tags named, in order, whatever the
numbers (across a digit more) and however many."""
from __future__ import annotations

from itertools import repeat

from cproton import ffi, lib
from hypothesis import given, settings
from hypothesis import strategies as st
from proton import Connection

from kafka_wire.amqp.consume import _tag_structs

from .conftest import held_tags


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.integers(0, 10**12), st.integers(1, 300), st.booleans())
def test_proton_holds_the_tags_named_in_order(first, n, near_a_digit_more):
    if near_a_digit_more:  # numbers that gain a digit inside the flow (the tuples' path)
        first = max(10 ** len(str(first)) - n // 2 - 1, 0)  # (tag numbers start at 1)
    names = [b"e%d" % t for t in range(first + 1, first + n + 1)]
    link = Connection().session().sender("s")
    structs, held = _tag_structs(names)
    deliveries = list(map(lib.pn_delivery, repeat(link._impl, n), structs))
    del structs, held
    assert held_tags(deliveries) == names
    assert held_tags([lib.pn_link_current(link._impl)]) == names[:1]  # the first not yet advanced


def test_one_length_takes_the_array_and_a_digit_more_the_tuples():
    same, held = _tag_structs([b"e98", b"e99"])
    assert held == b"e98e99" and ffi.typeof(same) == ffi.typeof("pn_bytes_t[]")
    mixed, held = _tag_structs([b"e99", b"e100"])
    assert held is None and [size for size, _ in mixed] == [3, 4]
