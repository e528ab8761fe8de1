"""The history checker (kafka_wire/testing/history.py) catches a lost, a doubled and a
reordered event in histories hypothesis builds, and passes clean ones: the soak's
verdict is only as good as this."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_wire.testing.history import History

HUB = "chaos"


@st.composite
def histories(draw):
    """A clean run: producers send in order (some sends refused once and re-sent, and
    some of those refusals stored anyway), every stored event read once by two groups."""
    producers = draw(st.integers(1, 3))
    partitions = draw(st.integers(1, 3))
    n = draw(st.integers(2, 40))
    events = []  # (producer, payload, partition, attempts stored)
    for i in range(n):
        producer = f"p{draw(st.integers(0, producers - 1))}"
        partition = draw(st.integers(0, partitions - 1))
        resent = draw(st.booleans()) and draw(st.integers(0, 3)) == 0
        first_stored = resent and draw(st.booleans())  # the refused send was stored anyway
        events.append((producer, f"{producer}-{i}", partition, resent, first_stored))
    return events, partitions


def build(events, partitions, acked_offsets: bool = True):
    """Replay ``events`` into a History; returns it and the log (partition -> payloads)."""
    h = History()
    log: dict[int, list[str]] = {p: [] for p in range(partitions)}
    for producer, payload, partition, resent, first_stored in events:
        h.sent(producer, payload)
        if resent:
            if first_stored:
                log[partition].append(payload)
            h.sent(producer, payload)
        log[partition].append(payload)
        h.acked(payload, HUB, partition, len(log[partition]) - 1 if acked_offsets else None)
    return h, log


def read_all(h: History, log, group: str, skip=None, order=None) -> None:
    for partition, payloads in log.items():
        positions = list(range(len(payloads)))
        if order is not None:
            positions = order(partition, positions)
        for pos in positions:
            if skip is not None and skip(partition, pos):
                continue
            h.read(group, HUB, partition, pos, payloads[pos])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.booleans())
def test_a_clean_history_passes_and_counts_re_sends(case, acked_offsets):
    events, partitions = case
    h, log = build(events, partitions, acked_offsets)
    read_all(h, log, "g1")
    read_all(h, log, "g2")
    v = h.check()
    assert v.ok, v.explain()
    assert v.acknowledged == len(events)
    assert v.lost == {"g1": [], "g2": []}
    assert v.stored_twice == []
    assert v.resent == sum(1 for e in events if e[3] and e[4])
    assert v.redelivered == {"g1": 0, "g2": 0}


@settings(max_examples=150, deadline=None)
@given(histories(), st.data())
def test_a_lost_event_is_caught(case, data):
    events, partitions = case
    h, log = build(events, partitions)
    victim = data.draw(st.sampled_from(events))[1]
    read_all(h, log, "g1")
    read_all(h, log, "g2", skip=lambda p, pos: log[p][pos] == victim)
    v = h.check()
    assert not v.ok
    assert v.lost == {"g1": [], "g2": [victim]}


@settings(max_examples=150, deadline=None)
@given(histories(), st.data())
def test_an_event_stored_twice_is_caught_and_a_redelivery_is_only_counted(case, data):
    events, partitions = case
    h, log = build(events, partitions)
    once = [e for e in events if not e[3]]
    if not once:
        return
    producer, payload, partition, _, _ = data.draw(st.sampled_from(once))
    read_all(h, log, "g1")
    # The consumer reads one position again (redelivery): counted, not a failure.
    pos = log[partition].index(payload)
    h.read("g1", HUB, partition, pos, payload)
    v = h.check()
    assert v.ok and v.redelivered["g1"] == 1 and v.stored_twice == [], v.explain()
    # The same payload at a second position, though the application sent it once: doubled.
    log[partition].append(payload)
    h.read("g1", HUB, partition, len(log[partition]) - 1, payload)
    v = h.check()
    assert not v.ok
    assert v.stored_twice == [payload]


@settings(max_examples=150, deadline=None)
@given(histories(), st.data())
def test_events_stored_out_of_the_order_sent_are_caught(case, data):
    events, partitions = case
    h, log = build(events, partitions, acked_offsets=False)
    # Two single-copy events of one producer in one partition, swapped in the log.
    pairs = []
    for p, payloads in log.items():
        for i in range(len(payloads)):
            for j in range(i + 1, len(payloads)):
                a, b = payloads[i], payloads[j]
                if a.split("-")[0] == b.split("-")[0] and payloads.count(a) == 1 \
                        and payloads.count(b) == 1:
                    pairs.append((p, i, j))
    if not pairs:
        return
    p, i, j = data.draw(st.sampled_from(pairs))
    log[p][i], log[p][j] = log[p][j], log[p][i]
    read_all(h, log, "g1")
    v = h.check()
    assert not v.ok
    assert v.out_of_order["g1"], v.explain()


@settings(max_examples=150, deadline=None)
@given(histories(), st.data())
def test_a_consumer_that_reads_a_partition_out_of_order_is_caught(case, data):
    events, partitions = case
    h, log = build(events, partitions)
    candidates = [p for p, payloads in log.items() if len(payloads) >= 2]
    if not candidates:
        return
    target = data.draw(st.sampled_from(candidates))
    k = data.draw(st.integers(0, len(log[target]) - 2))

    def swapped(partition, positions):
        if partition == target:
            positions[k], positions[k + 1] = positions[k + 1], positions[k]
        return positions
    read_all(h, log, "g1", order=swapped)
    v = h.check()
    assert not v.ok
    assert any(f"position {k} first read after {k + 1}" in d for d in v.out_of_order["g1"])


def test_an_event_read_at_another_offset_than_acknowledged_is_misplaced():
    h = History()
    h.sent("p", "a")
    h.acked("a", HUB, 0, 5)
    h.read("g", HUB, 0, 6, "a")
    v = h.check()
    assert not v.ok and len(v.misplaced) == 1
