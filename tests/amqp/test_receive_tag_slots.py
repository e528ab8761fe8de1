"""A connection writes each flow's run tags into one buffer it keeps (consume.RunTagSlots)
and hands proton slices of one pn_bytes_t array made once: proton must hold exactly the
tags named, in order, for every flow, and keep them when later flows write over the
buffer or it grows."""
from __future__ import annotations

from itertools import repeat

from cproton import lib
from hypothesis import given, settings
from hypothesis import strategies as st
from proton import Connection

from kafka_wire.amqp.consume import RunTagSlots
from kafka_wire.amqp.frames import run_tag

from .conftest import held_tags


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.integers(0, 2**59), st.lists(st.integers(1, 1200), min_size=1, max_size=6))
def test_proton_holds_every_flows_tags_in_order(first, flows):
    link = Connection().session().sender("s")
    slots = RunTagSlots()
    made = []
    for n in flows:
        deliveries = list(map(lib.pn_delivery, repeat(link._impl, n), slots.tags(first, n)))
        made.append((deliveries, [run_tag(t) for t in range(first, first + n)]))
        first += n
        for _ in range(n):
            lib.pn_link_advance(link._impl)
    for deliveries, names in made:  # (earlier flows' tags outlive the buffer's reuse)
        assert held_tags(deliveries) == names
    assert slots.size >= max(flows)
